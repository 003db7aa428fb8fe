"""`ipuplan check X.ipupipe`: every stage package checked as `check PKG` checks one (its plan, placement,
manifest, addresses and symbolic replay against its own stage graph), and the pipeline re-checked over the
plans the packages carry: stages tiling the model, boundaries agreeing, link, throughput and latency recomputed;
the manifest's stage and binding records compared with what the packages imply."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from ..model.build import STAGE_INPUT, STAGE_OUTPUT
from ..package import sources
from ..package.archive import Archive
from ..package.pipeline import PLAN, PipelinePackage
from ..plan import sha256
from .package import check_package
from .pipeline import check_pipeline_dir


def check_pipeline_package(path: str | Path) -> tuple[bool, list[str], str]:
    """(passed, report lines, first violation); an unreadable or altered artefact raises PackageError."""
    pp = PipelinePackage(path)
    m = pp.manifest
    lines: list[str] = []
    raw = pp.read(PLAN)
    doc = json.loads(raw)
    with tempfile.TemporaryDirectory(prefix="ipuplan-pipecheck-") as tmp:
        pipe = Path(tmp) / "pipe"
        pipe.mkdir()
        (pipe / PLAN).write_bytes(raw)
        if sha256(pipe / PLAN) != m.get("pipeline_sha256"):
            return False, lines, "the manifest names a pipeline plan other than the one the artefact carries"
        stages = m.get("stages")
        if not isinstance(stages, list) or [s.get("member") for s in stages] != \
                [f"stage-{i}.ipupkg" for i in range(len(stages))]:
            return False, lines, "the manifest's stages are not stage-0.ipupkg .. stage-N.ipupkg in order"
        results = {}
        for i, st in enumerate(stages):
            pkg = pp.extract(st["member"], Path(tmp))
            ok, plines, why = check_package(pkg)
            results[i] = (ok, [f"package: {x}" for x in plines], [] if ok else [why])
            am = Archive(pkg).manifest
            with sources.unpacked(pkg, am) as d:
                shutil.copytree(d, pipe / f"stage-{i}")
            if i == 0:
                shutil.copytree(pipe / "stage-0" / "inputs", pipe / "inputs")
            if st.get("package_sha256") != sha256(pkg) or st.get("plan_sha256") != sha256(pipe / f"stage-{i}" /
                                                                                        "plan.json"):
                return False, lines, f"stage {i}: the manifest's digests are not its package's and plan's"
            if st.get("stage") != am.get("stage"):
                return False, lines, f"stage {i}: the manifest says {st.get('stage')}, its package {am.get('stage')}"
        rep = check_pipeline_dir(pipe, lambda i, sd: results[i])
        lines += rep.lines
        if not rep.ok:
            return False, lines, rep.violations[0]
        want = [{"from": i, "to": i + 1, "output": STAGE_OUTPUT, "input": STAGE_INPUT,
                 **{k: s["output"][k] for k in ("shape", "dtype", "bytes", "link_cycles")}}
                for i, s in enumerate(doc["stages"][:-1])]
        if m.get("bindings") != want:
            return False, lines, f"the manifest's boundary bindings {m.get('bindings')} are not the pipeline's {want}"
        for k in ("model", "batch", "layers", "ipus", "throughput", "latency"):
            if m.get(k) != doc.get(k):
                return False, lines, f"the manifest's {k} ({m.get(k)!r}) is not the pipeline plan's ({doc.get(k)!r})"
    lines.append(f"pipeline package: {len(stages)} stage packages checked, bindings and records agree")
    return True, lines, ""
