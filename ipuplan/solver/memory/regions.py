"""Family `memory/regions`: what each memory region can hold, per tile class and step.

Region 0 holds the support (fixed reservations, code, supervisor program), the exchange tables (whole
elements) and may hold standard data; region 1 holds all interleaved data and may hold standard data.
With s0 the standard bytes placed in region 0 at a step (a split variable per class and step), the region
limits are
    support + A_k + s0 <= region0,   interleaved + (standard - s0) <= region1.
Eliminating s0 leaves `support + A_k <= region0`, `region1 bytes + F <= region1` and the liveness family's
total bound, which is what is emitted (F: the free bytes the slack objective keeps, 0 otherwise; keeping them
in region 1 too leaves the placement room for the interleaved buffers, whose element rules are the tightest).
The region-1 bytes are the interleaved data plus every standard buffer larger than the tile's region-0 room
(`rows.region0_room`: region 0 less the support and the tile's least exchange tables): standard data never
straddles the boundary, so such a buffer is in region 1 under every selection. A class's tiles have the same
data bytes and may differ in tables, so its row is that of the member with the least room; a tile another class
dominates gets its own row when a solution breaks it (`missing_region1_rows`). This is a relaxation of pinning
every buffer to one region for its whole life: a verdict of INFEASIBLE therefore holds for every region
assignment and placement; a FIT plan's buffers get their regions and addresses from the placement, which may
still refuse it.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...layout import MemClass
from ..model import SLACK_MAX, ModelCtx
from ..rows import region0_room
from .liveness import live_rows


def add_regions(ctx: ModelCtx) -> None:
    p, m, a = ctx.p, ctx.m, ctx.p.acct
    g0 = ctx.guard(f"region0[support {a.support:,} B <= {a.region0:,} B]", "regions", ("region0",))
    one = m.NewConstant(1)
    m.Add(a.support * one <= a.region0).OnlyEnforceIf(g0)
    ctx.constraints += 1
    if a.tables_in_memory and a.support + int(a.table_alloc(a.table_budget)) > a.region0:
        for c in ctx.classes:
            g = ctx.guard(f"region0[code + exchange tables, {c.describe()}]", "regions", ("tables", c.index))
            alloc = ctx.table_alloc(c.index, ctx.tables[c.index])
            m.Add(alloc + a.support <= a.region0 + ctx.over("memory")).OnlyEnforceIf(g)
            ctx.constraints += 1
    reach = SLACK_MAX if ctx.free is not None else 0
    room = _room(ctx)
    tile = np.array([c.rep if room is None else int(c.tiles[np.argmin(room[c.tiles])]) for c in ctx.classes])
    row_tile = {c.index: int(r) for c, r in zip(ctx.classes, tile)}
    for c, t, terms, prog, top in live_rows(ctx, MemClass.INTERLEAVED, a.region1 - reach,
                                            None if room is None else room[tile]):
        r = row_tile[c.index]
        g = ctx.guard(f"region1[point={p.steps[t]}, {c.describe()}, tile {r}]", "regions", ("il", t, r))
        resident = ctx.resident(("region1", c.index), prog)
        m.Add(ctx.weighted_sum(*terms) + resident + ctx.kept_free() <= a.region1 + ctx.over("memory")).OnlyEnforceIf(g)
        ctx.constraints += 1
        ctx.rows.add(("region1", r, t))


def _room(ctx: ModelCtx) -> np.ndarray | None:
    """The tiles' region-0 rooms, computed once per model."""
    if "region0_room" not in ctx.xmat:
        ctx.xmat["region0_room"] = region0_room(ctx.p)
    return ctx.xmat["region0_room"]


def region1_usage(p, chosen: set, room: np.ndarray | None, interleaved: np.ndarray) -> np.ndarray:
    """[steps, tiles] region-1 bytes of the chosen literals by the family's rule: their `interleaved` bytes
    ([steps, tiles]) and the standard buffers larger than the tile's region-0 room."""
    out = interleaved.copy()
    if room is not None:
        for cb in p.contribs:
            if cb.lit in chosen and cb.mem is MemClass.STANDARD:
                v = p.vectors[cb.vec]
                out[cb.first:cb.last + 1] += np.where(v > room, v, 0)
    return out


def missing_region1_rows(ctx: ModelCtx, chosen: set, interleaved: np.ndarray, slack: int = 0, free: int = 0,
                         limit: int = 64) -> int:
    """Add the exact region-1 row of each tile (at its fullest step) that the chosen literals (with `interleaved`
    bytes [steps, tiles]) overflow, or leave fewer than `free` bytes, and that is not yet modeled: the class rows
    cover a class's members, not the tiles it dominates, whose rooms may be smaller."""
    p, a = ctx.p, ctx.p.acct
    use = region1_usage(p, chosen, _room(ctx), interleaved)
    added = 0
    for tile in np.flatnonzero((use > a.region1 - free + slack).any(0))[:limit]:
        added += add_region1_row(ctx, int(tile), int(np.argmax(use[:, tile])))
    return added


def add_region1_row(ctx: ModelCtx, tile: int, step: int) -> bool:
    """The exact region-1 row of one tile at one step (False: already modeled)."""
    p, a = ctx.p, ctx.p.acct
    key = ("region1", tile, step)
    if key in ctx.rows:
        return False
    ctx.rows.add(key)
    room = _room(ctx)
    terms: dict[tuple, int] = defaultdict(int)
    for cb in p.contribs:
        if cb.first <= step <= cb.last:
            v = int(p.vectors[cb.vec][tile])
            if v and (cb.mem is MemClass.INTERLEAVED or (room is not None and v > room[tile])):
                terms[cb.lit] += v
    g = ctx.guard(f"region1[point={p.steps[step]}, tile {tile}]", "regions", ("il", step, tile))
    ctx.m.Add(ctx.weighted(terms) + ctx.kept_free() <= a.region1 + ctx.over("memory")).OnlyEnforceIf(g)
    ctx.constraints += 1
    return True
