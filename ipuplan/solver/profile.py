"""Where a plan's modeled cycles go: compute, exchange and sync, by op kind and by op (the same codelet
costs the objective sums, split as the codelets and the exchange model report them)."""

from __future__ import annotations

from collections import defaultdict

from ..codelets import Cost
from .problem import Problem


def _op_of(p: Problem, lit: tuple) -> str:
    return lit[1] if lit[0] == "impl" else p.edges[lit[1]].consumer


def breakdown(p: Problem, chosen: set[tuple], top: int = 5) -> dict:
    """Totals, per op kind, and the `top` ops whose one execution (both supersteps) models slowest."""
    t = p.target
    if not hasattr(p.sched, "ops"):  # a problem built by hand, without a schedule: totals only
        c = sum((p.parts[lit] for lit in chosen if lit in p.parts), Cost()) + Cost(sync=p.constant_cycles)
        return {"compute": c.compute, "exchange": c.exchange, "sync": c.sync, "by_kind": {}, "slowest_ops": []}
    per_op: dict[str, Cost] = defaultdict(Cost)
    for lit in chosen:
        if lit in p.parts:
            per_op[_op_of(p, lit)] += p.parts[lit]
    for sop in p.sched.ops:  # per-superstep launch and sync, both steps of every op
        per_op[sop.key] += Cost(sync=sop.trips * (t.compute_set_cycles + t.exchange_sync_cycles))
    total, by_kind = Cost(), defaultdict(Cost)
    for op, c in per_op.items():
        total += c
        by_kind[p.sched.op(op).op.kind.value] += c
    as_dict = lambda c: {"compute": c.compute, "exchange": c.exchange, "sync": c.sync, "total": c.total}
    trips = {s.key: s.trips for s in p.sched.ops}
    slow = sorted(per_op, key=lambda op: (-per_op[op].total // trips[op], op))[:top]
    return {"compute": total.compute, "exchange": total.exchange, "sync": total.sync,
            "by_kind": {k: as_dict(c) for k, c in sorted(by_kind.items(), key=lambda kv: -kv[1].total)},
            "slowest_ops": [{"op": op, "runs": trips[op], "per_run": per_op[op].total // trips[op],
                             **as_dict(per_op[op])} for op in slow]}
