"""The `solve` job: load model and target, solve, place, check, write DIR/plan.json + DIR/placement.json (FIT)
or DIR/verdict.json (+ certificate.json for INFEASIBLE). A FIT is written only when every buffer of every tile
has an address and the independent checker passes the plan exactly as written; a placement proven impossible
on some tile becomes a cut and the planner solves again; otherwise the verdict is UNKNOWN with the reason."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..artefacts import INPUTS, copy_inputs, staged
from ..backend.placement.tiles import place_plan, placement_doc
from ..checker import check_plan
from ..formats import CERTIFICATE, PLAN, digest
from ..model import build_graph, load_model
from ..model.build import gemm_scales
from ..model.spec import Precision
from ..model.stage import Stage
from ..plan import sha256, write_json
from ..solver.solve import SolveOptions, SolveResult, Verdict, solve
from ..target import load_target

MAX_CUTS = 8
HEADROOM_STEP = 8192
MAX_HEADROOM = 32768
KEEP_WITHIN = 0.10  # a placed probe plan this close to the fastest is the answer; a slower one is kept in hand

TABLES_NOTE = {
    "modeled": "per tile, from the plan's transfers (IPU21 instruction words, Repeat patch words, local copy lists); "
               "whole region-0 elements beside {support:,} B of fixed reservations, code and program",
    "seeds": "inside the fixed {support:,} B support reserve (the seeds' accounting); still limited per tile",
}


@dataclass(frozen=True)
class Job:
    model: str
    target: str
    batch: int = 1
    layers: int | None = None
    precision: str | None = None
    fuse_qkv: bool | None = None
    options: SolveOptions = SolveOptions()
    fp8_scales: tuple | None = None  # (GEMM key, x, w) triples (None: the model's fixed scale)
    stage: Stage | None = None  # one stage of a pipeline (None: the whole model on one chip)


def instance(job: Job, spec, target, inputs: dict | None = None) -> dict:
    """What a plan or certificate is about: model, batch, depth, inputs (with the copies the directory keeps)
    and every option that changes the answer (solver effort and seed change only which plan is found)."""
    o = job.options
    return {
        "model": spec.name, "target": target.name, "batch": job.batch, "layers": spec.layers, "precision": spec.precision.value,
        "fuse_qkv": spec.fuse_qkv,
        "fp8_scales": fp8_record(spec),
        "inputs": inputs or {"model": {"path": job.model, "sha256": sha256(job.model)},
                             "target": {"path": job.target, "sha256": sha256(job.target)}},
        "options": {"support_reserve": o.support_reserve, "relays": o.use_relays, "exchange_table_budget": o.table_budget,
                    "headroom": o.headroom, "catalogue": o.catalogue.value},
    } | ({"stage": job.stage.record()} if job.stage is not None else {})


def fp8_record(spec) -> dict:
    """The FP8 scales a plan records: every GEMM's (x, w) for an FP8 model (the fixed scale where none was given),
    nothing for F16."""
    if spec.precision is not Precision.FP8:
        return {}
    return {k: list(v) for k, v in gemm_scales(build_graph(spec, 1)).items()}


def header(job: Job, spec, target, result: SolveResult, inputs: dict | None = None) -> dict:
    o = job.options
    doc = {"format": PLAN, "verdict": result.verdict.value, **instance(job, spec, target, inputs)}
    doc["search"] = {"seed": o.seed, "effort": o.effort, "relative_gap": o.relative_gap, "slack": o.slack,
                     "slack_effort": o.slack_effort}
    p = result.problem
    if p is not None:
        a = p.acct
        doc["accounting"] = {
            "mode": a.mode, "usable_bytes": a.usable, "support_bytes": a.support, "headroom_bytes": a.headroom,
            "region0_bytes": a.region0, "region1_bytes": a.region1,
            "support": {k: v for k, v in a.support_parts},
            "exchange_tables": TABLES_NOTE[a.mode].format(support=a.support),
            "table_budget_bytes": a.table_budget, "fragment_limit": a.fragment_limit}
    return doc


ARTEFACTS = ("plan.json", "placement.json", "verdict.json", "certificate.json", "solve-stats.json", INPUTS)


def run_solve(job: Job, out_dir: Path, report: Callable[[str], None] | None = None) -> tuple[SolveResult, dict]:
    """Solve, place, check; then write the verdict's artefacts into `out_dir` all at once (an interrupt or an
    error before then leaves the directory as it was; stale artefacts of an earlier verdict are removed)."""
    solved = solve_job(job, report)
    return write_solved(solved, out_dir), solved.doc


@dataclass
class SolvedJob:
    """A job solved and placed, not yet written (a pipeline writes one solved stage problem for every stage
    that poses it); `doc` is filled by write_solved."""

    job: Job
    spec: object
    target: object
    result: SolveResult
    placed: object
    doc: dict | None = None


def load_job(job: Job):
    """(spec, target, graph) of a job: the model with the job's overrides, the target, the graph at its batch."""
    spec = load_model(job.model).with_options(layers=job.layers, precision=job.precision, fuse_qkv=job.fuse_qkv,
                                              fp8_scales=job.fp8_scales)
    target = load_target(job.target)
    return spec, target, build_graph(spec, job.batch, job.stage)


