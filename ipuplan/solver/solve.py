"""Solve: build the problem and the CP-SAT model, run it, and turn the outcome into a verdict and a plan.

Every search decision runs on deterministic effort (ipuplan/solver/budget.py): the same inputs and seed give
the same plan or certificate on any machine load. Phase 1 minimizes modeled cycles; phase 2 keeps the
cycles within the optimality gap and maximizes the smallest free bytes of any tile at any step. After each
solve the plan is measured exactly on every tile and the rows it breaks join the model; a FIT is returned
only when no row is missing.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import numpy as np
from ortools.sat.python import cp_model

from ..bounds import MachineBound, machine_bound
from ..catalogue import Catalogue
from ..cpsat import run as run_cpsat
from ..ir.graph import Graph
from ..layout import MemClass
from ..plan import peak, region_usage
from ..target import Target
from .budget import MAX_LP_LINEARIZATION, Budget, WallClockExpired, as_max_lp
from .certificate import build_certificate, choice_record
from .classes import problem_classes, tile_ranges
from .explain import elastic_explanation, minimize_core
from .probe import probe
from .rounds import build_model, chosen_literals, exchange_usage, solve_rounds, tile_usage
from .model import Guard, ModelCtx
from .objective import objective_expr, objective_value
from .problem import Problem, build_problem
from .profile import breakdown

SLACK_EFFORT = 10.0  # deterministic seconds at most for the slack phase


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
    time_limit: float = 600.0  # wall-clock guard: an unfinished answer becomes UNKNOWN
    effort: float = 120.0  # deterministic seconds of search for the verdict and its plan or certificate
    seed: int = 0
    workers: int = 2
    relative_gap: float = 1e-3
    relays: bool | None = None  # None: the catalogue's default (on for grid, off for shaped; `use_relays`)
    table_budget: int | None = None  # None: the target's exchange table limit
    headroom: int = 0  # bytes per tile left free on top of the model
    slack: bool = True  # second objective: the largest smallest free bytes within the gap
    slack_effort: float = SLACK_EFFORT  # deterministic seconds for it at most; 0 keeps the cycle-optimal plan
    explain: bool = True  # on INFEASIBLE: minimize the core and find the least-overflowing plan
    strategy: str = "cpsat"  # or "beam": the seeds' heuristic search over the same catalogue
    cuts: tuple = ()  # placement cuts: (tile, literals never chosen together)
    beam_width: int = 64
    catalogue: Catalogue = Catalogue.SHAPED  # the implementation space (`--catalogue`)
    hint: tuple[tuple[str, str], ...] = ()  # (op, implementation label): a plan the probe starts from (`probe`)

    @property
    def use_relays(self) -> bool:
        """Relays (gather onto relay tiles, then multicast) are a choice per replicated edge. The grid catalogue
        offers them by default (its staged weights needed them under the table budget); the shaped one does
        not (its plans keep tables far below the budget, and relay pairs triple the search)."""
        return self.relays if self.relays is not None else self.catalogue is Catalogue.GRID

    def problem(self, graph: Graph, target: Target) -> Problem:
        """The problem a solve with these options builds for `graph` on `target`."""
        return build_problem(graph, target, self.batch, self.support_reserve, self.use_relays, self.table_budget,
                             self.headroom, self.catalogue)


@dataclass
class SolveResult:
    verdict: Verdict
    problem: Problem | None
    plan: dict | None = None
    core: list[Guard] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    finalists: list[dict] = field(default_factory=list)
    certificate: dict | None = None
    model_rows: set = field(default_factory=set)  # lazily added rows of the model found infeasible
    reason: str = ""  # why UNKNOWN
    machine: MachineBound | None = None
    chosen: set = field(default_factory=set)  # the FIT plan's literals
    placement: object = None  # the FIT plan's placement on every tile (backend.placement.tiles.PlanPlacement)
    alternates: list = field(default_factory=list)  # (literals, () -> plan body): slower plans exact on every tile


def solve(graph: Graph, target: Target, opts: SolveOptions,
          report: Callable[[str], None] | None = None, deadline: float | None = None) -> SolveResult:
    """Plan `graph` on `target`; `deadline` (time.perf_counter()), when given, is the job's wall clock in place
    of opts.time_limit from now (a job that solves again keeps one --time-limit)."""
    t0 = time.perf_counter()
    budget = Budget(opts.effort, deadline) if deadline is not None else Budget.start(opts.effort, opts.time_limit)
    machine = machine_bound(graph, target, opts.support_reserve)
    if machine.proves:
        if report:
            report(f"machine bound: {machine.needs_bytes:,} B needed, {machine.capacity_bytes:,} B on all tiles")
        return SolveResult(Verdict.INFEASIBLE, None, machine=machine,
                           stats={"wall_seconds": round(time.perf_counter() - t0, 3), "status": "MACHINE_BOUND"})
    p = opts.problem(graph, target)
    empty = p.unimplemented
    if empty:  # no plan in the catalogue; that is a statement about the catalogue, which no certificate carries
        why = (f"the {opts.catalogue.value} catalogue has no implementation of {', '.join(empty)} at batch "
               f"{opts.batch} on {target.tiles} tiles")
        if report:
            report(why)
        return SolveResult(Verdict.UNKNOWN, p, reason=why, machine=machine,
                           stats={"wall_seconds": round(time.perf_counter() - t0, 3), "status": "NO_IMPLEMENTATION"})
    if opts.strategy == "beam":
        return solve_beam(p, opts, report, t0)
    try:
        res = solve_problem(p, opts, report, budget)
    except WallClockExpired:
        res = SolveResult(Verdict.UNKNOWN, p, reason=f"the --time-limit of {opts.time_limit:g} s ran out",
                          stats={"status": "WALL_CLOCK"})
    res.machine = machine
    res.stats["wall_seconds"] = round(time.perf_counter() - t0, 3)
    return res


def solve_beam(p: Problem, opts: SolveOptions, report, t0: float) -> SolveResult:
    """The beam strategy: finalists as plan bodies, best first; the driver accepts the first that checks."""
    from .beam import beam_search
    classes = problem_classes(p)
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
                  budget: Budget | None = None) -> SolveResult:
    """Solve a built problem: FIT with a plan, INFEASIBLE with a certificate, or UNKNOWN with the reason."""
    budget = budget or Budget.start(opts.effort, opts.time_limit)
    t0 = time.perf_counter()
    classes = problem_classes(p)
    ctx = build_model(p, classes, objective=True, free=opts.slack, cuts=opts.cuts)
    stats = {"literals": len(ctx.x), "constraints": ctx.constraints,
             "tile_classes": len(classes), "implementations": sum(len(v) for v in p.impls.values()),
             "steps": len(p.steps), "build_seconds": round(time.perf_counter() - t0, 3)}
    if report:
        report(f"model: {stats['implementations']} implementations, {stats['literals']} literals, "
               f"{stats['constraints']} constraints, {len(classes)} tile classes, {len(p.steps)} steps")
    first, plan0 = probe(ctx, opts, report, budget, stats)
    stats["probe"] = first.name
    if first == cp_model.INFEASIBLE:  # the same constraints: the cycle search would say so too
        status, rounds, added, name = first, 0, 0, "INFEASIBLE"
    else:
        status, solver, rounds, added = solve_rounds(ctx, opts, report, budget, "cycles")
        name = solver.StatusName(status)
    stats.update(status=name, rounds=rounds, workers=opts.workers, seed=opts.seed)
    if plan0 is not None and (status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or added):
        # the cycle search ended without a better plan exact on every tile: the probe's, with the search's bound
        fastest = objective_value(p, plan0)
        bound = min(fastest, int(np.ceil(solver.BestObjectiveBound() - 1e-6)))
        stats["deterministic_time"] = round(budget.spent, 3)
        return SolveResult(Verdict.FIT, p, plan_body(p, plan0, bound, classes, fastest), stats=stats, chosen=plan0)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if added:
            stats["deterministic_time"] = round(budget.spent, 3)
            return SolveResult(Verdict.UNKNOWN, p, stats=stats, reason=(
                f"the effort ran out after {rounds} rounds with exact per-tile rows still missing"))
        chosen = chosen_literals(ctx, solver)
        fastest = objective_value(p, chosen)
        bound = min(fastest, int(np.ceil(solver.BestObjectiveBound() - 1e-6)))
        if opts.slack and opts.slack_effort > 0:
            chosen = _slack_phase(p, classes, ctx, chosen, opts, report, budget, stats)
        stats["deterministic_time"] = round(budget.spent, 3)
        res = SolveResult(Verdict.FIT, p, plan_body(p, chosen, bound, classes, fastest), stats=stats, chosen=chosen)
        if plan0 is not None and plan0 != chosen:  # slower, but for the placement to fall back on
            res.alternates = [(plan0, lambda: plan_body(p, plan0, bound, classes))]
        return res
    if status == cp_model.INFEASIBLE and opts.cuts:
        stats["deterministic_time"] = round(budget.spent, 3)
        return SolveResult(Verdict.UNKNOWN, p, stats=stats, reason=(
            f"every plan left after {len(opts.cuts)} placement cuts is infeasible; a certificate does not yet carry "
            "placement proofs, so this is not reported as INFEASIBLE"))
    if status == cp_model.INFEASIBLE:
        stats["verdict_seconds"] = round(time.perf_counter() - t0, 3)
        return _infeasible(p, classes, opts, ctx.rows, stats, report, budget)
    stats["deterministic_time"] = round(budget.spent, 3)
    return SolveResult(Verdict.UNKNOWN, p, stats=stats,
                       reason=f"the effort of {opts.effort:g} deterministic seconds ran out ({solver.StatusName(status)})")


def _slack_phase(p: Problem, classes, ctx: ModelCtx, chosen: set, opts: SolveOptions, report, budget: Budget,
                 stats: dict) -> set:
    """Among plans within the optimality gap of `chosen`, one whose fullest tile keeps the most free bytes
    (the same model, its rows included; cycles bounded, the objective replaced)."""
    limit = objective_value(p, chosen)
    limit += int(limit * opts.relative_gap)
    ctx.m.ClearObjective()
    ctx.m.Add(objective_expr(ctx) <= limit)
    ctx.m.Maximize(ctx.free)
    ctx.m.ClearHints()
    for k, v in ctx.x.items():
        ctx.m.AddHint(v, k in chosen)
    sub = budget.share(0.5)
    sub.effort = min(sub.effort, opts.slack_effort)
    status, solver, rounds, added = solve_rounds(ctx, opts, report, sub, "free bytes", keep_free=True)
    budget.spend(sub.spent)
    stats.update(slack_status=solver.StatusName(status), slack_rounds=rounds)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and not added:
        return chosen_literals(ctx, solver)
    return chosen  # the cycle-optimal plan, already exact on every tile


def _infeasible(p: Problem, classes, opts: SolveOptions, rows: set, stats: dict, report, budget: Budget
                ) -> SolveResult:
    """Core, certificate from it, then (with explain) the minimal core, its certificate and the deficit."""
    t0 = time.perf_counter()
    try:
        core, cctx = infeasible_core(p, classes, opts, budget.share(0.3), rows, budget)
        stats["core_seconds"] = round(time.perf_counter() - t0, 3)
        # without a core (its re-solve under assumptions did not finish) the certificate scans the tightest rows
        cert = build_certificate(p, classes, core, budget.share(0.5), budget)
    except WallClockExpired:
        # CP-SAT's refutation is kept in the stats, but without an independent proof it is not a verdict
        stats["deterministic_time"] = round(budget.spent, 3)
        if report:
            report("the time limit ran out while looking for a certificate")
        return SolveResult(Verdict.UNKNOWN, p, stats=stats, model_rows=set(rows), reason=(
            f"CP-SAT found no plan, but the --time-limit of {opts.time_limit:g} s ran out before an independent "
            "proof (counting, Farkas, split or z3) was found; not reported as INFEASIBLE"))
    if cert is not None and report:
        report(f"certificate: {cert['kind'] or 'none found'} over {len(cert['rows'])} rows")
    try:
        if core and cctx is not None and opts.explain:
            full = len(core)
            small, minimal = minimize_core(cctx, core, budget.share(0.5), budget)
            if len(small) < full:
                again = build_certificate(p, classes, small, budget.share(0.5), budget)
                core = small
                if again["kind"] or cert is None or not cert["kind"]:
                    cert = again
            stats["core_minimal"], stats["core_size_before_minimizing"] = minimal, full  # once `core` is `small`
        if opts.explain:
            stats["explanation"] = elastic_explanation(p, classes, opts, budget.share(1.0), budget)
    except WallClockExpired:
        if cert is None or not cert.get("kind"):
            raise
        # the verdict rests on the certificate in hand, which `ipuplan check` re-proves on its own; only the
        # smaller core and the least-overflowing plan, which explain it, were cut short
        stats["explanation"] = {"status": "WALL_CLOCK", "note": f"the --time-limit of {opts.time_limit:g} s ran out "
                                "before the least-overflowing plan was found; the certificate stands"}
        if report:
            report("the time limit ran out while explaining; the certificate stands")
    stats["deterministic_time"] = round(budget.spent, 3)
    res = SolveResult(Verdict.INFEASIBLE, p, core=core, stats=stats, certificate=cert, model_rows=set(rows))
    if cert is None or not cert.get("kind"):
        res.verdict = Verdict.UNKNOWN
        res.reason = ("CP-SAT found no plan, but no independent proof (counting, Farkas, split or z3) "
                      + ("of its core" if core else "over the tightest rows (its core was not found)")
                      + " was found within the effort; not reported as INFEASIBLE")
    return res


def infeasible_core(p: Problem, classes, opts: SolveOptions, sub: Budget, rows: set = frozenset(),
                    parent: Budget | None = None, linearization: int = MAX_LP_LINEARIZATION, up_front: bool = False):
    """Re-solve without objective, every guard an assumption; CP-SAT returns a sufficient subset. `rows`:
    the exact tile rows the solving model had gained (they may be what makes it infeasible). `linearization`:
    CP-SAT's linearization level; `up_front`: max_lp's parameters whole (`as_max_lp`), its LP constraints all
    added at the start (bench/core_relaxation.py compares them)."""
    ctx = build_model(p, classes, objective=False)
    _same_rows(ctx, rows)
    ctx.m.AddAssumptions([g for g, _ in ctx.guards])
    solver = cp_model.CpSolver()
    sub.cpsat(solver, 1, opts.seed)
    solver.parameters.linearization_level = linearization
    if up_front:
        as_max_lp(solver)
    status = run_cpsat(solver, ctx.m)
    sub.spend(solver.deterministic_time)
    if parent is not None:
        parent.spend(solver.deterministic_time)
    sub.check_wall()
    if status != cp_model.INFEASIBLE:
        return [], None
    idx = {g.Index(): info for g, info in ctx.guards}
    return [idx[i] for i in solver.SufficientAssumptionsForInfeasibility() if i in idx], ctx


def _same_rows(ctx: ModelCtx, rows: set) -> None:
    """The lazily added rows of another model of the same problem (the model that was solved or found
    infeasible): every row is a true constraint, so adding them only saves rounds."""
    from .exchange.tables import add_budget_row, add_fragment_row, add_table_row
    from .memory.liveness import add_tile_row
    from .memory.regions import add_region1_row
    for key in sorted(rows, key=repr):
        if key[0] == "tables":
            add_table_row(ctx, key[1], key[2])
        elif key[0] == "frags":
            add_fragment_row(ctx, key[1])
        elif key[0] == "budget":
            add_budget_row(ctx, key[1])
        elif key[0] == "memory":
            add_tile_row(ctx, key[1], key[2])
        elif key[0] == "region1":
            add_region1_row(ctx, key[1], key[2])


def plan_body(p: Problem, chosen: set[tuple], bound: int | None, classes, fastest: int | None = None) -> dict:
    """plan.json's choices, classes, exchange figures, peaks, slack and cycles for a full set of literals
    (`fastest`: the cycles of the fastest plan the search found, when the plan kept is the roomiest of those
    within the gap of it)."""
    choices = {}
    for op, impls in p.impls.items():
        i = next(i for i in range(len(impls)) if ("impl", op, i) in chosen)
        choices[op] = choice_record(impls[i], i)
    usage = tile_usage(p, chosen)
    std, il = usage[MemClass.STANDARD], usage[MemClass.INTERLEAVED]
    a = p.acct
    tables, frags, by_step = exchange_usage(p, chosen)
    resident = a.table_alloc(tables)[None, :] if a.tables_in_memory else 0
    r0, r1 = region_usage(std, il, a.support + resident, a.region0)
    total = std + il + a.support + resident
    objective = objective_value(p, chosen)
    clock = p.target.clock_hz
    free = a.usable - total.max(0)
    tile = int(np.argmin(free))
    classes = [{"class": c.index, "representative_tile": c.rep, "tiles": len(c.tiles),
                "stands_for": len(c.covers), "tile_ranges": tile_ranges(c.tiles)} for c in classes]
    return {
        "choices": choices,
        "catalogue": {"kind": p.catalogue.value, "implementations": sum(len(v) for v in p.impls.values()),
                      "grids": p.screened},
        "tile_classes": classes,
        "exchange": exchange_report(p, chosen, tables, frags, by_step),
        "peaks": {"total": peak(total, p.steps), "standard": peak(std, p.steps),
                  "interleaved": peak(il, p.steps), "region0": peak(r0, p.steps), "region1": peak(r1, p.steps)},
        "slack": {"bytes": int(free[tile]), "tile": tile, "step": p.steps[int(np.argmax(total[:, tile]))],
                  "headroom": a.headroom, "tiles_under_8k": int((free < 8192).sum())},
        "cycles": {"modeled": objective, "ms": round(objective / clock * 1e3, 4), "best_bound": bound,
                   "fastest_found": fastest if fastest is not None else objective,
                   "gap": round((objective - bound) / objective, 6) if objective and bound is not None else None,
                   "breakdown": breakdown(p, chosen)},
    }


def exchange_report(p: Problem, chosen: set[tuple], tables, frags, by_step) -> dict:
    a = p.acct
    tt, ft = int(np.argmax(tables)), int(np.argmax(frags))
    relays = sorted(({"buffer": p.edges[k[1]].buf, "consumer": p.edges[k[1]].consumer, "input": p.edges[k[1]].index}
                     for k in chosen if k[0] == "pair" and k[4] == "relay"),
                    key=lambda d: (d["consumer"], d["input"]))
    return {
        "tables": {"bytes": int(tables[tt]), "tile": tt, "limit": a.table_budget,
                   "margin": a.table_budget - int(tables[tt]),
                   "allocated": int(a.table_alloc(tables[tt])) if a.tables_in_memory else None,
                   "largest_superstep": p.steps[int(np.argmax(by_step[0, :, tt]))]},
        "fragments": {"count": int(frags[ft]), "tile": ft, "limit": a.fragment_limit,
                      "margin": a.fragment_limit - int(frags[ft]),
                      "largest_superstep": p.steps[int(np.argmax(by_step[1, :, ft]))]},
        "relays": relays,
        "in_memory": a.tables_in_memory,
    }
