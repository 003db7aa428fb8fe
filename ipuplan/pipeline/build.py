"""The pipeline `build` job: plan the pipeline, lower every stage to its own package (stages that pose the same
problem share one lowered program), and write DIR/model.ipupipe: the stage packages, the pipeline plan and a
manifest binding each boundary (the producing stage's output to the next stage's input)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..model.build import STAGE_INPUT, STAGE_OUTPUT
from ..model.stage import Stage
from ..job.build import PACKAGE, package_solved
from ..package.pipeline import PLAN, write_pipeline_package
from ..plan import sha256
from ..solver.solve import Verdict
from .solve import Outcome, PipelineJob, run_pipeline

PIPELINE_PACKAGE = "model.ipupipe"


def build_pipeline(pj: PipelineJob, out_dir: Path, report: Callable[[str], None] | None = None
                   ) -> tuple[Outcome, dict | None]:
    """(the pipeline's outcome, the build summary or None when it is not FIT)."""
    t0 = time.perf_counter()
    (out_dir / PIPELINE_PACKAGE).unlink(missing_ok=True)
    o = run_pipeline(pj, out_dir, report)
    if o.verdict is not Verdict.FIT:
        return o, None
    t1 = time.perf_counter()
    progs: dict = {}
    members, stages = {}, []
    for i, (d, result, doc) in enumerate(o.stages):
        key = Stage(**doc["stage"]).problem
        summary, progs[key] = package_solved(result, doc, d, report, prog=progs.get(key))
        name = f"stage-{i}.ipupkg"
        members[name] = d / PACKAGE
        stages.append({"index": i, "member": name, "stage": doc["stage"], "package_sha256": sha256(d / PACKAGE),
                       "plan_sha256": sha256(d / "plan.json"), "cycles": doc["cycles"]["modeled"],
                       "bytes": summary["bytes"]})
    members[PLAN] = out_dir / "pipeline.json"
    pdoc = o.doc
    bindings = [{"from": i, "to": i + 1, "output": STAGE_OUTPUT, "input": STAGE_INPUT, **{
        k: s["output"][k] for k in ("shape", "dtype", "bytes", "link_cycles")}}
        for i, s in enumerate(pdoc["stages"][:-1])]
    manifest = {k: pdoc[k] for k in ("model", "batch", "layers", "precision", "fuse_qkv", "ipus", "throughput",
                                     "latency")}
    manifest |= {"stages": stages, "bindings": bindings, "pipeline_sha256": sha256(out_dir / "pipeline.json")}
    path = out_dir / PIPELINE_PACKAGE
    size = write_pipeline_package(path, manifest, members)
    t2 = time.perf_counter()
    if report:
        report(f"pipeline package: {size / 2**20:.1f} MiB, {len(stages)} stage packages ({len(progs)} programs "
               f"lowered) in {t2 - t1:.1f} s")
    return o, {"file": str(path), "bytes": size, "stages": len(stages), "programs": len(progs),
               "seconds": {"solve_and_place": round(t1 - t0, 2), "lower_and_write": round(t2 - t1, 2)}}