def solve_job(job: Job, report: Callable[[str], None] | None = None) -> SolvedJob:
    spec, target, graph = load_job(job)
    result, placed, used = _solve_placed(graph, target, job.options, report)
    result.placement = placed
    job = dataclasses.replace(job, options=dataclasses.replace(used, cuts=()))  # the headroom actually kept
    return SolvedJob(job, spec, target, result, placed)


def write_solved(s: SolvedJob, out_dir: Path, stage: Stage | None = None) -> SolveResult:
    """Write a solved job's artefacts into `out_dir` all at once, for `stage` (default the job's own; the plan
    is the same for every stage with the same layer count and ends, and is checked again as that stage)."""
    job = s.job if stage is None else dataclasses.replace(s.job, stage=stage)
    result = dataclasses.replace(s.result) if stage is not None else s.result
    with staged(Path(out_dir), ARTEFACTS) as tmp:
        doc = header(job, s.spec, s.target, result, copy_inputs(tmp, job.model, job.target))
        _write(job, result, doc, tmp, s.placed)
    s.doc = doc
    return result


def _write(job: Job, result: SolveResult, doc: dict, out_dir: Path, placed) -> None:
    doc["strategy"] = job.options.strategy
    st = result.stats
    size = {k: st[k] for k in ("implementations", "literals", "constraints", "tile_classes", "steps") if k in st}
    doc["model_size"] = size
    doc["solver"] = {"status": st.get("status"), "rounds": st.get("rounds"),
                     "deterministic_time": st.get("deterministic_time"), "workers": job.options.workers}
    if "probe_hinted_ops" in st:
        doc["solver"]["probe_hinted_ops"] = st["probe_hinted_ops"]
    if "beam" in st:
        doc["solver"] = {"status": "BEAM", **st["beam"]}
    if result.verdict is Verdict.FIT:
        _fit(result, doc, out_dir, placed)
    if result.verdict is Verdict.INFEASIBLE and result.problem is None:
        _machine(result, doc, out_dir)
    elif result.verdict is Verdict.INFEASIBLE:
        _infeasible(result, doc, out_dir)
    if result.verdict is Verdict.REJECTED:
        doc["rejection"] = {"note": "the beam kept no complete plan that passes the checker; this is not a proof",
                            **st.get("beam", {})}
    if result.verdict is Verdict.UNKNOWN:
        doc["unknown"] = {"reason": result.reason}
    doc["verdict"] = result.verdict.value
    if result.verdict is not Verdict.FIT:
        write_json(out_dir / "verdict.json", doc)
    timing = {k: st[k] for k in ("verdict_seconds", "core_seconds", "build_seconds") if k in st}
    if "placement" in st:
        timing["placement_seconds"] = st["placement"]["seconds"]
    search = {k: st[k] for k in ("probe", "status") if k in st}  # the probe's and the cycle search's ends
    write_json(out_dir / "solve-stats.json", {"wall_seconds": st.get("wall_seconds"), **timing, **size, **search})


