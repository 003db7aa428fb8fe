"""The `build` job: solve and place (the `solve` job), lower, write DIR/model.ipupkg, read it back and
validate it as any reader would."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..backend.lower.lower import lower
from ..package import sources
from ..package.io import read_package, write_package
from ..package.validate import validate
from ..plan import sha256
from ..solver.solve import Verdict
from .solve import Job, run_solve

PACKAGE = "model.ipupkg"


def run_build(job: Job, out_dir: Path, report: Callable[[str], None] | None = None):
    """(solve result, plan document, build summary or None when the verdict is not FIT)."""
    t0 = time.perf_counter()
    result, doc = run_solve(job, out_dir, report)
    (out_dir / PACKAGE).unlink(missing_ok=True)
    if result.verdict is not Verdict.FIT:
        return result, doc, None
    return result, doc, package_solved(result, doc, out_dir, report, t0)[0]


def package_solved(result, doc: dict, out_dir: Path, report: Callable[[str], None] | None = None,
                   t0: float | None = None, prog=None) -> tuple[dict, object]:
    """Lower a FIT written to `out_dir` (its plan.json and placement.json) into out_dir/model.ipupkg, read it back
    and validate it; `prog`: the program already lowered for the same plan (a pipeline's stages that pose the same
    problem share it). The build summary and the program."""
    t1 = time.perf_counter()
    t0 = t1 if t0 is None else t0
    prog = prog or lower(result.problem, result.chosen, result.placement)
    t2 = time.perf_counter()
    p = result.problem
    header = {"model": doc["model"], "batch": doc["batch"], "layers": doc["layers"], "precision": doc["precision"],
              "fuse_qkv": doc["fuse_qkv"], "fp8_scales": doc.get("fp8_scales", {}),
              **({"stage": doc["stage"]} if "stage" in doc else {}),
              "inputs": doc["inputs"], "plan": {"file": "plan.json", "sha256": sha256(out_dir / "plan.json")},
              "placement": {"file": "placement.json", "sha256": sha256(out_dir / "placement.json")},
              "body": prog.info["body"], "modeled_cycles": doc["cycles"]["modeled"],
              "modeled_steps": prog.info["modeled_steps"]}
    body = prog.info["body"]
    per = [sum(c) for c in prog.info["modeled_steps"]]
    total = sum(per) + (prog.count - 1) * sum(per[body[0]:body[1] + 1]) if body else sum(per)
    if total != doc["cycles"]["modeled"]:  # the steps carry exactly the costs the objective adds up
        raise RuntimeError(f"the program's steps model {total:,} cycles, the plan {doc['cycles']['modeled']:,}")
    path = out_dir / PACKAGE
    header["sources"], extra = sources.collect(out_dir)
    size = write_package(path, prog, p.target, header, extra)
    t3 = time.perf_counter()
    back, manifest = read_package(path)
    counts = validate(back, manifest, path)
    t4 = time.perf_counter()
    summary = {"file": str(path), "bytes": size, "steps": len(prog.steps), **counts,
               "seconds": {"solve_and_place": round(t1 - t0, 2), "lower": round(t2 - t1, 2),
                           "write": round(t3 - t2, 2), "read_and_validate": round(t4 - t3, 2),
                           "total": round(t4 - t0, 2)}}
    if report:
        report(f"package: {size / 2**20:.1f} MiB, {len(prog.steps)} steps, {counts['vertices']:,} vertices, "
               f"{counts['runs']:,} exchange runs; lowered in {t2 - t1:.1f} s, written in {t3 - t2:.1f} s, "
               f"validated in {t4 - t3:.1f} s")
    return summary, prog
