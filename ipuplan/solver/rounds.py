"""The model and its solve loop, shared by `solve` and the explanation: every constraint family on a fresh
model; solving in rounds that add the exact tile rows a plan breaks; the chosen plan's usage per tile."""

from __future__ import annotations

from typing import Callable

import numpy as np
from ortools.sat.python import cp_model

from ..cpsat import run as run_cpsat
from ..layout import MemClass
from .budget import Budget, as_max_lp
from .choice import add_choice
from .exchange.tables import add_exchange, missing_rows
from .memory import add_liveness, add_placement_cuts, add_regions
from .memory.liveness import missing_tile_rows
from .memory.regions import missing_region1_rows
from .model import SLACK_MAX, ModelCtx
from .objective import add_objective
from .problem import Problem

MAX_ROUNDS = 40
PRECHECK = 120.0  # deterministic seconds at most for the one-worker precheck: loading a full-size model took 11.5
# here, where a 10-second cap once left it undecided
PRECHECK_CONFLICTS = 1000  # what ends the precheck once loaded: SigLIP b7's head stage (the slow test) is refuted
# after 371 conflicts, a plan is found after 29 (SigLIP b2); a model that neither does stops here, not at 120 s


def build_model(p: Problem, classes, *, objective: bool, elastic: bool = False, free: bool = False,
                cuts=()) -> ModelCtx:
    """Every family on a fresh model; with an objective (or the slack objective), guards are asserted, else
    they stay free for assumption-based core extraction. Elastic: capacities get slack variables, minimized."""
    ctx = ModelCtx(p, classes, fixed=objective or elastic or free)
    if elastic:
        big = 1 << 40  # a domain, not a capacity: any overflow fits
        ctx.slack = {k: ctx.m.NewIntVar(0, big, f"slack[{k}]") for k in ("memory", "tables", "fragments")}
    if free:
        ctx.free = ctx.m.NewIntVar(0, SLACK_MAX, "free")
    add_choice(ctx)
    add_exchange(ctx)
    add_regions(ctx)
    add_liveness(ctx)
    add_placement_cuts(ctx, cuts)
    if objective:
        add_objective(ctx)
    if elastic:
        ctx.m.Minimize(sum(ctx.slack.values()))
    if free and not objective:
        ctx.m.Maximize(ctx.free)
    return ctx


class _Progress(cp_model.CpSolverSolutionCallback):
    def __init__(self, report: Callable[[str], None] | None, what: str):
        super().__init__()
        self.report = report
        self.what = what

    def on_solution_callback(self) -> None:
        if self.report and self.what == "plan":  # no objective: the probe's first plan
            self.report(f"a plan ({self.WallTime():.1f} s)")
        elif self.report:
            self.report(f"{self.what} {self.ObjectiveValue():,.0f}, bound {self.BestObjectiveBound():,.0f} "
                        f"({self.WallTime():.1f} s)")


def refuted_on_loading(ctx: ModelCtx, opts: SolveOptions, budget: Budget):
    """(refuted, solver): one worker with max_lp's parameters (`as_max_lp`), briefly. OR-tools 9.15's interleaved
    search aborts the whole process (CHECK `heuristics.fixed_search != nullptr`) when its max_lp subsolver proves
    the model infeasible while loading it (SigLIP b7 on 4 chips, the head stage re-solved with 16 KiB of
    headroom; a PE-Core G/14 stage of 13 layers; siglip-base-256 b116 in the compact catalogue, whose root LP is
    infeasible only with max_lp's constraints all added up front); one worker loading the model the same way
    answers such a model instead. It stops after a few conflicts rather than at an effort cap that a large
    model's loading can outlast."""
    solver = cp_model.CpSolver()
    one = budget.share(1.0)
    one.effort = min(one.effort, PRECHECK)
    one.cpsat(solver, 1, opts.seed)
    as_max_lp(solver)
    solver.parameters.max_number_of_conflicts = PRECHECK_CONFLICTS
    status = run_cpsat(solver, ctx.m)
    one.spend(solver.deterministic_time)
    budget.spend(one.spent)
    return status == cp_model.INFEASIBLE, solver


