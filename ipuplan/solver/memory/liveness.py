"""Family `memory/liveness`: at every step, the live bytes of every tile class fit the tile.

For class k (representative tile r) and step t, with c_l[r] the bytes of contribution l on tile r:
    sum_{l live at t} c_l[r] * lit_l + A_k + F  <=  usable - support - headroom
where A_k is the region-0 space the class's exchange tables occupy (whole elements covering the tables
and the fetch guard; resident for the whole program; exchange family) and F the free bytes the slack
objective keeps (0 otherwise). Contributions live for the whole program (homes, resident parameters,
descriptors) are the same in every row of a class: they are summed once into a per-class variable
R_k = sum_{l whole program} c_l[r] * lit_l (a definition, not a capacity) that every row adds. Constraints
that cannot bind (their largest possible left side fits) are not emitted.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...layout import MemClass
from ..model import SLACK_MAX, ModelCtx


def _group(lit: tuple) -> tuple:
    """Literals in one group are mutually exclusive (one implementation / one pair per edge)."""
    if lit[0] in ("impl", "pair"):
        return lit[:2]
    return lit


def live_rows(ctx: ModelCtx, mem: MemClass | None, threshold: int, room: np.ndarray | None = None):
    """Yield (class, step, (literals, bytes on the class's tile), {literal: bytes of the whole-program
    contributions}, largest possible sum) for every class and step whose largest possible sum (one literal per
    exclusive group) exceeds `threshold`, leaving out a step whose every coefficient is <= those of another
    kept step of the same class (it is implied). The second mapping is the same in every row of a class.
    `room` (per class, with `mem` interleaved): standard contributions larger than the class's room count too."""
    p = ctx.p
    cbs = [cb for cb in p.contribs if mem is None or room is not None or cb.mem is mem]
    if not cbs:
        return
    lits = sorted({cb.lit for cb in cbs}, key=repr)
    lit_id = {k: i for i, k in enumerate(lits)}
    groups = sorted({_group(k) for k in lits}, key=repr)
    gid = {g: i for i, g in enumerate(groups)}
    grp = np.array([gid[_group(k)] for k in lits])
    L = np.array([lit_id[cb.lit] for cb in cbs])
    first = np.array([cb.first for cb in cbs])
    last = np.array([cb.last for cb in cbs])
    steps = len(p.steps)
    whole = (first == 0) & (last == steps - 1)
    reps = np.array([c.rep for c in ctx.classes])
    V = np.stack([p.vectors[cb.vec][reps] for cb in cbs]).astype(np.int64)  # [contribs, classes]
    if room is not None:
        V *= np.array([cb.mem is mem for cb in cbs])[:, None] | (V > room[None, :])
    P = np.zeros((len(lits), len(reps)), np.int64)  # whole-program bytes of each literal on each class
    np.add.at(P, L[whole], V[whole])
    var = np.empty(len(lits), object)
    var[:] = [ctx.lit(k) for k in lits]
    part = np.flatnonzero(~whole)
    Vt = np.ascontiguousarray(V[part].T)  # [classes, step-bounded contributions]
    bounded = L[part], first[part], last[part]
    for ci, c in enumerate(ctx.classes):
        S, cols = _class_steps(Vt[ci], *bounded, P[:, ci], steps)
        # the largest possible sum at each step: one literal per exclusive group, whole-program bytes included
        g = grp[cols]
        perm = np.argsort(g, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(g[perm]) != 0])
        top = np.maximum(np.maximum.reduceat((S + P[cols, ci])[:, perm], starts, axis=1), 0).sum(1) \
            if len(cols) else np.zeros(steps, np.int64)
        rows = np.flatnonzero(top > threshold)
        if not len(rows):
            continue
        M = S[rows]  # [rows, the class's literals]
        order = np.argsort(-M.sum(1), kind="stable")
        K = np.empty_like(M)  # the kept rows so far
        kept: list[int] = []
        for a in order:
            if kept and (K[:len(kept)] >= M[a]).all(1).any():
                continue
            K[len(kept)] = M[a]
            kept.append(int(a))
        pz = np.flatnonzero(P[:, ci])
        prog = {lits[i]: int(P[i, ci]) for i in pz}
        for a in sorted(kept):
            nz = np.flatnonzero(M[a])
            yield c, int(rows[a]), (var[cols[nz]].tolist(), M[a, nz].tolist()), prog, int(top[rows[a]])


