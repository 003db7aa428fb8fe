"""Exact placement by canonical search (after MiniMalloc, ASPLOS 2023), extended for tiles.

A canonical solution places buffers in non-decreasing offset order, each at the lowest offset the buffers
already placed allow ("gravity"); every feasible placement has a canonical form, so searching canonical
solutions alone is complete. Here a buffer's lowest offset also honours its window, its alignment, the
barriers it may not straddle (region boundaries), a fixed offset, and memory-element conflicts: a buffer
placed above a conflicting one starts at the next element boundary past it. Pruning, each sound under those
extensions: sections (sets of buffers live at once) must keep their unplaced bytes above their floor within
the capacity; a candidate above the top of a non-conflicting unplaced buffer leaves a gap that buffer fills
first (dominated); a buffer with nothing unplaced overlapping it ("hatless") has no alternative worth trying.
Time-disjoint groups of buffers (partitions) are solved independently. Several static orders are tried in
turn with doubling node limits; a search that exhausts its tree without a node limit is a proof that no
placement exists. Node counts, not seconds, bound the search: the same instance gives the same answer. An
instance the node budget leaves undecided goes to CP-SAT (cpsat.py) on a deterministic time limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .greedy import arrays, best_fit, first_fit
from .problem import Instance, Placement

ORDERS = ("WAT", "TAW", "TWA")  # static preorders: (W)idth of lifetime, (A)rea, (T)otal of its sections, descending
LETTERS = {"T": 0, "A": 1, "W": 2, "Z": 3}  # kernel.rerank's codes


@dataclass
class _Sweep:
    sections: list[np.ndarray]  # buffer indices live in each section
    span: list[tuple[int, int]]  # per buffer: [first section, last section + 1)
    overlaps: list[list[int]]
    partitions: list[tuple[list[int], int, int]]  # (buffers, first section, end section)


def sweep(inst: Instance) -> _Sweep:
    """Sections, each buffer's section span, pairwise overlaps, and the partitions (maximal groups connected
    in time)."""
    bs = inst.buffers
    n = len(bs)
    first = np.array([b.first for b in bs], np.int64)
    last = np.array([b.last for b in bs], np.int64)
    # a section is the set of buffers live at a step where some buffer ends: every other set of buffers live
    # at once is a subset of one of these, so checking these alone is sound (MiniMalloc's sweep does the same)
    starts = np.unique(last)
    sections = [np.flatnonzero((first <= t0) & (last >= t0)) for t0 in starts]
    span = [(int(np.searchsorted(starts, first[i], side="left")), int(np.searchsorted(starts, last[i], side="right")))
            for i in range(n)]
    live = (first[:, None] <= last[None, :]) & (first[None, :] <= last[:, None])
    np.fill_diagonal(live, False)
    overlaps = [list(np.flatnonzero(live[i])) for i in range(n)]
    # partitions: cut between sections k-1 and k when no buffer spans both
    crossing = np.zeros(len(sections) + 1, np.int64)
    for a, b in span:
        crossing[a + 1:b] += 1
    cuts = [0] + [k for k in range(1, len(sections)) if crossing[k] == 0] + [len(sections)]
    parts = []
    for a, b in zip(cuts, cuts[1:]):
        members = sorted({int(i) for s in range(a, b) for i in sections[s]})
        if members:
            parts.append((members, a, b))
    return _Sweep(sections, span, overlaps, parts)


def _csr(lists) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    idx = np.concatenate([np.asarray(x, np.int64) for x in lists]) if lists else np.zeros(0, np.int64)
    return ptr, idx.astype(np.int64)


def place(inst: Instance, node_budget: int = 20_000_000, orders=ORDERS, heuristic: bool = True,
          cpsat_seconds: float = 20.0, cpsat_first: float = 0.0, deadline: float | None = None) -> Placement:
    """Place every buffer (first fit, then best fit; with `cpsat_first`, a short CP-SAT run; then the canonical
    search within `node_budget` nodes; then CP-SAT within `cpsat_seconds` deterministic seconds), or prove that
    no placement exists. Tiles (a hundred or two buffers, windows and conflicts) suit CP-SAT first; MiniMalloc's large
    perfect packings suit the canonical search. `deadline` (time.perf_counter()) stops the CP-SAT runs early
    (undecided)."""
    from .cpsat import place_cpsat
    if heuristic:
        r = first_fit(inst) or best_fit(inst)
        if r is not None:
            return r
    spent = 0.0
    if cpsat_first > 0:
        c = place_cpsat(inst, cpsat_first, deadline)
        if c.placed or c.proven:
            return c
        spent = c.work
    r = _canonical(inst, node_budget, orders)
    r.work = spent
    if r.placed or r.proven or cpsat_seconds <= 0:
        return r
    c = place_cpsat(inst, cpsat_seconds, deadline)
    c.nodes, c.work = r.nodes, c.work + spent
    if not c.placed and not c.proven:
        c.reason = f"{r.reason}; {c.reason}"
    return c


def _canonical(inst: Instance, node_budget: int, orders) -> Placement:
    from .kernel import EXHAUSTED, FOUND, rerank, search
    bs = inst.buffers
    n = len(bs)
    if n >= 4096:
        raise ValueError("the canonical search takes at most 4,095 buffers per instance")
    for i, b in enumerate(bs):  # a required offset must itself be admissible
        f = b.fixed
        if f is not None and (f < b.lo or f + b.size > inst.hi(i) or f % max(1, b.align)
                              or any(f < x < f + b.size for x in inst.barriers)):
            return Placement([None] * n, False, True, 0, "required offsets",
                             f"{b.name}: its required offset {f} is outside its window, unaligned or straddles a barrier")
    sw = sweep(inst)
    arr = lambda xs: np.asarray(xs, np.int64)
    A = arrays(inst)
    size, align, lo, hi, fixed, conf, barriers = A.size, A.align, A.lo, A.hi, A.fixed, A.conf, A.barriers
    el_start, el_end, el_size = A.el_start, A.el_end, A.el_size
    span_a, span_b = arr([a for a, _ in sw.span]), arr([b for _, b in sw.span])
    ov_ptr, ov_idx = _csr(sw.overlaps)
    sec_ptr, sec_idx = _csr([list(x) for x in sw.sections])
    offset = np.full(n, -1, np.int64)
    minoff = lo.copy()
    floor = np.zeros(len(sw.sections), np.int64)
    total = np.zeros(len(sw.sections), np.int64)
    cut = np.zeros(len(sw.sections) + 1, np.int64)  # unplaced buffers live on both sides of each section start
    for i, (a, b) in enumerate(sw.span):
        total[a:b] += size[i]
        cut[a + 1:b] += 1
    nodes = 0
    for members, s0, s1 in sw.partitions:
        mem = arr(members)
        width = arr([b.last - b.first + 1 for b in bs])
        room = hi - lo
        ranks = []
        for k in orders:  # narrowest window first, then the order's letters (kernel.rerank)
            rank = np.zeros(n, np.int64)
            rerank(mem, rank, arr([LETTERS[c] for c in k]), room, size, width, span_a, span_b, total)
            ranks.append((rank, arr([LETTERS[c] for c in k])))
        limit = max(2 * len(members), 64)
        solved = False
        while not solved:
            for rank, hkey in ranks:
                left = node_budget - nodes
                if left <= 0:
                    return Placement([None] * n, False, False, nodes, "canonical search",
                                     f"the node budget of {node_budget:,} ran out")
                state = (offset.copy(), minoff.copy(), floor.copy(), total.copy(), cut.copy())
                status, used = search(mem, rank, s0, s1, inst.capacity, size, align, lo, hi, fixed, span_a, span_b,
                                      ov_ptr, ov_idx, conf, sec_ptr, sec_idx, barriers, el_start, el_end, el_size,
                                      offset, minoff, floor, total, cut, min(limit, left), hkey, room, width)
                nodes += used
                if status == FOUND:
                    solved = True
                    break
                offset, minoff, floor, total, cut = state
                if status == EXHAUSTED:  # one order's whole tree searched: no placement exists
                    first = min(bs[i].first for i in members)
                    last = max(bs[i].last for i in members)
                    return Placement([None] * n, False, True, nodes, "canonical search",
                                     f"no placement of the {len(members)} buffers live across steps {first}..{last}")
            limit *= 2
        # a placed partition fixes its buffers; later partitions are disjoint in time
    return Placement([int(o) for o in offset], True, True, nodes, "canonical search")
