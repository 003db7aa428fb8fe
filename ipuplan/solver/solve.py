"""Solve: build the problem and the CP-SAT model, run it, and turn the outcome into a verdict and a plan."""

from __future__ import annotations

import dataclasses
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
from .exchange.tables import add_exchange, missing_rows
from .certificate import build_certificate, choice_record
from .explain import elastic_explanation, minimize_core
from .memory import add_liveness, add_regions
from .memory.liveness import missing_tile_rows
from .model import Guard, ModelCtx
from ..plan import peak, region_usage
from .objective import add_objective, objective_value
from .problem import Problem, build_problem


class Verdict(Enum):
    FIT = "FIT"
    INFEASIBLE = "INFEASIBLE"
    UNKNOWN = "UNKNOWN"
    REJECTED = "REJECTED"  # the beam strategy found no plan: not a proof

    @property
    def exit_code(self) -> int:
        return {"FIT": 0, "INFEASIBLE": 1, "UNKNOWN": 3, "REJECTED": 4}[self.value]


@dataclass(frozen=True)
class SolveOptions:
    batch: int = 1
    support_reserve: int | None = None
    time_limit: float = 120.0
    seed: int = 0
    workers: int = 2
    relative_gap: float = 1e-3
    relays: bool = True
    table_budget: int | None = None  # None: the target's exchange table limit
    explain: bool = True  # on INFEASIBLE: minimize the core and find the least-overflowing plan
    strategy: str = "cpsat"  # or "beam": the seeds' heuristic search over the same catalogue
    beam_width: int = 64


@dataclass
class SolveResult:
    verdict: Verdict
    problem: Problem
    plan: dict | None = None
    core: list[Guard] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    finalists: list[dict] = field(default_factory=list)
    certificate: dict | None = None
    model_rows: set = field(default_factory=set)  # lazily added rows of the model found infeasible


def build_model(p: Problem, classes, *, objective: bool, elastic: bool = False) -> ModelCtx:
    """Every family on a fresh model; with an objective, guards are asserted (solving), else they stay
    free for assumption-based core extraction. Elastic: capacities get slack variables, minimized."""
    ctx = ModelCtx(p, classes, fixed=objective or elastic)
    if elastic:
        big = p.acct.usable + p.acct.table_budget + p.acct.fragment_limit
        ctx.slack = {k: ctx.m.NewIntVar(0, big, f"slack[{k}]") for k in ("memory", "tables", "fragments")}
    add_choice(ctx)
    add_exchange(ctx)
    add_regions(ctx)
    add_liveness(ctx)
    if objective:
        add_objective(ctx)
    if elastic:
        ctx.m.Minimize(sum(ctx.slack.values()))
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
    p = build_problem(graph, target, opts.batch, opts.support_reserve, opts.relays, opts.table_budget)
    if opts.strategy == "beam":
        return solve_beam(p, opts, report, t0)
    return solve_problem(p, opts, report, t0)


def solve_beam(p: Problem, opts: SolveOptions, report, t0: float) -> SolveResult:
    """The beam strategy: finalists as plan bodies, best first; the driver accepts the first that checks."""
    from .beam import beam_search
    classes = tile_classes([p.vectors[i] for i in sorted({cb.vec for cb in p.contribs})], p.target.tiles)
    finals, bstats = beam_search(p, opts.beam_width)
    if report:
        report(f"beam width {opts.beam_width}: {bstats['expanded']} candidates, {bstats['screened_out']} "
               f"screened out, {bstats['finalists']} finalists")
    stats = {"implementations": sum(len(v) for v in p.impls.values()), "steps": len(p.steps),
             "status": "BEAM", "beam": bstats, "wall_seconds": round(time.perf_counter() - t0, 3)}
    if not finals:
        return SolveResult(Verdict.REJECTED, p, stats=stats)
    r = SolveResult(Verdict.FIT, p, plan_body(p, finals[0], None, classes), stats=stats)
    r.finalists = [plan_body(p, f, None, classes) for f in finals]
    return r


