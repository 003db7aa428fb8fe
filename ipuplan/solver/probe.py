"""A plan first: before minimizing cycles, the same model without its objective, hinted toward every op's
leanest implementation, looks for any plan on a share of the effort. Where capacity is what is hard (a batch
near the most a catalogue holds) the cycle objective steers the search toward fast, memory-hungry
implementations and can spend all its effort without a plan, although one exists; the probe's plan then
hints the cycle search, and stays at hand for the placement when the faster plan the search ends on does not
place. Sound either way: the probe adds no constraint, and its INFEASIBLE is the model's."""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from ..catalogue.impl import Impl, Life, ParamMode
from ..layout import Layout
from .budget import Budget
from .model import ModelCtx
from .objective import add_objective
from .rounds import chosen_literals, solve_rounds

SHARE = 0.25  # of the effort left, at most
MAX_EFFORT = 120.0  # deterministic seconds, at most


def own_bytes(im: Impl, tiles: int, counts: dict[str, int] | None = None) -> int:
    """Bytes an implementation's own buffers take on their fullest tile during its compute step: output,
    exchanged inputs, staged parameters and scratch; with `counts` (copies per parameter key), also its
    resident parameters, every iteration's copy. Without, a resident parameter counts nothing: it is its
    home, which every plan holds somewhere, where a staged one adds a copy beside its home."""
    parts = [im.out.tile_bytes(tiles)]
    # a concatenation's inputs are written into rows of its output: no buffer of their own
    parts += [lay.tile_bytes(tiles) for lay in im.needs.values() if isinstance(lay, Layout)]
    parts += [b.layout.tile_bytes(tiles) for b in im.bufs if b.life is not Life.PROGRAM]
    parts += [p.layout.tile_bytes(tiles) * (1 if p.mode is ParamMode.STAGED else counts[p.key])
              for p in im.params if p.mode is ParamMode.STAGED or counts is not None]
    return int(sum(np.asarray(x, np.int64) for x in parts).max())


def leanest(p) -> dict[str, int]:
    """Per op, the index of its implementation that adds the fewest bytes beyond the parameter homes (the
    first of equals)."""
    T = p.target.tiles
    return {op: min(range(len(impls)), key=lambda i: own_bytes(impls[i], T)) for op, impls in p.impls.items()}


def start(p, hint: tuple[tuple[str, str], ...]) -> tuple[dict[str, int], int]:
    """Per op, the implementation the probe is hinted toward: the hint's (op, label) where this catalogue builds
    that label for the op, else the leanest; and how many ops the hint settled."""
    want = dict(hint)
    out, hit = leanest(p), 0
    for op, impls in p.impls.items():
        i = next((i for i, im in enumerate(impls) if im.label == want.get(op)), None)
        if i is not None:
            out[op], hit = i, hit + 1
    return out, hit


def as_probe_model(ctx: ModelCtx, hint: tuple[tuple[str, str], ...]) -> int:
    """Make `ctx` the probe's model: no objective, every op hinted toward its start (`start`). Returns how many
    ops `hint` settled."""
    lean, hit = start(ctx.p, hint)
    ctx.m.ClearObjective()
    ctx.m.ClearHints()
    for k, v in ctx.x.items():
        if k[0] == "impl":
            ctx.m.AddHint(v, k[2] == lean[k[1]])
    return hit


def probe(ctx: ModelCtx, opts, report, budget: Budget, stats: dict | None = None) -> tuple[int, set | None]:
    """(CP-SAT status, a plan exact on every tile or None); `stats` receives how many ops a hint settled. Leaves
    the model with its objective again, hinted with the plan when there is one. `opts.hint` (a plan known to fit,
    such as the least-overflowing plan on a target grown by its deficit) replaces the leanest implementations as
    the probe's start, and presolve keeps it feasible, so that such a plan is the probe's first answer."""
    hit = as_probe_model(ctx, opts.hint)
    if opts.hint:
        if stats is not None:
            stats["probe_hinted_ops"] = hit
        if report:
            report(f"probe hinted with a given plan: {hit} of {len(ctx.p.impls)} ops")
    sub = budget.share(SHARE)
    sub.effort = min(sub.effort, MAX_EFFORT)
    status, solver, rounds, added = solve_rounds(ctx, opts, report, sub, "plan", precheck=True,
                                                 keep_hint=bool(opts.hint))
    budget.spend(sub.spent)
    add_objective(ctx)
    ctx.m.ClearHints()
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or added:
        return status, None
    chosen = chosen_literals(ctx, solver)
    for k, v in ctx.x.items():
        ctx.m.AddHint(v, k in chosen)
    return status, chosen