def solve_rounds(ctx: ModelCtx, opts: SolveOptions, report, budget: Budget, what: str, keep_free: bool = False,
                 precheck: bool = False, keep_hint: bool = False):
    """Solve, measure the plan exactly on every tile, add the rows it breaks, repeat until none (or the
    effort runs out). Returns (status, solver, rounds, rows added in the last round). With more than one
    worker, a model not known to have a plan (`precheck`, and every model rows were added to) is first put to
    `refuted_on_loading`. `keep_hint`: presolve keeps every feasible solution, so that a feasible hint survives
    it (its dual reductions otherwise fix literals against the hint and the search starts elsewhere)."""
    p = ctx.p
    rounds, added = 0, 0
    while True:
        rounds += 1
        if opts.workers > 1 and (precheck or rounds > 1):
            refuted, solver = refuted_on_loading(ctx, opts, budget)
            if refuted:
                return cp_model.INFEASIBLE, solver, rounds, added
            budget.check_wall()
        solver = cp_model.CpSolver()
        budget.cpsat(solver, opts.workers, opts.seed)
        solver.parameters.keep_all_feasible_solutions_in_presolve = keep_hint
        if not ctx.slack and not keep_free:
            solver.parameters.relative_gap_limit = opts.relative_gap
        status = run_cpsat(solver, ctx.m, _Progress(report if not ctx.slack else None, what))
        budget.spend(solver.deterministic_time)
        budget.check_wall()
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return status, solver, rounds, added
        chosen = chosen_literals(ctx, solver)
        added = missing_rows(ctx, chosen, {k: solver.Value(v) for k, v in ctx.tables.items()},
                             {k: solver.Value(v) for k, v in ctx.slack.items()})
        use = tile_usage(p, chosen)
        tables = exchange_usage(p, chosen)[0]
        slack = solver.Value(ctx.slack["memory"]) if ctx.slack else 0
        free = solver.Value(ctx.free) if keep_free else 0
        added += missing_tile_rows(ctx, use[MemClass.STANDARD] + use[MemClass.INTERLEAVED], tables, slack, free)
        added += missing_region1_rows(ctx, chosen, use[MemClass.INTERLEAVED], slack, free)
        if not added or rounds >= MAX_ROUNDS or budget.left() <= 0:
            return status, solver, rounds, added
        if report:
            report(f"round {rounds}: added {added} exact tile rows the plan breaks; solving again")
        ctx.m.ClearHints()
        for k, v in ctx.x.items():
            ctx.m.AddHint(v, solver.Value(v))


def chosen_literals(ctx: ModelCtx, solver) -> set[tuple]:
    return {k for k, v in ctx.x.items() if solver.Value(v)}


def tile_usage(p: Problem, chosen: set[tuple]) -> dict[MemClass, np.ndarray]:
    """[steps, tiles] live bytes per memory class for the chosen literals (all tiles, no classes)."""
    T, n = p.target.tiles, len(p.steps)
    out = {mc: np.zeros((n, T), np.int64) for mc in (MemClass.STANDARD, MemClass.INTERLEAVED)}
    for cb in p.contribs:
        if cb.lit in chosen:
            out[cb.mem][cb.first:cb.last + 1] += p.vectors[cb.vec]
    return out


def exchange_usage(p: Problem, chosen: set[tuple]):
    """Per-tile encoded table bytes and pieces of the chosen exchanges, and both per step."""
    T, n = p.target.tiles, len(p.steps)
    tables, frags = np.zeros(T, np.int64), np.zeros(T, np.int64)
    by_step = np.zeros((2, n, T), np.int64)
    for x in p.xcontribs:
        if x.lit in chosen:
            tables += p.vectors[x.tables]
            frags += p.vectors[x.frags]
            by_step[0, x.step] += p.vectors[x.tables]
            by_step[1, x.step] += p.vectors[x.frags]
    return tables, frags, by_step
