"""The catalogue's ceiling: lower bounds on the modeled cycles of every plan, whatever memory it would need.

Two bounds on `objective.objective_value` over every plan the choice family admits:
- `floor`: the constant, each op's cheapest implementation and each edge's cheapest layout pair; a plan picks
  one of each, so none costs less (sums, no solver);
- `free_optimum`: CP-SAT on the `choice` family and the objective alone, no memory, table or fragment family.
  Dropping families only enlarges the feasible set, so its optimum bounds every plan too; it is CP-SAT's proof
  (not re-checked), never below the floor. When the time runs out first, CP-SAT's best bound is returned.

What they bound is the catalogue at its prices: the distance from the ceiling to the fastest FIT is what
memory costs; a plan outside the catalogue may be faster than either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

from ..codelets import Cost
from ..cpsat import run
from .choice import add_choice
from .model import ModelCtx
from .objective import add_objective
from .problem import Problem


@dataclass(frozen=True)
class Ceiling:
    """The fewest cycles any plan can model; `optimal` False: a bound only (`chosen` then may be empty)."""

    cycles: int
    optimal: bool
    chosen: frozenset

    def split(self, p: Problem) -> Cost:
        """Compute, exchange and sync of the chosen literals (the constant cycles are not split)."""
        total = Cost()
        for k in self.chosen:
            total = total + p.parts.get(k, Cost())
        return total


def floor(p: Problem) -> int:
    """The constant cycles plus every op's and every edge's cheapest literal."""
    total = p.constant_cycles
    for op, impls in p.impls.items():
        total += min(p.cycles.get(("impl", op, i), 0) for i in range(len(impls)))
    for e in p.edges:
        if e.pairs:
            total += min(p.cycles.get(pr.lit, 0) for pr in e.pairs)
    return total


def free_optimum(p: Problem, seconds: float = 120.0, workers: int = 2, seed: int = 0) -> Ceiling:
    """The fastest plan of the choice family alone, or CP-SAT's bound on it when `seconds` run out."""
    ctx = ModelCtx(p, [], fixed=True)
    add_choice(ctx)
    add_objective(ctx)
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = seconds
    s.parameters.num_workers = workers
    s.parameters.random_seed = seed
    status = run(s, ctx.m)
    if status == cp_model.OPTIMAL:
        return Ceiling(round(s.ObjectiveValue()), True, frozenset(k for k, v in ctx.x.items() if s.Value(v)))
    if status == cp_model.INFEASIBLE:  # the choice family alone has no plan: a tie no two implementations meet
        raise ValueError("the choice family has no plan: no ceiling")
    return Ceiling(max(floor(p), round(s.BestObjectiveBound())), False, frozenset())