def _class_steps(v: np.ndarray, L: np.ndarray, first: np.ndarray, last: np.ndarray, prog: np.ndarray,
                 steps: int) -> tuple[np.ndarray, np.ndarray]:
    """([steps, literals] step-bounded bytes of one class per literal, those literals' indices, ascending):
    every literal with bytes on the class, step-bounded or whole-program; each contribution is live over one
    interval, so a difference array summed over the steps."""
    on = np.flatnonzero(v)
    cols = np.union1d(L[on], np.flatnonzero(prog))
    at = np.searchsorted(cols, L[on])
    D = np.zeros((steps + 1, len(cols)), np.int64)
    np.add.at(D, (first[on], at), v[on])
    np.add.at(D, (last[on] + 1, at), -v[on])
    return np.cumsum(D[:steps], axis=0), cols


def add_liveness(ctx: ModelCtx) -> None:
    p, m, a = ctx.p, ctx.m, ctx.p.acct
    cap = a.capacity
    tab_max = int(a.table_alloc(a.table_budget)) if a.tables_in_memory else 0
    reach = SLACK_MAX if ctx.free is not None else 0
    for c, t, terms, prog, top in live_rows(ctx, None, cap - tab_max - reach):
        g = ctx.guard(f"memory[point={p.steps[t]}, {c.name}]", "liveness", ("total", t, c.index))
        tables = ctx.table_alloc(c.index, ctx.tables[c.index]) if a.tables_in_memory else 0
        resident = ctx.resident(("total", c.index), prog)
        m.Add(ctx.weighted_sum(*terms) + resident + tables + ctx.kept_free() <= cap + ctx.over("memory")).OnlyEnforceIf(g)
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
    alloc = 0
    if a.tables_in_memory:
        tab: dict[tuple, int] = defaultdict(int)  # one literal may bring several exchanges
        for j in np.flatnonzero(ctx.xmat["tables"][tile]):
            tab[p.xcontribs[j].lit] += int(ctx.xmat["tables"][tile, j])
        alloc = ctx.table_alloc(("tile", tile), ctx.weighted(tab) if tab else 0)
    g = ctx.guard(f"memory[point={p.steps[step]}, tile {tile}]", "liveness", ("tile", step, tile))
    ctx.m.Add(ctx.weighted(terms) + alloc + ctx.kept_free() <= a.capacity + ctx.over("memory")).OnlyEnforceIf(g)
    if a.tables_in_memory:
        g0 = ctx.guard(f"region0[code + exchange tables, tile {tile}]", "regions", ("tile-tables", tile))
        ctx.m.Add(alloc + a.support <= a.region0 + ctx.over("memory")).OnlyEnforceIf(g0)
    ctx.constraints += 2
    return True


def missing_tile_rows(ctx: ModelCtx, usage_total: np.ndarray, tables: np.ndarray, slack: int = 0,
                      free: int = 0) -> int:
    """Add exact rows for tiles the chosen plan overflows (total or region 0), or leaves fewer than `free`
    bytes, that are not yet modeled."""
    a = ctx.p.acct
    alloc = a.table_alloc(tables) if a.tables_in_memory else np.zeros_like(tables)
    total = usage_total + alloc[None, :]
    over_t = np.flatnonzero((total > a.capacity - free + slack).any(0) | (alloc + a.support > a.region0 + slack))
    added = 0
    for t in over_t[:64]:
        added += add_tile_row(ctx, int(t), int(np.argmax(total[:, t])))
    return added