def solve_problem(p: Problem, opts: SolveOptions, report: Callable[[str], None] | None = None,
                  t0: float | None = None) -> SolveResult:
    """Solve a built problem: FIT with a plan, INFEASIBLE with CP-SAT's core, or UNKNOWN."""
    t0 = time.perf_counter() if t0 is None else t0
    data = sorted({cb.vec for cb in p.contribs})  # exchange vectors get their own rows (exchange family)
    classes = tile_classes([p.vectors[i] for i in data], p.target.tiles)
    ctx = build_model(p, classes, objective=True)
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
    status, solver, rounds, added, dtime = solve_rounds(ctx, opts, report, t0)
    stats.update(status=solver.StatusName(status), deterministic_time=round(dtime, 3), rounds=rounds,
                 wall_seconds=round(time.perf_counter() - t0, 3), workers=opts.workers, seed=opts.seed)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and added:
        return SolveResult(Verdict.UNKNOWN, p, stats=stats)  # time ran out while rows were still missing
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        plan = extract_plan(ctx, solver, opts)
        return SolveResult(Verdict.FIT, p, plan, stats=stats)
    if status == cp_model.INFEASIBLE:
        return _infeasible(p, classes, opts, ctx.rows, stats, report, t0)
    return SolveResult(Verdict.UNKNOWN, p, stats=stats)


def _infeasible(p: Problem, classes, opts: SolveOptions, rows: set, stats: dict, report, t0: float) -> SolveResult:
    """Core, certificate from it, then (with explain) the minimal core, its certificate and the deficit."""
    def left() -> float:
        return max(5.0, opts.time_limit - (time.perf_counter() - t0))

    stats["verdict_seconds"] = round(time.perf_counter() - t0, 3)
    core, cctx = infeasible_core(p, classes, opts, left(), rows)
    stats["core_seconds"] = round(time.perf_counter() - t0, 3)
    cert = build_certificate(p, classes, core, left()) if core else None
    if cert is not None:
        stats["certificate_at_seconds"] = round(time.perf_counter() - t0, 3)
        if report:
            report(f"certificate: {cert['kind'] or 'none found'} over {len(cert['rows'])} rows "
                   f"({stats['certificate_at_seconds']:.1f} s)")
    if core and cctx is not None and opts.explain:
        full = len(core)
        small, stats["core_minimal"] = minimize_core(cctx, core, left() / 2)
        stats["core_size_before_minimizing"] = full
        if len(small) < full:
            core = small
            again = build_certificate(p, classes, core, left())
            if again["kind"] or cert is None or not cert["kind"]:
                cert = again
    if opts.explain:  # whatever time is left; the verdict stands even if this runs out
        stats["explanation"] = elastic_explanation(p, classes, dataclasses.replace(opts, time_limit=left()))
    stats["wall_seconds"] = round(time.perf_counter() - t0, 3)
    return SolveResult(Verdict.INFEASIBLE, p, core=core, stats=stats, certificate=cert, model_rows=set(rows))


def solve_rounds(ctx: ModelCtx, opts: SolveOptions, report, t0: float):
    """Solve, measure the plan exactly on every tile, add the rows it breaks, repeat until none."""
    p = ctx.p
    dtime, rounds, added = 0.0, 0, 0
    while True:
        rounds += 1
        solver = _params(opts, opts.time_limit - (time.perf_counter() - t0), opts.workers)
        solver.parameters.max_deterministic_time = max(0.01, opts.time_limit - dtime)
        status = solver.Solve(ctx.m, _Progress(report if not ctx.slack else None))
        dtime += solver.deterministic_time
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or time.perf_counter() - t0 > opts.time_limit:
            break
        chosen = chosen_literals(ctx, solver)
        added = missing_rows(ctx, chosen, {k: solver.Value(v) for k, v in ctx.tables.items()},
                             {k: solver.Value(v) for k, v in ctx.slack.items()})
        use = tile_usage(p, chosen)
        tables = exchange_usage(p, chosen)[0]
        added += missing_tile_rows(ctx, use[MemClass.STANDARD] + use[MemClass.INTERLEAVED], tables,
                                   solver.Value(ctx.slack["memory"]) if ctx.slack else 0)
        if not added:
            break
        if report:
            report(f"round {rounds}: added {added} exact tile rows the plan breaks; solving again")
        ctx.m.ClearHints()
        for k, v in ctx.x.items():
            ctx.m.AddHint(v, solver.Value(v))
    return status, solver, rounds, added, dtime


def chosen_literals(ctx: ModelCtx, solver) -> set[tuple]:
    return {k for k, v in ctx.x.items() if solver.Value(v)} | {("home", k) for k, v in ctx.home.items()
                                                             if solver.Value(v)}


def infeasible_core(p: Problem, classes, opts: SolveOptions, seconds: float, rows: set = frozenset()):
    """Re-solve without objective, every guard an assumption; CP-SAT returns a sufficient subset. `rows`:
    the exact tile rows the solving model had gained (they may be what makes it infeasible)."""
    ctx = build_model(p, classes, objective=False)
    _same_rows(ctx, rows)
    ctx.m.AddAssumptions([g for g, _ in ctx.guards])
    solver = _params(opts, seconds, 1)
    status = solver.Solve(ctx.m)
    if status != cp_model.INFEASIBLE:
        return [], None
    idx = {g.Index(): info for g, info in ctx.guards}
    return [idx[i] for i in solver.SufficientAssumptionsForInfeasibility() if i in idx], ctx


