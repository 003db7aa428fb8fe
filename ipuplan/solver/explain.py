"""Why a problem does not fit: a minimal core of named constraints, and the least-overflowing plan's
contributors in bytes on its worst tile, the deficit, and the cheapest alternative of each choice."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np
from ortools.sat.python import cp_model

from .model import Guard, ModelCtx
from .problem import Problem
from .rounds import build_model, chosen_literals, exchange_usage, solve_rounds, tile_usage
from .shrink import cpsat_conflicts, shrink

QUICK = 2.0  # deterministic seconds for one worker before the interleaved workers: a small problem's least overflow
# is proven optimal within it (1.6 at most, bench/explain_workers.py), where two workers take 2-4 times as long;
# a full-size one needs the interleaved workers' heuristics (one worker alone overflowed 17.8 MB, two 158 KB)


def minimize_core(ctx: ModelCtx, core: list[Guard], sub, parent=None) -> tuple[list[Guard], bool]:
    """Shrink a core: trim to CP-SAT's sufficient assumptions, then delete chunks (halving down to single
    members) whenever the rest stays infeasible. When it completes (second value True) every member is
    necessary: removing any one leaves a satisfiable sub-problem."""
    lit_of = {info: g for g, info in ctx.guards}
    try:
        return shrink(list(core), cpsat_conflicts(ctx.m, lit_of, sub))
    finally:
        if parent is not None:
            parent.spend(sub.spent)


def _bytes_at(p: Problem, tile: int, step: int, tables_in_memory: bool) -> dict[tuple, int]:
    """Bytes every literal would put on `tile` at `step` (data live then, plus resident tables)."""
    out: dict[tuple, int] = defaultdict(int)
    for cb in p.contribs:
        if cb.first <= step <= cb.last:
            out[cb.lit] += int(p.vectors[cb.vec][tile])
    if tables_in_memory:
        for x in p.xcontribs:
            out[x.lit] += int(p.vectors[x.tables][tile])
    return out


def _least_overflow(ctx: ModelCtx, opts, sub):
    """solve_rounds on the elastic model: one worker for at most QUICK deterministic seconds, kept if it proves its
    plan optimal; else the configured workers on the rest (the rows the first added stay: each is a true row)."""
    first = 0
    if opts.workers > 1:
        quick = sub.share(1.0)
        quick.effort = min(quick.effort, QUICK)
        status, solver, first, added = solve_rounds(ctx, dataclasses.replace(opts, workers=1), None, quick, "overflow")
        sub.spend(quick.spent)
        if status == cp_model.OPTIMAL and not added:
            return status, solver, first, added
    status, solver, rounds, added = solve_rounds(ctx, opts, None, sub, "overflow")
    return status, solver, first + rounds, added


def elastic_explanation(p: Problem, classes, opts, sub, parent=None) -> dict:
    """The plan that overflows least: every capacity gets a slack, their sum is minimized. Its exact
    overflow on the worst tile is the deficit; its contributors there, and each choice's cheapest
    alternative on that tile, say what to change. usable + deficit is a per-tile budget at which this
    plan fits (an upper bound on the smallest such budget; the solver's bound is the lower one)."""
    from ..layout import MemClass

    ctx = build_model(p, classes, objective=False, elastic=True)
    status, solver, rounds, added = _least_overflow(ctx, opts, sub)
    if parent is not None:
        parent.spend(sub.spent)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {"status": solver.StatusName(status)}
    a = p.acct
    chosen = chosen_literals(ctx, solver)
    use = tile_usage(p, chosen)
    tables, frags, _ = exchange_usage(p, chosen)
    resident = a.table_alloc(tables) if a.tables_in_memory else np.zeros_like(tables)
    total = use[MemClass.STANDARD] + use[MemClass.INTERLEAVED] + resident[None, :] + a.support + a.headroom
    over = total - a.usable
    step, tile = np.unravel_index(int(np.argmax(over)), over.shape)
    deficit = int(over[step, tile])
    here = _bytes_at(p, int(tile), int(step), a.tables_in_memory)
    contributors: dict[str, int] = defaultdict(int)
    for cb in p.contribs:
        if cb.lit in chosen and cb.first <= step <= cb.last:
            v = int(p.vectors[cb.vec][tile])
            if v:
                contributors[cb.what] += v
    if a.tables_in_memory and resident[tile]:
        contributors["exchange tables (all supersteps, whole elements)"] += int(resident[tile])
    for name, nbytes in a.support_parts:
        if nbytes:
            contributors[name] += nbytes
    if a.headroom:
        contributors["requested headroom"] += a.headroom
    alternatives, choices = [], {}
    for op, impls in p.impls.items():
        cur = next(i for i in range(len(impls)) if ("impl", op, i) in chosen)
        choices[op] = impls[cur].label
        now = here.get(("impl", op, cur), 0)
        best = min(range(len(impls)), key=lambda i: here.get(("impl", op, i), 0))
        saving = now - here.get(("impl", op, best), 0)
        if saving > 0:
            alternatives.append({"op": op, "chosen": impls[cur].label, "bytes_here": now,
                                 "cheapest_here": impls[best].label, "saves": saving})
    alternatives.sort(key=lambda d: -d["saves"])
    return {
        "deficit_bytes": max(0, deficit), "tile": int(tile), "step": p.steps[step],
        "usable_bytes": a.usable, "needs_usable_bytes": a.usable + max(0, deficit),
        "slack_lower_bound": int(np.floor(solver.BestObjectiveBound())),
        "tables_over": max(0, int(tables.max()) - a.table_budget),
        "fragments_over": max(0, int(frags.max()) - a.fragment_limit),
        "contributors": [{"tensor": k, "bytes": v} for k, v in sorted(contributors.items(), key=lambda kv: -kv[1])],
        "alternatives": alternatives[:10],
        "choices": choices,  # the plan's implementation per op: `what-if memory` starts its solve from it
        "rounds": rounds,
    }
