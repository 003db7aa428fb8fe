"""Family `memory/liveness`: at every step, the live bytes of every tile class fit the tile.

For class k (representative tile r) and step t, with c_l[r] the bytes of contribution l on tile r:
    sum_{l live at t} c_l[r] * lit_l + X_k  <=  usable - support
where X_k is the class's exchange-table bytes (resident for the whole program; exchange family).
Constraints that cannot bind (their largest possible left side fits) are not emitted.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...layout import MemClass
from ..model import ModelCtx


def _group(lit: tuple) -> tuple:
    """Literals in one group are mutually exclusive (one implementation / one pair per edge)."""
    if lit[0] in ("impl", "pair"):
        return lit[:2]
    return lit


def live_terms(ctx: ModelCtx, mem: MemClass | None):
    """Yield (class, step, {literal: bytes on the class's tile}, largest possible sum) for live steps."""
    p = ctx.p
    by_step: dict[int, list] = defaultdict(list)
    for cb in p.contribs:
        if mem is None or cb.mem is mem:
            for t in range(cb.first, cb.last + 1):
                by_step[t].append(cb)
    for c in ctx.classes:
        for t in range(len(p.steps)):
            terms: dict[tuple, int] = defaultdict(int)
            for cb in by_step.get(t, ()):
                v = int(p.vectors[cb.vec][c.rep])
                if v:
                    terms[cb.lit] += v
            if not terms:
                continue
            worst: dict[tuple, int] = defaultdict(int)
            for lit, v in terms.items():
                worst[_group(lit)] = max(worst[_group(lit)], v)
            yield c, t, terms, sum(worst.values())


def add_liveness(ctx: ModelCtx) -> None:
    p, m, a = ctx.p, ctx.m, ctx.p.acct
    cap = a.usable - a.support
    tab_max = a.table_budget if a.tables_in_memory else 0
    for c, t, terms, top in live_terms(ctx, None):
        if top + tab_max <= cap:
            continue
        g = ctx.guard(f"memory[point={p.steps[t]}, {c.describe()}]", "liveness", ("total", t, c.index))
        tables = ctx.tables[c.index] if a.tables_in_memory else 0
        m.Add(ctx.weighted(terms) + tables <= cap + ctx.over("memory")).OnlyEnforceIf(g)
        ctx.constraints += 1


def add_tile_row(ctx: ModelCtx, tile: int, step: int) -> bool:
    """The exact memory constraint of one tile at one step, data and exchange tables together (used for
    tiles whose data bytes another class dominates but whose tables it may not)."""
    p, a = ctx.p, ctx.p.acct
    key = ("memory", tile, step)
    if key in ctx.rows:
        return False
    ctx.rows.add(key)
    terms: dict[tuple, int] = defaultdict(int)
    for cb in p.contribs:
        if cb.first <= step <= cb.last:
            v = int(p.vectors[cb.vec][tile])
            if v:
                terms[cb.lit] += v
    if a.tables_in_memory:
        for j in np.flatnonzero(ctx.xmat["tables"][tile]):
            terms[p.xcontribs[j].lit] += int(ctx.xmat["tables"][tile, j])
    g = ctx.guard(f"memory[point={p.steps[step]}, tile {tile}]", "liveness", ("tile", step, tile))
    ctx.m.Add(ctx.weighted(terms) <= a.usable - a.support + ctx.over("memory")).OnlyEnforceIf(g)
    if a.tables_in_memory:
        tab = {p.xcontribs[j].lit: int(ctx.xmat["tables"][tile, j]) for j in np.flatnonzero(ctx.xmat["tables"][tile])}
        if tab:
            g0 = ctx.guard(f"region0[code + exchange tables, tile {tile}]", "regions", ("tile-tables", tile))
            ctx.m.Add(ctx.weighted(tab) + a.support <= a.region0 + ctx.over("memory")).OnlyEnforceIf(g0)
    ctx.constraints += 2
    return True


def missing_tile_rows(ctx: ModelCtx, usage_total: np.ndarray, tables: np.ndarray, slack: int = 0) -> int:
    """Add exact rows for tiles the chosen plan overflows (total or region 0) that are not yet modeled."""
    a = ctx.p.acct
    tab = tables if a.tables_in_memory else np.zeros_like(tables)
    total = usage_total + tab[None, :]
    over_t = np.flatnonzero((total > a.usable - a.support + slack).any(0) | (tab + a.support > a.region0 + slack))
    added = 0
    for t in over_t[:64]:
        added += add_tile_row(ctx, int(t), int(np.argmax(total[:, t])))
    return added
