"""The cheap placements: first fit and best fit in static orders, and a placed neighbour's address order replayed
by first fit. Each places every buffer of an instance or gives up; none is ever a proof (search.py, cpsat.py).

First fit puts each buffer at the lowest address its window, alignment, the region boundary and the buffers
already placed allow. Best fit (TFLite's greedy-by-size arena planner, extended for windows and elements)
puts it where the gap it leaves below the next buffer above is smallest, which keeps large holes whole for
later buffers. A replay takes another tile's placement and places this tile's buffers, by first fit, in the
order of that placement's addresses: tiles of one plan differ in a few sizes, and gravity in a known good order
mostly lands where the neighbour did (a canonical placement is exactly its address order under gravity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .kernel import _element_end
from .problem import Instance, Placement

ORDERS = ("window, then size", "window, then area", "window, then start")
NEIGHBOURS = 4  # replays each unplaced group tries per round, nearest first
MAX_TRIES = 64  # replays per group in all: about 1 ms each, so a plan's replays stay within seconds


@dataclass(frozen=True)
class _Arrays:
    size: np.ndarray
    align: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    fixed: np.ndarray
    first: np.ndarray
    last: np.ndarray
    conf: np.ndarray
    barriers: np.ndarray
    el_start: np.ndarray
    el_end: np.ndarray
    el_size: np.ndarray


def arrays(inst: Instance) -> _Arrays:
    """The instance as the kernels' int64 arrays (conflicts as a symmetric matrix)."""
    bs = inst.buffers
    n = len(bs)
    arr = lambda xs: np.asarray(xs, np.int64)
    conf = np.zeros((n, n), np.bool_)
    for i, j in inst.conflicts:
        conf[i, j] = conf[j, i] = True
    el = inst.elements
    return _Arrays(arr([b.size for b in bs]), arr([max(1, b.align) for b in bs]), arr([b.lo for b in bs]),
                   arr([inst.hi(i) for i in range(n)]), arr([-1 if b.fixed is None else b.fixed for b in bs]),
                   arr([b.first for b in bs]), arr([b.last for b in bs]), conf, arr(inst.barriers),
                   arr([e.start for e in el]), arr([e.end for e in el]), arr([e.size for e in el]))


def _orders(inst: Instance) -> list[np.ndarray]:
    bs = inst.buffers
    room = [inst.hi(i) - b.lo for i, b in enumerate(bs)]  # fixed buffers first, then the narrowest windows
    keys = {
        "window, then size": lambda i: (bs[i].fixed is None, room[i], -bs[i].size, i),
        "window, then area": lambda i: (bs[i].fixed is None, room[i], -bs[i].size * (bs[i].last - bs[i].first + 1), i),
        "window, then start": lambda i: (bs[i].fixed is None, room[i], bs[i].first, -bs[i].size, i),
    }
    return [np.array(sorted(range(len(bs)), key=keys[k]), np.int64) for k in ORDERS]


