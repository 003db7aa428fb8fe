"""Solve: build the problem and the CP-SAT model, run it, and turn the outcome into a verdict and a plan."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import numpy as np
from ortools.sat.python import cp_model

from ..ir.graph import Graph
from ..layout import MemClass
from ..target import Target
from .classes import tile_classes, tile_ranges
from .choice import add_choice
from .memory import add_liveness, add_regions
from .model import Guard, ModelCtx
from ..plan import layout_record, peak, region_usage
from .objective import add_objective, objective_value
from .problem import Problem, build_problem


class Verdict(Enum):
    FIT = "FIT"
    INFEASIBLE = "INFEASIBLE"
    UNKNOWN = "UNKNOWN"

    @property
    def exit_code(self) -> int:
        return {"FIT": 0, "INFEASIBLE": 1, "UNKNOWN": 3}[self.value]


@dataclass(frozen=True)
class SolveOptions:
    batch: int = 1
    support_reserve: int | None = None
    time_limit: float = 120.0
    seed: int = 0
    workers: int = 2
    relative_gap: float = 1e-3


@dataclass
class SolveResult:
    verdict: Verdict
    problem: Problem
    plan: dict | None = None
    core: list[Guard] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


def build_model(p: Problem, classes, *, objective: bool) -> ModelCtx:
    ctx = ModelCtx(p, classes)
    add_choice(ctx)
    add_regions(ctx)
    add_liveness(ctx)
    if objective:
        add_objective(ctx)
    return ctx


class _Progress(cp_model.CpSolverSolutionCallback):
    def __init__(self, report: Callable[[str], None] | None):
        super().__init__()
        self.report = report
        self.count = 0

    def on_solution_callback(self) -> None:
        self.count += 1
        if self.report:
            self.report(f"incumbent {self.ObjectiveValue():,.0f} cycles, bound {self.BestObjectiveBound():,.0f} "
                        f"({self.WallTime():.1f} s)")


def _params(opts: SolveOptions, seconds: float, workers: int) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.random_seed = opts.seed
    s.parameters.num_workers = workers
    s.parameters.interleave_search = workers > 1  # deterministic for a fixed seed
    s.parameters.max_deterministic_time = max(0.01, opts.time_limit)
    s.parameters.max_time_in_seconds = max(0.01, seconds)
    s.parameters.relative_gap_limit = opts.relative_gap
    return s


def solve(graph: Graph, target: Target, opts: SolveOptions,
          report: Callable[[str], None] | None = None) -> SolveResult:
    """Plan `graph` on `target`."""
    t0 = time.perf_counter()
    p = build_problem(graph, target, opts.batch, opts.support_reserve)
    return solve_problem(p, opts, report, t0)


def solve_problem(p: Problem, opts: SolveOptions, report: Callable[[str], None] | None = None,
                  t0: float | None = None) -> SolveResult:
    """Solve a built problem: FIT with a plan, INFEASIBLE with CP-SAT's core, or UNKNOWN."""
    t0 = time.perf_counter() if t0 is None else t0
    classes = tile_classes(p.vectors, p.target.tiles)
    ctx = build_model(p, classes, objective=True)
    for g, _ in ctx.guards:
        ctx.m.Add(g == 1)
    built = time.perf_counter() - t0
    stats = {"literals": len(ctx.x) + len(ctx.home), "constraints": ctx.constraints,
             "tile_classes": len(classes), "implementations": sum(len(v) for v in p.impls.values()),
             "steps": len(p.steps), "build_seconds": round(built, 3)}
    remaining = opts.time_limit - built
    if report:
        report(f"model: {stats['implementations']} implementations, {stats['literals']} literals, "
               f"{stats['constraints']} constraints, {len(classes)} tile classes, {len(p.steps)} steps "
               f"(built in {built:.1f} s)")
    if remaining <= 0:
        stats["status"] = "TIME_LIMIT_BEFORE_SOLVE"
        return SolveResult(Verdict.UNKNOWN, p, stats=stats)
    solver = _params(opts, remaining, opts.workers)
    cb = _Progress(report)
    status = solver.Solve(ctx.m, cb)
    stats.update(status=solver.StatusName(status), deterministic_time=round(solver.deterministic_time, 3),
                 wall_seconds=round(time.perf_counter() - t0, 3), workers=opts.workers, seed=opts.seed)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        plan = extract_plan(ctx, solver, opts)
        return SolveResult(Verdict.FIT, p, plan, stats=stats)
    if status == cp_model.INFEASIBLE:
        core = infeasible_core(p, classes, opts, max(1.0, opts.time_limit - (time.perf_counter() - t0)))
        return SolveResult(Verdict.INFEASIBLE, p, core=core, stats=stats)
    return SolveResult(Verdict.UNKNOWN, p, stats=stats)


