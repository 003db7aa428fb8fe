"""The CP-SAT model under construction: variables by role and named guard literals for every constraint."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from .classes import TileClass
from .problem import Problem

SLACK_MAX = 1 << 16  # the slack objective maximizes the smallest free bytes per tile up to this much


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
    x: dict[tuple, cp_model.IntVar] = field(default_factory=dict)  # ("impl", op, i) / ("pair", e, a, b, mode)
    tables: dict[int, cp_model.IntVar] = field(default_factory=dict)  # exchange-table bytes per tile class
    alloc: dict = field(default_factory=dict)  # class index or ("tile", t) -> region-0 bytes the tables occupy
    rows: set = field(default_factory=set)  # lazily added rows already in the model
    fixed: bool = False  # guards are asserted true as they are created (solving, not core extraction)
    slack: dict = field(default_factory=dict)  # elastic mode: "memory"/"tables"/"fragments" -> IntVar
    free: cp_model.IntVar | None = None  # slack objective: free bytes every memory row keeps
    xmat: dict = field(default_factory=dict)
    guards: list[tuple[cp_model.IntVar, Guard]] = field(default_factory=list)
    constraints: int = 0

    def over(self, kind: str):
        """The elastic slack added to capacities of `kind` (0 outside elastic mode)."""
        return self.slack.get(kind, 0)

    def kept_free(self):
        """Free bytes a memory row must leave (the slack objective's variable, else 0)."""
        return self.free if self.free is not None else 0

    def guard(self, name: str, family: str, info: tuple = ()):
        """The enforcement literal of a family's constraint: a fresh named literal for core extraction; when
        solving (guards asserted), no literal at all (an empty enforcement list: always enforced)."""
        if self.fixed:
            return []
        g = self.m.NewBoolVar(name)
        self.guards.append((g, Guard(name, family, info)))
        return g

    def lit(self, key: tuple):
        return self.x[key]

    def weighted(self, terms: dict[tuple, int]):
        """sum(bytes * literal) as one linear expression (fast to build)."""
        keys = list(terms)
        return self.weighted_sum([self.lit(k) for k in keys], [terms[k] for k in keys])

    @staticmethod
    def weighted_sum(lits: list, coeffs: list[int]):
        """sum(bytes * literal) of literals already looked up (a row built from arrays)."""
        return cp_model.LinearExpr.WeightedSum(lits, coeffs)

    @property
    def most_tables(self) -> int:
        """More exchange-table bytes than any selection can put on one tile: a domain bound that is never a
        capacity (capacities live only in guarded constraints)."""
        if "most_tables" not in self.xmat:
            self.xmat["most_tables"] = int(sum(int(self.p.vectors[x.tables].max()) for x in self.p.xcontribs)) + 1
        return self.xmat["most_tables"]

    def resident(self, key, terms: dict[tuple, int]):
        """sum(bytes * literal) of a class's whole-program contributions, as one variable defined once per key
        (its domain is the sum of every coefficient: a true bound of any selection, never a capacity)."""
        if not terms:
            return 0
        if key not in self.xmat:
            v = self.m.NewIntVar(0, int(sum(terms.values())), f"resident{key}")
            self.m.Add(v == self.weighted(terms))
            self.xmat[key] = v
        return self.xmat[key]

    def table_alloc(self, key, tables) -> cp_model.IntVar | int:
        """Region-0 bytes occupied by exchange tables `tables` (an expression): whole elements covering the
        tables and the fetch guard (defined once per key)."""
        a = self.p.acct
        if not a.tables_in_memory:
            return 0
        if key not in self.alloc:
            big = self.most_tables
            cap = int(a.table_alloc(big))
            v = self.m.NewIntVar(0, cap, f"table_alloc[{key}]")
            if a.table_element:  # no tables, no elements; else whole elements covering tables + guard
                e = self.m.NewIntVar(0, cap // a.table_element, f"table_elements[{key}]")
                used = self.m.NewBoolVar(f"tables_used[{key}]")
                self.m.Add(tables <= big * used)
                self.m.Add(v == a.table_element * e)
                self.m.Add(v >= tables + a.table_guard * used)
            else:
                self.m.Add(v >= tables)
            self.alloc[key] = v
        return self.alloc[key]