def _same_rows(ctx: ModelCtx, rows: set) -> None:
    """The lazily added rows of the model that was found infeasible: the core model is that model (a smaller
    one than with every row, so the core comes quickly; every row is a true constraint either way)."""
    from .exchange.tables import add_budget_row, add_fragment_row, add_table_row
    from .memory.liveness import add_tile_row
    for key in sorted(rows, key=repr):
        if key[0] == "tables":
            add_table_row(ctx, key[1], key[2])
        elif key[0] == "frags":
            add_fragment_row(ctx, key[1])
        elif key[0] == "budget":
            add_budget_row(ctx, key[1])
        elif key[0] == "memory":
            add_tile_row(ctx, key[1], key[2])


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
    chosen = chosen_literals(ctx, solver)
    objective = objective_value(ctx.p, chosen)
    bound = min(objective, int(np.ceil(solver.BestObjectiveBound() - 1e-6)))
    return plan_body(ctx.p, chosen, bound, ctx.classes)


def plan_body(p: Problem, chosen: set[tuple], bound: int | None, classes) -> dict:
    """plan.json's choices, classes, exchange figures, peaks and cycles for a full set of literals."""
    choices = {}
    for op, impls in p.impls.items():
        i = next(i for i in range(len(impls)) if ("impl", op, i) in chosen)
        choices[op] = choice_record(impls[i], i)
    usage = tile_usage(p, chosen)
    std, il = usage[MemClass.STANDARD], usage[MemClass.INTERLEAVED]
    a = p.acct
    tables, frags, by_step = exchange_usage(p, chosen)
    resident = tables[None, :] if a.tables_in_memory else 0
    r0, r1 = region_usage(std, il, a.support + resident, a.region0)
    objective = objective_value(p, chosen)
    clock = p.target.clock_hz
    classes = [{"class": c.index, "representative_tile": c.rep, "tiles": len(c.tiles),
                "stands_for": len(c.covers), "tile_ranges": tile_ranges(c.tiles)} for c in classes]
    return {
        "choices": choices,
        "tile_classes": classes,
        "exchange": exchange_report(p, chosen, tables, frags, by_step),
        "peaks": {"total": peak(std + il + a.support + resident, p.steps), "standard": peak(std, p.steps),
                  "interleaved": peak(il, p.steps), "region0": peak(r0, p.steps), "region1": peak(r1, p.steps)},
        "cycles": {"modeled": objective, "ms": round(objective / clock * 1e3, 4), "best_bound": bound,
                   "gap": round((objective - bound) / objective, 6) if objective and bound is not None else None},
    }


def exchange_usage(p: Problem, chosen: set[tuple]):
    """Per-tile encoded table bytes and fragments of the chosen exchanges, and tables per step."""
    T, n = p.target.tiles, len(p.steps)
    tables, frags = np.zeros(T, np.int64), np.zeros(T, np.int64)
    by_step = np.zeros((2, n, T), np.int64)  # tables, fragments per superstep
    for x in p.xcontribs:
        if x.lit in chosen:
            tables += p.vectors[x.tables]
            frags += p.vectors[x.frags]
            by_step[0, x.step] += p.vectors[x.tables]
            by_step[1, x.step] += p.vectors[x.frags]
    return tables, frags, by_step


def exchange_report(p: Problem, chosen: set[tuple], tables, frags, by_step) -> dict:
    a = p.acct
    tt, ft = int(np.argmax(tables)), int(np.argmax(frags))
    relays = sorted(({"buffer": p.edges[k[1]].buf, "consumer": p.edges[k[1]].consumer, "input": p.edges[k[1]].index}
                     for k in chosen if k[0] == "pair" and k[4] == "relay"),
                    key=lambda d: (d["consumer"], d["input"]))
    return {
        "tables": {"bytes": int(tables[tt]), "tile": tt, "limit": a.table_budget,
                   "margin": a.table_budget - int(tables[tt]),
                   "largest_superstep": p.steps[int(np.argmax(by_step[0, :, tt]))]},
        "fragments": {"count": int(frags[ft]), "tile": ft, "limit": a.fragment_limit,
                      "margin": a.fragment_limit - int(frags[ft]),
                      "largest_superstep": p.steps[int(np.argmax(by_step[1, :, ft]))]},
        "relays": relays,
        "in_memory": a.tables_in_memory,
    }
