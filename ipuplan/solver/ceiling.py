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
from .budget import Budget
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
    """The fastest plan of the choice family alone, or CP-SAT's bound on it when `seconds` (deterministic, as
    the solver's effort: the same answer on a busy machine) run out."""
    ctx = ModelCtx(p, [], fixed=True)
    add_choice(ctx)
    add_objective(ctx)
    s = cp_model.CpSolver()
    Budget.start(seconds, 1e9).cpsat(s, workers, seed)  # no wall-clock stop: the effort decides
    status = run(s, ctx.m)
    if status == cp_model.OPTIMAL:
        return Ceiling(round(s.ObjectiveValue()), True, frozenset(k for k, v in ctx.x.items() if s.Value(v)))
    if status == cp_model.INFEASIBLE:  # the choice family alone has no plan: a tie no two implementations meet
        raise ValueError("the choice family has no plan: no ceiling")
    return Ceiling(max(floor(p), round(s.BestObjectiveBound())), False, frozenset())


@dataclass(frozen=True)
class OpCost:
    """One op of a plan against the same op in the memory-free optimum: cycles over all its runs, bytes its
    own buffers take on their fullest tile with every layer's copy of its parameters."""

    op: str
    chosen: str
    chosen_cycles: int
    chosen_bytes: int
    fastest: str
    fastest_cycles: int
    fastest_bytes: int

    @property
    def extra(self) -> int:
        return self.chosen_cycles - self.fastest_cycles


def memory_costs(p: Problem, picks: dict[str, int], plan_cycles: int, free: Ceiling
                 ) -> tuple[list[OpCost], int, int]:
    """Per op, a plan's implementation (`picks`: op -> index, `plan_cycles` its modeled total) against the free
    optimum's, most extra cycles first; and the cycles of the layout conversions between ops in each (the
    plan's: its total less the constant and its implementations)."""
    from .probe import own_bytes
    if not free.optimal:
        raise ValueError("the free optimum was not reached: no plan to compare with")
    fastest = {k[1]: k[2] for k in free.chosen if k[0] == "impl"}
    counts = {k: v.count for k, v in p.sched.params.items()}
    T = p.target.tiles
    rows = []
    for op, i in picks.items():
        j = fastest[op]
        a, b = p.impls[op][i], p.impls[op][j]
        rows.append(OpCost(op, a.label, p.cycles.get(("impl", op, i), 0), own_bytes(a, T, counts),
                           b.label, p.cycles.get(("impl", op, j), 0), own_bytes(b, T, counts)))
    rows.sort(key=lambda r: (-r.extra, r.op))
    free_pairs = sum(p.cycles.get(k, 0) for k in free.chosen if k[0] != "impl")
    return rows, plan_cycles - p.constant_cycles - sum(r.chosen_cycles for r in rows), free_pairs
