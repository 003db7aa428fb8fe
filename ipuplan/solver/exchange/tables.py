"""Family `exchange`: per tile, encoded exchange bytes and fragments within the target's limits.

For tile class k (tiles with identical data bytes) a variable X_k stands for the largest exchange-table
footprint of its own tiles: for tiles t of the class
    sum_l table_l[t] * lit_l <= X_k,        X_k <= exchange table budget (81,920 B)
and for tiles t
    sum_l pieces_l[t] * lit_l <= fragment limit (16,384),
over every conversion, staging, relay and internal exchange chosen, the Repeat body's code counted once
(table bytes: the IPU21 instruction words of docs/EXCHANGE.md, an upper bound of the real encoding).
X_k occupies whole region-0 elements (with the fetch guard) for the whole program (liveness, regions).
Tiles whose data bytes another class dominates are checked exactly after each solve (memory/liveness.py).

Rows are added lazily: the model starts with each class's few heaviest rows; after each solve the
chosen plan is measured on every tile and any tile whose exact tables or fragments break a row that
is not yet in the model gets its row, and the model is solved again. Leaving rows out only relaxes the
model, so an INFEASIBLE verdict at any round is also one of the full model; a FIT is accepted only
when every tile's exact figures satisfy every row.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..classes import heaviest_rows
from ..model import ModelCtx
from ..rows import literal_sums

INITIAL_ROWS = 6


def _matrix(ctx: ModelCtx, which: str) -> np.ndarray:
    """[tiles, xcontribs] per-tile tables or fragments of every exchange contribution."""
    p = ctx.p
    if not p.xcontribs:
        return np.zeros((p.target.tiles, 0), np.int64)
    return np.stack([p.vectors[x.tables if which == "tables" else x.frags] for x in p.xcontribs], axis=1)


def _terms(ctx: ModelCtx, row: np.ndarray) -> dict[tuple, int]:
    """{literal: the row's bytes summed over that literal's exchanges}, literals in order of first appearance."""
    return dict(literal_sums(*ctx.xmat["lits"], row))


def _worst(terms: dict[tuple, int]) -> int:
    worst: dict[tuple, int] = defaultdict(int)
    for lit, v in terms.items():
        worst[lit[:2]] = max(worst[lit[:2]], v)
    return sum(worst.values())


def add_table_row(ctx: ModelCtx, cls: int, tile: int) -> None:
    key = ("tables", cls, tile)
    if key in ctx.rows:
        return
    ctx.rows.add(key)
    terms = _terms(ctx, ctx.xmat["tables"][tile])
    if terms:
        ctx.m.Add(ctx.weighted(terms) <= ctx.tables[cls])  # definition of X_k: no capacity here


def _limit_row(ctx: ModelCtx, which: str, tile: int, limit: int, name: str, tag: str, unit: str = "") -> bool:
    """One tile's `which` ("tables"/"frags") bounded by `limit`, guarded; skipped when it cannot bind."""
    key = (tag, tile)
    if key in ctx.rows:
        return False
    ctx.rows.add(key)
    terms = _terms(ctx, ctx.xmat[which][tile])
    if _worst(terms) <= limit and not ctx.slack:
        return False
    g = ctx.guard(f"exchange[{name} <= {limit:,}{unit}, tile {tile}]", "exchange", (tag, tile))
    over = ctx.over("fragments" if which == "frags" else "tables")
    ctx.m.Add(ctx.weighted(terms) <= limit + over).OnlyEnforceIf(g)
    ctx.constraints += 1
    return True


def add_fragment_row(ctx: ModelCtx, tile: int) -> bool:
    return _limit_row(ctx, "frags", tile, ctx.p.acct.fragment_limit, "fragments", "frags")


def add_budget_row(ctx: ModelCtx, tile: int) -> bool:
    """The table budget of one tile outside any class's own tiles (a dominated tile)."""
    return _limit_row(ctx, "tables", tile, ctx.p.acct.table_budget, "tables", "budget", " B")


def add_exchange(ctx: ModelCtx) -> None:
    m, a = ctx.m, ctx.p.acct
    lits = list(dict.fromkeys(x.lit for x in ctx.p.xcontribs))
    index = {k: i for i, k in enumerate(lits)}
    ctx.xmat = {"tables": _matrix(ctx, "tables"), "frags": _matrix(ctx, "frags"),
                "lits": (lits, np.array([index[x.lit] for x in ctx.p.xcontribs], np.int64))}
    big = ctx.most_tables
    for c in ctx.classes:
        x = m.NewIntVar(0, big, f"tables[{c.index}]")
        ctx.tables[c.index] = x
        sub = ctx.xmat["tables"][c.tiles]
        if sub.shape[1]:
            for r in heaviest_rows(sub, INITIAL_ROWS):
                add_table_row(ctx, c.index, int(c.tiles[r]))
        g = ctx.guard(f"exchange[tables <= {a.table_budget:,} B, {c.describe()}]", "exchange", ("tables", c.index))
        m.Add(x <= a.table_budget + ctx.over("tables")).OnlyEnforceIf(g)
        ctx.constraints += 1
    f = ctx.xmat["frags"]
    if f.shape[1]:
        for r in heaviest_rows(f, INITIAL_ROWS * 4):
            add_fragment_row(ctx, int(r))


def missing_rows(ctx: ModelCtx, chosen: set[tuple], table_values: dict[int, int], slack: dict | None = None) -> int:
    """Add the rows the chosen plan breaks; return how many were added."""
    sel = np.array([x.lit in chosen for x in ctx.p.xcontribs], bool)
    if not sel.any():
        return 0
    tables = ctx.xmat["tables"][:, sel].sum(1)
    frags = ctx.xmat["frags"][:, sel].sum(1)
    added = 0
    for c in ctx.classes:
        over = c.tiles[tables[c.tiles] > table_values[c.index]]
        for t in over[np.argsort(-tables[over], kind="stable")][:8]:
            add_table_row(ctx, c.index, int(t))
            added += 1
    slack = slack or {}
    for t in np.flatnonzero(frags > ctx.p.acct.fragment_limit + slack.get("fragments", 0))[:32]:
        added += add_fragment_row(ctx, int(t))
    for t in np.flatnonzero(tables > ctx.p.acct.table_budget + slack.get("tables", 0))[:32]:
        added += add_budget_row(ctx, int(t))
    return added
