"""The `solve` job: load model and target, solve, write DIR/plan.json (FIT) or DIR/verdict.json."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..model import build_graph, load_model
from ..check.certificate import FORMAT as CERT_FORMAT, digest
from ..plan import FORMAT, sha256, write_json
from ..target import load_target
from .solve import SolveOptions, SolveResult, Verdict, solve

TABLES_NOTE = {
    "modeled": "per tile, from the plan's transfers (send/receive words, Repeat patch words); resident in region 0 "
               "beside {support} B of code, runtime and superstep words",
    "seeds": "inside the fixed {support} B support reserve (the seeds' accounting); still limited per tile",
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


def header(job: Job, spec, result: SolveResult) -> dict:
    p = result.problem
    a = p.acct
    return {
        "format": FORMAT,
        "verdict": result.verdict.value,
        "model": spec.name, "batch": job.batch, "layers": spec.layers, "precision": spec.precision.value,
        "fuse_qkv": spec.fuse_qkv,
        "inputs": {"model": {"path": job.model, "sha256": sha256(job.model)},
                   "target": {"path": job.target, "sha256": sha256(job.target)}},
        "options": {"support_reserve": job.options.support_reserve, "relays": job.options.relays,
                    "exchange_table_budget": job.options.table_budget, "seed": job.options.seed,
                    "time_limit": job.options.time_limit, "relative_gap": job.options.relative_gap},
        "accounting": {"mode": a.mode, "usable_bytes": a.usable, "support_bytes": a.support,
                       "region0_bytes": a.region0, "region1_bytes": a.region1,
                       "exchange_tables": TABLES_NOTE[a.mode].format(support=a.support),
                       "table_budget_bytes": a.table_budget, "fragment_limit": a.fragment_limit},
    }


def run_solve(job: Job, out_dir: Path, report: Callable[[str], None] | None = None) -> tuple[SolveResult, dict]:
    spec = load_model(job.model).with_options(layers=job.layers, precision=job.precision, fuse_qkv=job.fuse_qkv)
    target = load_target(job.target)
    graph = build_graph(spec, job.batch)
    result = solve(graph, target, job.options, report)
    doc = header(job, spec, result)
    doc["strategy"] = job.options.strategy
    st = result.stats
    if result.verdict is Verdict.FIT and result.finalists:  # beam: first finalist the checker accepts
        from ..check import check_plan
        for body in result.finalists:
            trial = dict(doc, **body)
            if check_plan(trial).ok:
                result.plan = body
                break
        else:
            result.verdict = Verdict.REJECTED
            doc["verdict"] = "REJECTED"
    size = {k: st[k] for k in ("implementations", "literals", "constraints", "tile_classes", "steps") if k in st}
    solver = {"status": st.get("status"), "deterministic_time": st.get("deterministic_time"),
              "seed": job.options.seed, "workers": job.options.workers}
    if "beam" in st:
        solver = {"status": "BEAM", **st["beam"]}
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("plan.json", "verdict.json"):
        (out_dir / stale).unlink(missing_ok=True)
    if result.verdict is Verdict.FIT:
        doc.update(result.plan)
        doc["model_size"] = size
        doc["solver"] = solver
        write_json(out_dir / "plan.json", doc)
    else:
        doc["model_size"] = size
        doc["solver"] = solver
        if result.verdict is Verdict.REJECTED:
            doc["rejection"] = {"note": "the beam kept no complete plan that passes the checker; this is not a proof",
                                **st.get("beam", {})}
        if result.verdict is Verdict.INFEASIBLE:
            fam = Counter(g.family for g in result.core)
            doc["core"] = {"families": dict(sorted(fam.items())), "constraints": [g.name for g in result.core],
                           "minimal": bool(st.get("core_minimal")),
                           "size_before_minimizing": st.get("core_size_before_minimizing"),
                           "scope": f"no combination of the {st.get('implementations')} catalogued implementations "
                                    f"fits",
                           "explanation": st.get("explanation", {})}
            cert = result.certificate
            doc["core"]["certificate"] = _certificate_summary(cert)
            (out_dir / "certificate.json").unlink(missing_ok=True)
            if cert is not None and cert.get("kind"):
                write_certificate(out_dir / "certificate.json", doc, cert)
        write_json(out_dir / "verdict.json", doc)
    timing = {k: st[k] for k in ("verdict_seconds", "core_seconds", "certificate_at_seconds") if k in st}
    write_json(out_dir / "solve-stats.json", {"wall_seconds": st.get("wall_seconds"),
                                               "build_seconds": st.get("build_seconds"), **timing, **size})
    return result, doc


def write_certificate(path: Path, doc: dict, body: dict) -> None:
    """certificate.json: the verdict's inputs and options, the certificate body, and its digest."""
    cert = {"format": CERT_FORMAT, "verdict": "INFEASIBLE",
            **{k: doc[k] for k in ("model", "batch", "layers", "precision", "fuse_qkv", "inputs")},
            "options": {k: doc["options"][k] for k in ("support_reserve", "relays", "exchange_table_budget")},
            **body}
    cert["digest"] = digest(cert)
    write_json(path, cert)


def _certificate_summary(cert: dict | None) -> dict:
    if cert is None:
        return {"kind": None, "note": "no core was extracted within the time limit"}
    if not cert.get("kind"):
        return {"kind": None, "rows": len(cert["rows"]), "seconds": cert["seconds"],
                "note": "no counting, Farkas or z3 proof of the core's rows was found; the verdict rests on CP-SAT"}
    return {"kind": cert["kind"], "rows": len(cert["rows"]), "seconds": cert["seconds"], "file": "certificate.json",
            "rows_minimal": cert["rows_minimal"], "machine": cert["machine"],
            "row_details": [{k: r[k] for k in ("name", "capacity", "cheapest_bytes", "cheapest_by_group")}
                            for r in cert["rows"][:4]]}