def infeasible_core(p: Problem, classes, opts: SolveOptions, seconds: float) -> list[Guard]:
    """Re-solve without objective, every guard an assumption; CP-SAT returns a sufficient subset."""
    ctx = build_model(p, classes, objective=False)
    ctx.m.AddAssumptions([g for g, _ in ctx.guards])
    solver = _params(opts, seconds, 1)
    status = solver.Solve(ctx.m)
    if status != cp_model.INFEASIBLE:
        return []
    idx = {g.Index(): info for g, info in ctx.guards}
    return [idx[i] for i in solver.SufficientAssumptionsForInfeasibility() if i in idx]


def tile_usage(p: Problem, chosen: set[tuple]) -> dict[MemClass, np.ndarray]:
    """[steps, tiles] live bytes per memory class for the chosen literals (all tiles, no classes)."""
    T, n = p.target.tiles, len(p.steps)
    out = {mc: np.zeros((n, T), np.int64) for mc in MemClass}
    for cb in p.contribs:
        if cb.lit in chosen:
            out[cb.mem][cb.first:cb.last + 1] += p.vectors[cb.vec]
    return out


def extract_plan(ctx: ModelCtx, solver: cp_model.CpSolver, opts: SolveOptions) -> dict:
    """The plan's body: every choice, peaks by region (tile and step), modeled cycles, bound and gap."""
    p = ctx.p
    chosen = {k for k, v in ctx.x.items() if solver.Value(v)} | {("home", k) for k, v in ctx.home.items()
                                                                 if solver.Value(v)}
    choices = {}
    for op, impls in p.impls.items():
        i = next(i for i in range(len(impls)) if ("impl", op, i) in chosen)
        im = impls[i]
        rec = {"impl": i, "label": im.label, **{k: v for k, v in im.fields.items() if k != "layout"}}
        rec["output"] = layout_record(im.out)
        choices[op] = rec
    usage = tile_usage(p, chosen)
    std, il = usage[MemClass.STANDARD], usage[MemClass.INTERLEAVED]
    a = p.acct
    r0, r1 = region_usage(std, il, a.support, a.region0)
    objective = objective_value(ctx, chosen)
    bound = min(objective, int(np.ceil(solver.BestObjectiveBound() - 1e-6)))
    clock = p.target.clock_hz
    classes = [{"class": c.index, "representative_tile": c.rep, "tiles": len(c.tiles),
                "stands_for": len(c.covers), "tile_ranges": tile_ranges(c.tiles)} for c in ctx.classes]
    return {
        "choices": choices,
        "tile_classes": classes,
        "peaks": {"total": peak(std + il + a.support, p.steps), "standard": peak(std, p.steps),
                  "interleaved": peak(il, p.steps), "region0": peak(r0, p.steps), "region1": peak(r1, p.steps)},
        "cycles": {"modeled": objective, "ms": round(objective / clock * 1e3, 4), "best_bound": bound,
                   "gap": round((objective - bound) / objective, 6) if objective else 0.0},
    }


def _runs(values: np.ndarray) -> list[dict]:
    """Per-tile values as runs of equal values: [{"tiles": "a-b, ...", "bytes": v}]."""
    out = []
    for v in np.unique(values):
        out.append({"tiles": tile_ranges(np.flatnonzero(values == v), limit=10 ** 6), "bytes": int(v)})
    return out
