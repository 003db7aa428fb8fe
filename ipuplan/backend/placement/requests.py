"""Every tile's placement requests for a plan: the memory map's fixed reservations and code, the exchange
tables, and every buffer the plan's chosen implementations and transports allocate, with lifetimes, ranges,
alignment and element conflicts. Tiles whose requests are identical share one instance.

Addresses are bytes from the memory map's base (0x4c000). Region 0 is [0, region0) and the only executable
memory; region 1 is [region0, usable). Standard data goes anywhere but never straddles the region boundary;
interleaved data goes in region 1 (32 B aligned, AMP operands); exchange tables occupy whole region-0
elements (their allocation already covers the 64 B fetch guard), so no data shares an element with code the
supervisor fetches during an exchange; the code the fixed window does not hold and the supervisor program
sit at the top of region 0, end-aligned to an element. Conflicts: on a tile that both sends and receives in
one transfer, the buffer sent from and the buffer received into are never in one element; a codelet's
`apart` fields (the GEMM's left operand and its output) are never in one element.

Under the seeds' accounting (--support-reserve) there is no memory map: one flat space of the seeds' budget
with the reserve fixed at its start, no regions and no elements.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

import ipuplan.codelets as cl
from ...layout import MemClass
from .problem import Buffer, Elements, Instance

DATA_ALIGN = 8
IL_ALIGN = 32
EXECUTABLE = "code beyond the window and supervisor program"


@dataclass(frozen=True)
class TileGroup:
    """Tiles with identical requests, and the instance they share."""

    tiles: np.ndarray
    inst: Instance


@dataclass(frozen=True)
class _Row:
    name: str
    sizes: np.ndarray  # [T]
    first: int
    last: int
    mem: MemClass
    lit: tuple | None  # the literal that allocates it (None: support)
    contrib: object = None  # the planning problem's Contribution (None: the exchange tables)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = defaultdict(int)
    out = []
    for n in names:
        seen[n] += 1
        out.append(n if seen[n] == 1 else f"{n} #{seen[n]}")
    return out


def _rows(p, chosen: set) -> list[_Row]:
    """Data buffers of the chosen literals (one row per contribution) and the exchange tables."""
    T, last = p.target.tiles, len(p.steps) - 1
    cbs = [cb for cb in p.contribs if cb.lit in chosen]
    names = _unique([cb.what for cb in cbs])
    rows = [_Row(n, p.vectors[cb.vec], cb.first, cb.last, cb.mem, cb.lit, cb) for n, cb in zip(names, cbs)]
    a = p.acct
    tables = np.zeros(T, np.int64)
    for x in p.xcontribs:
        if x.lit in chosen:
            tables += p.vectors[x.tables]
    if a.tables_in_memory:
        rows.append(_Row("exchange tables", a.table_alloc(tables), 0, last, MemClass.STANDARD, None))
    return rows


def data_rows(p, chosen: set) -> list[tuple[str, object]]:
    """(placement name, Contribution) of every data buffer the chosen literals allocate, in request order."""
    return [(r.name, r.contrib) for r in _rows(p, chosen) if r.contrib is not None]


def _left_operand(p, chosen: set, op: str) -> str | None:
    """The `what` of the buffer a consumer reads as input 0 (its exchanged copy, or the producer's output)."""
    for e in p.edges:
        if e.consumer == op and e.index == 0:
            for pr in e.pairs:
                if pr.lit in chosen:
                    if pr.mode == "none":
                        return f"{e.producer} (output)"
                    return f"{e.buf} -> {op}[0] (exchanged copy)"
    ref = dict(p.sched.op(op).reads).get(0)
    return f"{ref.key} (host input)" if ref is not None and ref.kind == "act" else None


def _conflicts(p, chosen: set, rows: list[_Row]) -> list[tuple[int, int, np.ndarray]]:
    """(row, row, tiles where they must be in different elements)."""
    by_what: dict[str, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        by_what[r.name.split(" #")[0]].append(k)
    out = []
    for x in p.xcontribs:
        if x.lit not in chosen:
            continue
        for tr, (src, dst) in zip(x.transfers, x.ends):
            both = (tr.send > 0) & (tr.recv > 0)
            if not both.any():
                continue
            for i in by_what.get(src, ()):
                for j in by_what.get(dst, ()):
                    if i != j:
                        out.append((i, j, both & (rows[i].sizes > 0) & (rows[j].sizes > 0)))
    for lit in chosen:
        if lit[0] != "impl":
            continue
        im = p.impls[lit[1]][lit[2]]
        for name in im.codelets:
            for f_a, f_b in cl.BY_NAME[name].apart:
                ends = []
                for f in (f_a, f_b):
                    if f == "x":  # the left operand, and a rotating GEMM's other x shard buffer
                        ends.append([_left_operand(p, chosen, lit[1]), f"{lit[1]} (x shards)"])
                    elif f == "acc":
                        ends.append([f"{lit[1]} (accumulator)"])
                    else:  # the GEMM's output: its partials when the op reduces over k-slices
                        part = f"{lit[1]} (partials)"
                        ends.append([part if part in by_what else f"{lit[1]} (output)"])
                for i in (i for e in ends[0] for i in by_what.get(e, ())):
                    for j in (j for e in ends[1] for j in by_what.get(e, ())):
                        out.append((i, j, (rows[i].sizes > 0) & (rows[j].sizes > 0)))
    return [(i, j, m) for i, j, m in out if m.any()]


def _support(p) -> tuple[list[Buffer], int, int, tuple[int, ...], tuple[Elements, ...]]:
    """(fixed and code buffers, capacity, region-0 size, barriers, element grids)."""
    a, t = p.acct, p.target
    last = len(p.steps) - 1
    if a.mode == "seeds":
        return [Buffer("seeds' support reserve", a.support, 0, last, fixed=0)] if a.support else [], a.usable, \
            a.usable, (), ()
    mm = t.memory_map
    fixed = {r.name: r for r in mm.reservations}
    bufs, executable = [], 0
    for name, size in a.support_parts:
        if name in fixed:
            r = fixed[name]
            bufs.append(Buffer(name, r.size, 0, last, fixed=r.start - mm.base))
        elif name == "code window":
            bufs.append(Buffer(name, size, 0, last, fixed=mm.code_window[0] - mm.base))
        else:
            executable += size
    r0 = a.region0
    if executable:
        executable = -(-executable // DATA_ALIGN) * DATA_ALIGN
        bufs.append(Buffer(EXECUTABLE, executable, 0, last, fixed=r0 - executable))
    grids = (Elements(0, r0, t.region0_element_bytes), Elements(r0, a.usable, t.region1_element_bytes))
    return bufs, a.usable, r0, (r0,), grids


def tile_groups(p, chosen: set) -> list[TileGroup]:
    """One instance per set of tiles with identical requests."""
    T = p.target.tiles
    rows = _rows(p, chosen)
    conf = _conflicts(p, chosen, rows)
    support, capacity, r0, barriers, grids = _support(p)
    seeds = p.acct.mode == "seeds"
    key = np.vstack([r.sizes for r in rows] + [m.astype(np.int64) for _, _, m in conf]) if rows else \
        np.zeros((1, T), np.int64)
    cols, inverse = np.unique(key, axis=1, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    groups = []
    for g in range(cols.shape[1]):
        t = int(np.flatnonzero(inverse == g)[0])
        bufs = list(support)
        index = {}
        for k, r in enumerate(rows):
            size = int(r.sizes[t])
            if not size:
                continue
            index[k] = len(bufs)
            if r.lit is None:  # the exchange tables: whole region-0 elements
                el = p.target.region0_element_bytes
                bufs.append(Buffer(r.name, size, r.first, r.last, align=1 if seeds else el, hi=None if seeds else r0))
            elif r.mem is MemClass.INTERLEAVED and not seeds:
                bufs.append(Buffer(r.name, size, r.first, r.last, align=IL_ALIGN, lo=r0))
            else:
                bufs.append(Buffer(r.name, size, r.first, r.last, align=DATA_ALIGN))
        pairs = frozenset(tuple(sorted((index[i], index[j]))) for i, j, m in conf
                          if m[t] and i in index and j in index)
        groups.append(TileGroup(np.flatnonzero(inverse == g), Instance(capacity, tuple(bufs), pairs if grids else
                                                                       frozenset(), barriers, grids)))
    return groups


def tile_literals(p, chosen: set, tile: int) -> list[tuple]:
    """The chosen literals that put bytes (data or exchange tables) on `tile`: the premise of a placement cut."""
    lits = {cb.lit for cb in p.contribs if cb.lit in chosen and p.vectors[cb.vec][tile]}
    lits |= {x.lit for x in p.xcontribs if x.lit in chosen and p.vectors[x.tables][tile]}
    return sorted(lits, key=repr)
