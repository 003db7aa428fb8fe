"""The second exact engine: one tile's placement as a CP-SAT model (address x time no-overlap), for the
instances the canonical search leaves undecided within its node budget.

Offsets are multiples of their alignment inside their window (or fixed); a buffer whose window spans a
barrier lies wholly below or wholly above it; buffers live at once do not overlap (AddNoOverlap2D over
address and step intervals); conflicting buffers live at once, when in the same element grid, take disjoint
element ranges. Complete: INFEASIBLE from CP-SAT is a proof that no placement exists. The search is led by
the bottom-left rule (the buffer whose lowest admissible offset is lowest goes there first, as in first fit
and the canonical search), CP-SAT's propagation and learning undoing what does not fit. The solver runs on a
deterministic time limit, one worker, a fixed seed: the same instance gives the same answer.
"""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from ...cpsat import run as run_cpsat
from .problem import Instance, Placement


def place_cpsat(inst: Instance, deterministic_seconds: float = 20.0, deadline: float | None = None,
                bottom_left: bool = True) -> Placement:
    """Place `inst` within `deterministic_seconds` (`deadline`, a time.perf_counter(), stops it early: undecided).
    `bottom_left` leads CP-SAT's search with the bottom-left rule; False leaves the search to CP-SAT (the
    engine before the rule, kept for comparison: bench/placement_cpsat.py)."""
    m = cp_model.CpModel()
    bs = inst.buffers
    n = len(bs)
    off, xs, ys = [], [], []
    for i, b in enumerate(bs):
        hi = inst.hi(i)
        a = max(1, b.align)
        f = b.fixed
        if -(-b.lo // a) * a > hi - b.size or (f is not None and (f < b.lo or f + b.size > hi or f % a or any(
                f < x < f + b.size for x in inst.barriers))):
            return Placement([None] * n, False, True, 0, "CP-SAT", f"{b.name}: no admissible offset in its window")
        if b.fixed is not None:
            o = m.NewConstant(b.fixed)
        else:
            k = m.NewIntVar(-(-b.lo // a), (hi - b.size) // a, f"k{i}")
            o = m.NewIntVar(b.lo, hi - b.size, f"o{i}")
            m.Add(o == a * k)
        off.append(o)
        for x in inst.barriers:  # wholly below or wholly above
            if b.lo < x and hi > x and b.size and b.fixed is None:
                below = m.NewBoolVar(f"below{i}@{x}")
                m.Add(o + b.size <= x).OnlyEnforceIf(below)
                m.Add(o >= x).OnlyEnforceIf(below.Not())
        xs.append(m.NewFixedSizeIntervalVar(o, b.size, f"x{i}"))
        ys.append(m.NewFixedSizeIntervalVar(b.first, b.last - b.first + 1, f"y{i}"))
    sized = [i for i in range(n) if bs[i].size]
    m.AddNoOverlap2D([xs[i] for i in sized], [ys[i] for i in sized])
    for i, j in sorted(inst.conflicts):
        a, b = bs[i], bs[j]
        if not (a.first <= b.last and b.first <= a.last) or not a.size or not b.size:
            continue
        for g, e in enumerate(inst.elements):
            # both in grid g -> disjoint element ranges; a buffer outside the grid is free of this pair
            ins, first, last = [], [], []
            for k, bb in ((i, a), (j, b)):
                inside = m.NewBoolVar(f"in{k}g{g}p{i},{j}")  # exactly when the buffer lies in the grid
                below, above = m.NewBoolVar(f"lo{k}g{g}p{i},{j}"), m.NewBoolVar(f"hi{k}g{g}p{i},{j}")
                m.Add(off[k] >= e.start).OnlyEnforceIf(inside)
                m.Add(off[k] + bb.size <= e.end).OnlyEnforceIf(inside)
                m.Add(off[k] + bb.size <= e.start).OnlyEnforceIf(below)
                m.Add(off[k] >= e.end).OnlyEnforceIf(above)
                m.AddBoolOr([inside, below, above])
                lo_el = m.NewIntVar(-(1 << 40), 1 << 40, f"e0_{k}_{g}_{i}_{j}")
                hi_el = m.NewIntVar(-(1 << 40), 1 << 40, f"e1_{k}_{g}_{i}_{j}")
                m.AddDivisionEquality(lo_el, off[k] - e.start + e.size * (1 << 20), e.size)
                m.AddDivisionEquality(hi_el, off[k] + bb.size - 1 - e.start + e.size * (1 << 20), e.size)
                ins.append(inside)
                first.append(lo_el)
                last.append(hi_el)
            order = m.NewBoolVar(f"ord{i},{j}g{g}")
            m.Add(last[0] < first[1]).OnlyEnforceIf([ins[0], ins[1], order])
            m.Add(last[1] < first[0]).OnlyEnforceIf([ins[0], ins[1], order.Not()])
    if bottom_left:  # a search order only: CP-SAT stays complete, its INFEASIBLE a proof
        # the buffer that can go lowest goes there first. On full tiles (160-190 buffers, 2 KB free at the fullest
        # step) CP-SAT's own search leaves groups undecided after 8 deterministic seconds that this places in 0.2
        m.AddDecisionStrategy(off, cp_model.CHOOSE_LOWEST_MIN, cp_model.SELECT_MIN_VALUE)
    s = cp_model.CpSolver()
    s.parameters.max_deterministic_time = deterministic_seconds
    s.parameters.num_workers = 1
    s.parameters.random_seed = 0
    if deadline is not None:
        s.parameters.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
    st = run_cpsat(s, m)
    work = float(s.deterministic_time)
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Placement([int(s.Value(o)) for o in off], True, True, 0, "CP-SAT", work=work)
    if st == cp_model.MODEL_INVALID:
        raise RuntimeError(f"placement CP-SAT model invalid: {m.Validate()}")
    if st == cp_model.INFEASIBLE:
        return Placement([None] * n, False, True, 0, "CP-SAT", f"CP-SAT proves no placement of the {n} buffers",
                         work=work)
    return Placement([None] * n, False, False, 0, "CP-SAT",
                     f"CP-SAT undecided within {deterministic_seconds:g} deterministic seconds", work=work)