def _solve_placed(graph, target, opts: SolveOptions, report):
    """Solve; place a cpsat FIT on every tile. A placement proven impossible on a tile is cut from the model
    (at most MAX_CUTS times); otherwise (undecided, or the cuts spent) the probe's slower plan is placed if the
    search ended on another, and failing that a tile the engines leave undecided makes the planner solve again
    with HEADROOM_STEP more bytes kept free per tile (at most MAX_HEADROOM more): FIT only when placed, and a
    verdict reached after a cut or more headroom is never INFEASIBLE. A placed probe plan more than KEEP_WITHIN
    slower than the fastest is kept in hand while the planner solves once more with more headroom; the faster of
    the two placed plans is the answer. --time-limit bounds the whole job, every solve and placement in it:
    a placement the wall clock stops is UNKNOWN, not solved again. Returns (result, placement, the options
    solved with)."""
    deadline = time.perf_counter() + opts.time_limit
    cuts: list = []
    extra = 0
    kept = None  # (result, placement, options): a placed probe plan while a faster one is sought
    while True:
        o = dataclasses.replace(opts, cuts=tuple(cuts), headroom=opts.headroom + extra)
        # with a plan in hand an INFEASIBLE retry only means "keep it": no core to minimize
        result = solve(graph, target, o if kept is None else dataclasses.replace(o, explain=False), report,
                       deadline=deadline)
        if (cuts or extra) and result.verdict is Verdict.INFEASIBLE:
            result.verdict = Verdict.UNKNOWN
            result.reason = (f"the placement of an earlier plan was {'impossible' if cuts else 'undecided'}, and with "
                             f"{len(cuts)} cuts and {extra:,} B more headroom no plan is left; not a proof")
        if result.verdict is not Verdict.FIT or opts.strategy != "cpsat":
            return _faster(kept, None, extra, report) or (result, None, o)
        pp = place_plan(result.problem, result.chosen, report=report, deadline=deadline)
        result.stats["placement"] = dict(pp.summary(), cuts=len(cuts), headroom_added=extra,
                                         seconds=round(pp.seconds, 3))
        if pp.placed:
            return _faster(kept, (result, pp, o), extra, report)
        if pp.failed is not None and len(cuts) < MAX_CUTS:
            if report:
                report(f"placement proven impossible on {pp.reason}; cutting that combination and solving again")
            cuts.append((int(pp.groups[pp.failed].tiles[0]), tuple(pp.cut)))
            continue
        if pp.timed_out:
            if kept is not None:
                return _faster(kept, None, extra, report)
            result.verdict, result.reason = Verdict.UNKNOWN, f"placement: {pp.reason}"
            return result, None, o
        fallen = _fall_back(result, pp, report, deadline)
        if fallen is not None:
            fb = result.stats["placement"]["fell_back"]
            if (kept is None and pp.unknown is not None and extra < MAX_HEADROOM
                    and _cycles(result) > fb["cycles"] * (1 + KEEP_WITHIN)):
                kept = (result, fallen, o)
                extra += HEADROOM_STEP
                if report:
                    report(f"the probe's plan ({_cycles(result):,} cycles) is placed and kept; solving again with "
                           f"{extra:,} B more headroom per tile for a placed plan nearer {fb['cycles']:,}")
                continue
            return _faster(kept, (result, fallen, o), extra, report)
        if kept is None and pp.unknown is not None and extra < MAX_HEADROOM:
            extra += HEADROOM_STEP
            if report:
                report(f"placement undecided on {pp.reason}; solving again with {extra:,} B more headroom per tile")
            continue
        if kept is not None:
            return _faster(kept, None, extra, report)
        result.verdict = Verdict.UNKNOWN
        result.reason = (f"placement: {pp.reason}" if pp.failed is None else
                         f"placement still fails after {len(cuts)} cuts: {pp.reason}")
        return result, None, o


def _cycles(result: SolveResult) -> int:
    return result.plan["cycles"]["modeled"]


def _faster(kept, got, extra: int, report):
    """The faster of the plan in hand and the retry's placed plan (either may be None); the plan in hand records
    what the retry found."""
    if kept is None:
        return got
    mine = kept[0].stats["placement"]["fell_back"]
    mine["retry"] = {"headroom_added": extra, "cycles": _cycles(got[0]) if got else None}
    if got is not None and _cycles(got[0]) < _cycles(kept[0]):
        if report:
            report(f"the retry's plan is placed: {_cycles(got[0]):,} cycles against the probe's {_cycles(kept[0]):,}")
        return got
    if report:
        report("the retry found no faster placed plan; the probe's plan stands")
    return kept