@njit(cache=True)
def _admissible(o, i, capacity, size, align, lo, hi, fixed, barriers):
    """The lowest offset at or above `o` that buffer i's window, alignment, barriers and fixed offset allow,
    or -1."""
    a = align[i]
    o = max(o, lo[i])
    if fixed[i] >= 0:
        if o > fixed[i]:
            return -1
        o = fixed[i]
    o = ((o + a - 1) // a) * a
    for x in barriers:
        if o < x < o + size[i]:
            o = x
    o = ((o + a - 1) // a) * a
    if fixed[i] >= 0 and o != fixed[i]:
        return -1
    if o + size[i] > hi[i] or o + size[i] > capacity:
        return -1
    return o


@njit(cache=True)
def _extent(j, offset, size, apart, el_start, el_end, el_size):
    """[bottom, top) that placed buffer j keeps from another: its bytes, or its whole elements when the two must
    be apart."""
    lo_j = offset[j]
    top = offset[j] + size[j]
    if apart:
        top = _element_end(offset[j], size[j], el_start, el_end, el_size)
        for g in range(el_start.shape[0]):
            if el_start[g] <= offset[j] < el_end[g]:
                lo_j = el_start[g] + ((offset[j] - el_start[g]) // el_size[g]) * el_size[g]
    return lo_j, top


@njit(cache=True)
def _fits(o, i, cnt, bot, top, apart, size, el_start, el_end, el_size):
    """(the highest top among the `cnt` obstacles buffer i at o hits, -1 if none; the lowest obstacle bottom at or
    above its end)."""
    end_i = o + size[i]
    el_i = _element_end(o, size[i], el_start, el_end, el_size)
    hit = -1
    above = 1 << 62
    for d in range(cnt):
        e = el_i if apart[d] else end_i
        if o < top[d] and bot[d] < e:
            hit = max(hit, top[d])
        elif bot[d] >= e and bot[d] < above:
            above = bot[d]
    return hit, above


@njit(cache=True)
def fit_kernel(order, best, capacity, size, align, lo, hi, fixed, first, last, conf, barriers, el_start, el_end,
               el_size, offset):
    """Each buffer in `order` at the lowest admissible address clear of the buffers placed before it and live
    at once (conflicting ones by whole elements); with `best`, at the admissible address just above one of them
    (or its window's bottom) that leaves the smallest gap below the next one above, the lowest on ties.
    Returns 1 if all were placed."""
    n = order.shape[0]
    bot = np.empty(n, np.int64)
    top = np.empty(n, np.int64)
    apart = np.empty(n, np.bool_)
    for t in range(n):
        i = order[t]
        cnt = 0
        for u in range(t):
            j = order[u]
            if first[j] > last[i] or first[i] > last[j] or size[j] == 0 or size[i] == 0:
                continue
            bot[cnt], top[cnt] = _extent(j, offset, size, conf[i, j], el_start, el_end, el_size)
            apart[cnt] = conf[i, j]
            cnt += 1
        choice = -1
        if not best:
            o = _admissible(lo[i], i, capacity, size, align, lo, hi, fixed, barriers)
            while o >= 0:
                bump, _ = _fits(o, i, cnt, bot, top, apart, size, el_start, el_end, el_size)
                if bump < 0:
                    choice = o
                    break
                nxt = _admissible(bump, i, capacity, size, align, lo, hi, fixed, barriers)
                if nxt <= o:
                    break
                o = nxt
        else:
            gap_best = 1 << 62
            for c in range(cnt + 1):
                o = _admissible(lo[i] if c == cnt else top[c], i, capacity, size, align, lo, hi, fixed, barriers)
                if o < 0:
                    continue
                hit, above = _fits(o, i, cnt, bot, top, apart, size, el_start, el_end, el_size)
                if hit >= 0:
                    continue
                end_i = o + size[i]
                gap = min(above, hi[i], capacity) - end_i
                for x in barriers:  # a region boundary closes the gap
                    if end_i <= x and x - end_i < gap:
                        gap = x - end_i
                if gap < gap_best or (gap == gap_best and o < choice):
                    gap_best = gap
                    choice = o
        if choice < 0:
            return 0
        offset[i] = choice
    return 1


def _run(inst: Instance, orders: list[np.ndarray], best: bool) -> tuple[int, list[int]] | None:
    """The first of `orders` that places everything (its index and the offsets), or None."""
    a = arrays(inst)  # a fixed offset outside its window is refused by _admissible
    for k, order in enumerate(orders):
        offset = np.full(len(inst.buffers), -1, np.int64)
        if fit_kernel(order, best, inst.capacity, a.size, a.align, a.lo, a.hi, a.fixed, a.first, a.last, a.conf,
                      a.barriers, a.el_start, a.el_end, a.el_size, offset):
            return k, [int(o) for o in offset]
    return None


def _static(inst: Instance, best: bool) -> Placement | None:
    r = _run(inst, _orders(inst), best)
    return None if r is None else Placement(r[1], True, True, 0, f"{'best' if best else 'first'} fit ({ORDERS[r[0]]})")


def first_fit(inst: Instance) -> Placement | None:
    """The first of the ORDERS that places everything by first fit, or None."""
    return _static(inst, False)


def best_fit(inst: Instance) -> Placement | None:
    """The first of the ORDERS that places everything by best fit, or None."""
    return _static(inst, True)


def replay(inst: Instance, like: Instance, offsets: list[int], source: str) -> Placement | None:
    """First fit in the address order of `like` placed at `offsets` (buffers matched by name; fixed ones first,
    those `like` lacks last, largest first), or None."""
    at = {b.name: o for b, o in zip(like.buffers, offsets)}
    bs = inst.buffers
    never = 1 << 62
    order = np.array(sorted(range(len(bs)), key=lambda i: (bs[i].fixed is None, at.get(bs[i].name, never),
                                                           -bs[i].size, i)), np.int64)
    r = _run(inst, [order], False)
    return None if r is None else Placement(r[1], True, True, 0, f"replay of {source}")


class Neighbours:
    """Which placed instances to replay on an unplaced one: nearest by the bytes their same-named buffers differ
    (a buffer one lacks counts whole), each pair tried once."""

    def __init__(self, insts: list[Instance], sources: list[str]):
        names: dict[str, int] = {}
        for inst in insts:
            for b in inst.buffers:
                names.setdefault(b.name, len(names))
        self.sizes = np.zeros((len(insts), max(1, len(names))), np.int64)
        for k, inst in enumerate(insts):
            self.sizes[k, [names[b.name] for b in inst.buffers]] = [b.size for b in inst.buffers]
        self.insts, self.sources = insts, sources
        self.tried = np.zeros((len(insts), len(insts)), np.bool_)

    def spread(self, final: list[Placement | None]) -> int:
        """Replay placed instances on the unplaced ones, NEIGHBOURS per round each (MAX_TRIES in all), nearest
        first, until a round places none; fills `final` and returns how many it placed."""
        placed_here = 0
        while True:
            done = np.array([r is not None and r.placed for r in final], np.bool_)
            new = 0
            for k in np.flatnonzero(~done & np.array([r is None or not r.proven for r in final], np.bool_)):
                cand = np.flatnonzero(done & ~self.tried[k])
                if not len(cand) or self.tried[k].sum() >= MAX_TRIES:
                    continue
                dist = np.abs(self.sizes[cand] - self.sizes[k]).sum(axis=1)
                for s in cand[np.lexsort((cand, dist))][:NEIGHBOURS]:
                    self.tried[k, s] = True
                    r = replay(self.insts[k], self.insts[s], final[s].offsets, self.sources[s])
                    if r is not None:
                        final[k] = r
                        new += 1
                        break
            placed_here += new
            if not new:
                return placed_here
