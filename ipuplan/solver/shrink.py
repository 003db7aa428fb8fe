"""Deletion-based minimization of a conflicting set, shared by every core and certificate search."""

from __future__ import annotations

from typing import Callable, TypeVar

from ..cpsat import run as run_cpsat
from .budget import MAX_LP_LINEARIZATION

T = TypeVar("T")


def shrink(keep: list[T], conflicts: Callable[[list[T]], list[T] | bool | None],
           chunked: bool = True) -> tuple[list[T], bool]:
    """Delete members (chunks halving down to single members, or one at a time) while the rest still
    conflicts. `conflicts(subset)` answers None when it cannot tell (time ran out), False when the subset
    is satisfiable, else the subset trimmed to a conflicting part of it. Returns the smaller set and whether
    the deletion finished, in which case removing any one member leaves a satisfiable set."""
    chunk = max(1, len(keep) // 2) if chunked else 1
    while True:
        i = 0
        while i < len(keep):
            trial = keep[:i] + keep[i + chunk:]
            r = conflicts(trial) if trial else False
            if r is None:
                return keep, False
            if r is False:
                i += chunk
            else:
                keep = list(r)
        if chunk == 1:
            return keep, True
        chunk = max(1, chunk // 2)


def cpsat_conflicts(m, lit_of: dict, budget):
    """`conflicts` for members guarded by assumption literals (`lit_of[member]`) of a CP-SAT model: one
    worker (assumptions force it), trimmed to CP-SAT's sufficient assumptions; each solve spends the
    deterministic effort of `budget` (a solver.budget.Budget)."""
    from ortools.sat.python import cp_model

    member_of = {lit.Index(): k for k, lit in lit_of.items()}

    def conflicts(subset: list):
        budget.check_wall()
        if budget.left() <= 0:
            return None
        m.ClearAssumptions()
        m.AddAssumptions([lit_of[k] for k in subset])
        s = cp_model.CpSolver()
        budget.cpsat(s, 1, 0)
        s.parameters.linearization_level = MAX_LP_LINEARIZATION
        st = run_cpsat(s, m)
        budget.spend(s.deterministic_time)
        if st == cp_model.INFEASIBLE:
            need = {member_of[i] for i in s.SufficientAssumptionsForInfeasibility() if i in member_of}
            sub = [k for k in subset if k in need]
            return sub if sub and len(sub) < len(subset) else subset
        return False if st in (cp_model.FEASIBLE, cp_model.OPTIMAL) else None

    return conflicts