def _fall_back(result: SolveResult, pp, report, deadline: float | None = None):
    """The first of the search's slower plans (the probe's) that places, made the result's plan; None if none
    does. Cheaper than solving again when the faster plan's placement is undecided; its cycles are its own."""
    for chosen, body in result.alternates:
        if report:
            report(f"placement of the fastest plan: {pp.reason}; placing the probe's plan")
        alt = place_plan(result.problem, chosen, report=report, deadline=deadline)
        if alt.placed:
            faster = result.plan["cycles"]["modeled"]
            result.plan, result.chosen, result.alternates = body(), chosen, []
            result.stats["placement"].update(alt.summary(), seconds=round(pp.seconds + alt.seconds, 3),
                                             fell_back={"cycles": faster, "reason": pp.reason})
            return alt
    return None


def _fit(result: SolveResult, doc: dict, out_dir: Path, placed=None) -> None:
    """Check the plan as it will be written; FIT only if the independent checker passes it."""
    bodies = result.finalists or [result.plan]  # beam: the first finalist the checker accepts
    placement = placement_doc(result.problem, placed) if placed is not None else None
    for body in bodies:
        trial = dict(doc, **body)
        rep = check_plan(trial, placement, base=out_dir)
        if rep.ok:
            doc.update(body)
            if placement is not None:
                st = result.stats["placement"]
                doc["placement"] = {"file": "placement.json", **placed.summary(), "cuts": st["cuts"],
                                    "headroom_added": st["headroom_added"]} | (
                    {"fell_back": st["fell_back"]} if "fell_back" in st else {})
                write_json(out_dir / "placement.json", placement, indent=None)  # tens of thousands of buffers
            write_json(out_dir / "plan.json", doc)
            return
    if result.finalists:
        result.verdict = Verdict.REJECTED
        return
    result.verdict = Verdict.UNKNOWN
    result.reason = f"the independent checker rejected the solver's plan: {rep.violations[0]}"


def _machine(result: SolveResult, doc: dict, out_dir: Path) -> None:
    m = result.machine
    doc["machine"] = m.record()
    doc["headline"] = (f"parameters and live activations need {m.needs_bytes:,} B, the target holds "
                       f"{m.capacity_bytes:,} B on all tiles: no compiler can fit this on one {doc['target']}")
    write_certificate(out_dir / "certificate.json", doc, {"kind": "machine", "machine": doc["machine"], "rows": []})


def _infeasible(result: SolveResult, doc: dict, out_dir: Path) -> None:
    st = result.stats
    fam = Counter(g.family for g in result.core)
    doc["core"] = {"families": dict(sorted(fam.items())), "constraints": [g.name for g in result.core],
                   "minimal": bool(st.get("core_minimal")),
                   "size_before_minimizing": st.get("core_size_before_minimizing"),
                   "scope": f"no combination of the {st.get('implementations')} catalogued implementations fits",
                   "explanation": st.get("explanation", {})}
    cert = result.certificate
    doc["core"]["certificate"] = _certificate_summary(cert)
    doc["machine"] = result.machine.record() if result.machine is not None else None
    write_certificate(out_dir / "certificate.json", doc, cert)


def write_certificate(path: Path, doc: dict, body: dict) -> None:
    """certificate.json: the instance (inputs and options), the certificate body, and its digest."""
    write_json(path, certificate_doc(doc, body))


def certificate_doc(doc: dict, body: dict) -> dict:
    """A certificate as written: the instance `doc` names, the body, the digest."""
    cert = {"format": CERTIFICATE, "verdict": "INFEASIBLE",
            **{k: doc[k] for k in ("model", "target", "batch", "layers", "precision", "fuse_qkv", "fp8_scales",
                                   "inputs", "options", "stage") if k in doc},
            **body}
    cert["digest"] = digest(cert)
    return cert


def _certificate_summary(cert: dict) -> dict:
    return {"kind": cert["kind"], "rows": len(cert["rows"]), "file": "certificate.json",
            "rows_minimal": cert["rows_minimal"], "machine": cert["machine"],
            "row_details": [{k: r[k] for k in ("name", "capacity", "cheapest_bytes", "cheapest_by_group")}
                            for r in cert["rows"][:4]]}
