"""Exact per-tile rows of the solver's problem (one tile, one program point, each literal's bytes), built from its
contribution vectors, and every step's counting bound of a tile at once: what certificates are made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .problem import Problem


def literal_sums(lits: list, ids: np.ndarray, vals: np.ndarray) -> list[tuple]:
    """(literal, the sum of its non-zero `vals`) with `ids[j]` numbering the literal of `vals[j]` in `lits`, literals in
    the order of their first non-zero value."""
    nz = np.flatnonzero(vals)
    if not len(nz):
        return []
    uniq, first, inv = np.unique(ids[nz], return_index=True, return_inverse=True)
    sums = np.zeros(len(uniq), np.int64)
    np.add.at(sums, inv.ravel(), np.asarray(vals)[nz].astype(np.int64))
    order = np.argsort(first, kind="stable")
    return list(zip([lits[i] for i in uniq[order].tolist()], sums[order].tolist()))


def groups(p: Problem) -> dict[str, list[tuple]]:
    """Exactly one literal of each: an op's implementations, an edge's (producer, consumer, mode) pairs."""
    out = {op: [("impl", op, i) for i in range(len(impls))] for op, impls in p.impls.items()}
    for e in p.edges:
        out[edge_name(e)] = [pr.lit for pr in e.pairs]
    return out


def edge_name(e) -> str:
    return f"{e.buf} -> {e.consumer}[{e.index}]"


def region0_room(p: Problem, gs: dict | None = None) -> np.ndarray | None:
    """[tiles] the most bytes one standard buffer can take in region 0 under any selection: region 0 less the
    support and the allocation of the tile's least exchange tables (every group's cheapest tables, resident for
    the whole program; the allocation grows with the tables). Standard data never straddles the region boundary,
    so a standard buffer larger than this sits in region 1 whatever else is chosen. None without regions (the
    seeds' accounting: one flat space)."""
    a = p.acct
    if not a.tables_in_memory:
        return None
    by_lit: dict = {}
    for x in p.xcontribs:
        v = p.vectors[x.tables]
        by_lit[x.lit] = by_lit[x.lit] + v if x.lit in by_lit else v.astype(np.int64)
    least = np.zeros(p.target.tiles, np.int64)
    for g in (gs or groups(p)).values():
        if g and all(k in by_lit for k in g):  # a literal without tables makes the group's least 0
            least += np.min(np.stack([by_lit[k] for k in g]), axis=0)
    return a.region0 - a.support - a.table_alloc(least).astype(np.int64)


@dataclass(frozen=True)
class Row:
    """sum(coef . x) + alloc(sum(tcoef . x)) <= cap, alloc(t) = 0 for t = 0, else t plus the fetch guard rounded
    up to whole region-0 elements (tcoef: the exchange tables of rows that hold them in memory)."""

    kind: str  # memory, region1 (interleaved, and standard beyond region 0's room), region0, tables, fragments
    tile: int
    step: int | None
    coef: dict  # solver literal -> bytes (or fragments)
    cap: int
    tcoef: dict = field(default_factory=dict)

    @cached_property
    def linear(self) -> dict:
        """The row with its tables counted at their bytes (a relaxation: alloc(t) >= t); shared, not to be modified."""
        out = dict(self.coef)
        for k, v in self.tcoef.items():
            out[k] = out.get(k, 0) + v
        return out

    def name(self, p: Problem) -> str:
        at = f", {p.steps[self.step]}" if self.step is not None else ""
        return f"{self.kind}[tile {self.tile}{at}]"


MEMO_ROWS = 2048  # rows kept built at once (a full-size model's row holds about a thousand literals)


class Rows:
    """Exact per-tile rows of the solver's problem, computed from its contribution vectors."""

    def __init__(self, p: Problem):
        self.p = p
        a = p.acct
        self.D = np.stack([p.vectors[c.vec] for c in p.contribs])
        self.first = np.array([c.first for c in p.contribs])
        self.last = np.array([c.last for c in p.contribs])
        self.il = np.array([c.mem.value == "il" for c in p.contribs])
        self.room = region0_room(p)
        self.X = np.stack([p.vectors[x.tables] for x in p.xcontribs]) if p.xcontribs else None
        self.F = np.stack([p.vectors[x.frags] for x in p.xcontribs]) if p.xcontribs else None
        self.xl = [x.lit for x in p.xcontribs]
        # literals numbered once, so that a row sums its contributions per literal with numpy
        ids: dict = {}
        self.cid = np.array([ids.setdefault(c.lit, len(ids)) for c in p.contribs], np.intp)
        self.xid = np.array([ids.setdefault(k, len(ids)) for k in self.xl], np.intp)
        self.lits = list(ids)
        self._memo: dict = {}
        self.caps = {"memory": a.capacity, "region1": a.region1, "region0": a.region0 - a.support,
                     "tables": a.table_budget, "fragments": a.fragment_limit}

    def _add(self, out: dict, ids: np.ndarray, vals: np.ndarray) -> None:
        """out[literal] += the sum of its non-zero `vals`."""
        pairs = literal_sums(self.lits, ids, vals)
        if not out:
            out.update(pairs)
            return
        for lit, v in pairs:
            out[lit] = out.get(lit, 0) + v

    def row(self, kind: str, tile: int, step: int | None = None) -> Row:
        """The row, built once per (kind, tile, step): the split's many fixings rank the same rows again."""
        key = (kind, tile, step)
        if key not in self._memo:
            if len(self._memo) >= MEMO_ROWS:  # bounded: a full-size model's rows are large
                self._memo.clear()
            self._memo[key] = self._row(kind, tile, step)
        return self._memo[key]

    def _row(self, kind: str, tile: int, step: int | None) -> Row:
        p, coef, tcoef = self.p, {}, {}
        if kind in ("memory", "region1"):
            live = (self.first <= step) & (step <= self.last)
            if kind == "region1":
                live &= self.il if self.room is None else self.il | (self.D[:, tile] > self.room[tile])
            self._add(coef, self.cid[live], self.D[live, tile])
        if self.X is not None and kind == "tables":
            self._add(coef, self.xid, self.X[:, tile])
        if self.X is not None and kind in ("memory", "region0") and p.acct.tables_in_memory:
            self._add(tcoef if p.acct.table_element else coef, self.xid, self.X[:, tile])
        if kind == "fragments" and self.F is not None:
            self._add(coef, self.xid, self.F[:, tile])
        return Row(kind, tile, step, coef, self.caps[kind], tcoef)


class MemoryBounds:
    """`cheapest(p, rows.row("memory", tile, s), gs)[0]` for every step s of a tile at once: each literal's live
    bytes per step by interval differences, the minimum over each group's literals, their sum, plus the allocation
    of the groups' cheapest tables. Only groups whose every literal contributes can have a non-zero minimum, so
    only those are laid out (one after another), once for all tiles."""

    def __init__(self, rows: Rows, gs: dict):
        self.rows = rows
        p, a = rows.p, rows.p.acct
        self.in_mem = rows.X is not None and a.tables_in_memory
        live = [(i, c.lit) for i, (c, f, l) in enumerate(zip(p.contribs, rows.first, rows.last)) if f <= l]
        data_lits = {k for _, k in live}
        if self.in_mem and not a.table_element:
            data_lits |= set(rows.xl)

        def layout(has):
            kept = [g for g in gs.values() if g and all(k in has for k in g)]
            where: dict = {}
            for j, k in enumerate(k for g in kept for k in g):
                where.setdefault(k, []).append(j)
            starts = np.cumsum([0] + [len(g) for g in kept[:-1]]).astype(np.intp)
            return where, starts, sum(len(g) for g in kept)

        def index(pairs):
            return tuple(np.array(x, np.intp) for x in zip(*pairs)) if pairs else (np.zeros(0, np.intp),) * 2

        where, self.starts, self.P = layout(data_lits)
        self.ci, self.cj = index([(i, j) for i, k in live for j in where.get(k, ())])
        if self.in_mem:
            twhere, self.tstarts, self.TP = layout(set(rows.xl)) if a.table_element else (where, self.starts, self.P)
            self.xi, self.xj = index([(i, j) for i, k in enumerate(rows.xl) for j in twhere.get(k, ())])

    def __call__(self, tile: int) -> np.ndarray:
        r, acct = self.rows, self.rows.p.acct
        n, ci = len(r.p.steps), self.ci
        diff = np.zeros((n + 1, self.P), np.int64)
        v = r.D[ci, tile].astype(np.int64)
        np.add.at(diff, (r.first[ci], self.cj), v)
        np.add.at(diff, (r.last[ci] + 1, self.cj), -v)
        live = np.cumsum(diff[:n], axis=0)
        tables = 0
        if self.in_mem:
            t = np.zeros(self.TP, np.int64)
            np.add.at(t, self.xj, r.X[self.xi, tile].astype(np.int64))
            if acct.table_element:
                tables = int(np.minimum.reduceat(t, self.tstarts).sum()) if self.TP else 0
            else:
                live += t[None, :]  # the tables counted as data bytes, in the same groups as the data
        total = np.minimum.reduceat(live, self.starts, axis=1).sum(axis=1) if self.P else np.zeros(n, np.int64)
        return total + (int(acct.table_alloc(tables)) if tables else 0)
