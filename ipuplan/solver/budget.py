"""Deterministic effort: how much search a solve may spend, counted in units that do not depend on how
busy the machine is (CP-SAT deterministic seconds, z3 resource units, LP solves). The wall clock is only
a guard: when it runs out the answer becomes UNKNOWN; it never changes which answer is given."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


# CP-SAT's linearization level of its max_lp subsolver, the strongest linear relaxation: the precheck
# (`as_max_lp`) and the solves under assumptions (cores and their minimization) run one worker at it. A core of
# vit-small b1 on 8 tiles with 400,000 B held back: 0.23 deterministic seconds and 16 guards at it, 16.2 and 154
# at the default level 1 (bench/core_relaxation.py)
MAX_LP_LINEARIZATION = 2


class WallClockExpired(Exception):
    """The --time-limit ran out before the answer was finished."""


@dataclass
class Budget:
    effort: float  # CP-SAT deterministic seconds this budget may still spend
    deadline: float  # time.perf_counter() after which the answer is UNKNOWN
    spent: float = field(default=0.0)

    @classmethod
    def start(cls, effort: float, seconds: float) -> "Budget":
        return cls(effort, time.perf_counter() + seconds)

    def left(self) -> float:
        return max(0.0, self.effort - self.spent)

    def wall_left(self) -> float:
        return self.deadline - time.perf_counter()

    def spend(self, dtime: float) -> None:
        self.spent += dtime

    def check_wall(self) -> None:
        if self.wall_left() <= 0:
            raise WallClockExpired

    def share(self, fraction: float) -> "Budget":
        """A sub-budget of `fraction` of what is left (same wall deadline); spend it back with `spend`."""
        return Budget(self.left() * fraction, self.deadline)

    def cpsat(self, solver, workers: int, seed: int) -> None:
        """Limits for one CP-SAT run: the deterministic effort left, the wall clock as a stop."""
        p = solver.parameters
        p.random_seed = seed
        p.num_workers = workers
        p.interleave_search = workers > 1  # deterministic for a fixed seed
        p.max_deterministic_time = max(0.01, self.left())
        p.max_time_in_seconds = max(0.01, self.wall_left())


def as_max_lp(solver) -> None:
    """CP-SAT's max_lp subsolver's own parameters (OR-tools 9.15, `GetNamedParameters`): linearization level 2
    and every LP constraint added up front rather than lazily. One worker with both loads the model as max_lp
    does inside the interleaved search, so it refutes whatever max_lp's loading refutes."""
    solver.parameters.linearization_level = MAX_LP_LINEARIZATION
    solver.parameters.add_lp_constraints_lazily = False
