"""Where a plan's modeled cycles go: compute, exchange and sync per superstep, by op kind, and the slowest
supersteps (the same codelet costs the objective sums, split by the superstep that spends them)."""

from __future__ import annotations

from collections import defaultdict

from ..codelets import Cost
from .problem import Problem


def step_costs(p: Problem, chosen: set[tuple]) -> list[Cost]:
    """Each schedule step's cycles in one run (a Repeat body step: one iteration). An op's exchange step holds
    its edges' transfers, its parameter staging and the superstep's sync; its compute step the codelets,
    the internal rounds with their syncs, the carry copy and the compute set's sync. Summed over the program
    (body steps `trips` times) they are the plan's modeled cycles."""
    t = p.target
    steps = [Cost() for _ in p.sched.steps]
    per_run = lambda c, n: Cost(c.compute // n, c.exchange // n, c.sync // n, c.beyond // n)
    for e in p.edges:
        sop = p.sched.op(e.consumer)
        for pr in e.pairs:
            if pr.lit in chosen and pr.lit in p.parts:  # a read in place costs nothing
                steps[sop.xstep] += per_run(p.parts[pr.lit], sop.trips)
    for sop in p.sched.ops:
        lit = next(lt for lt in chosen if lt[0] == "impl" and lt[1] == sop.key)
        stage = p.staging.get(lit, Cost())
        steps[sop.xstep] += per_run(stage, sop.trips) + Cost(sync=t.exchange_sync_cycles)
        rest = p.parts[lit]
        steps[sop.cstep] += per_run(Cost(rest.compute - stage.compute, rest.exchange - stage.exchange,
                                         rest.sync - stage.sync, rest.beyond - stage.beyond), sop.trips) + \
            Cost(sync=t.compute_set_cycles)
    return steps


def breakdown(p: Problem, chosen: set[tuple], top: int = 5) -> dict:
    """Totals, per op kind, and the `top` supersteps whose one run models slowest."""
    t = p.target
    if not hasattr(p.sched, "ops"):  # a problem built by hand, without a schedule: totals only
        c = sum((p.parts[lit] for lit in chosen if lit in p.parts), Cost()) + Cost(sync=p.constant_cycles)
        return {"compute": c.compute, "exchange": c.exchange, "sync": c.sync, "exchange_beyond_bytes": c.beyond,
                "by_kind": {}, "slowest_steps": []}
    steps = step_costs(p, chosen)
    trips = [1] * len(steps)
    kind = [""] * len(steps)
    for sop in p.sched.ops:
        for s in (sop.xstep, sop.cstep):
            trips[s], kind[s] = sop.trips, sop.op.kind.value
    total, by_kind = Cost(), defaultdict(Cost)
    for s, c in enumerate(steps):
        total += c * trips[s]
        by_kind[kind[s]] += c * trips[s]
    as_dict = lambda c: {"compute": c.compute, "exchange": c.exchange, "sync": c.sync, "total": c.total}
    slow = sorted(range(len(steps)), key=lambda s: (-steps[s].total, s))[:top]
    assert total.total == sum(p.cycles[lit] for lit in chosen if lit in p.cycles) + p.constant_cycles, \
        "the supersteps carry exactly the objective's costs"
    # every exchange superstep (an op's, a relay's second phase, an internal round) syncs once; the rest of
    # the sync is the compute sets'
    compute_runs = sum(sop.trips for sop in p.sched.ops)
    xsync = total.sync - compute_runs * t.compute_set_cycles
    return {"compute": total.compute, "exchange": total.exchange, "sync": total.sync,
            "exchange_beyond_bytes": total.beyond,
            "exchange_phases": {"count": xsync // t.exchange_sync_cycles if t.exchange_sync_cycles else None,
                                "cycles": total.exchange + xsync},
            "by_kind": {k: as_dict(c) for k, c in sorted(by_kind.items(), key=lambda kv: -kv[1].total)},
            "slowest_steps": [{"step": p.sched.steps[s], "runs": trips[s], "per_run": steps[s].total,
                               **as_dict(steps[s])} for s in slow]}
