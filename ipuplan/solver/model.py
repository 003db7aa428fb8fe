"""The CP-SAT model under construction: variables by role and named guard literals for every constraint."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from .classes import TileClass
from .problem import Problem


@dataclass(frozen=True)
class Guard:
    """A named enforcement literal: the constraint(s) it guards hold only when it is true."""

    name: str
    family: str
    info: tuple = ()


@dataclass
class ModelCtx:
    p: Problem
    classes: list[TileClass]
    m: cp_model.CpModel = field(default_factory=cp_model.CpModel)
    x: dict[tuple, cp_model.IntVar] = field(default_factory=dict)  # ("impl", op, i) / ("pair", e, a, b)
    home: dict[str, cp_model.IntVar] = field(default_factory=dict)
    tables: dict[int, cp_model.IntVar] = field(default_factory=dict)  # exchange-table bytes per tile class
    rows: set = field(default_factory=set)  # lazily added rows already in the model
    fixed: bool = False  # guards are asserted true as they are created (solving, not core extraction)
    slack: dict = field(default_factory=dict)  # elastic mode: "memory"/"tables"/"fragments" -> IntVar

    def over(self, kind: str):
        """The elastic slack added to capacities of `kind` (0 outside elastic mode)."""
        return self.slack.get(kind, 0)
    xmat: dict = field(default_factory=dict)
    guards: list[tuple[cp_model.IntVar, Guard]] = field(default_factory=list)
    constraints: int = 0

    def guard(self, name: str, family: str, info: tuple = ()) -> cp_model.IntVar:
        g = self.m.NewBoolVar(name)
        self.guards.append((g, Guard(name, family, info)))
        if self.fixed:
            self.m.Add(g == 1)
        return g

    def lit(self, key: tuple):
        if key[0] == "home":
            return self.home[key[1]]
        return self.x[key]

    def weighted(self, terms: dict[tuple, int]):
        """sum(bytes * literal) as one linear expression (fast to build)."""
        keys = list(terms)
        return cp_model.LinearExpr.WeightedSum([self.lit(k) for k in keys], [terms[k] for k in keys])
