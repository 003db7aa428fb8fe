"""Running a pipeline package: the stages in order on the emulator, each handed the previous stage's output as
the link would deliver it; each stage compared bit for bit with the plan-faithful reference on the same input,
and the last stage's output with the whole model's mixed and fp32 references."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..package.pipeline import PipelinePackage
from .job import RunResult, _cos, batch_patches, execute, open_package


@dataclasses.dataclass
class PipelineRun:
    output: np.ndarray
    seconds: float
    stages: list[RunResult]
    compare: dict | None


def stage_weights(whole: dict, graph, stage) -> dict:
    """The whole model's weights as one stage holds them: its layers of every Repeat sequence, its own others."""
    out = {}
    for v in graph.values:
        if v.name not in whole:
            continue
        w = whole[v.name]
        out[v.name] = w[stage.first:stage.end] if v.name.startswith("layers.") else w
    return out


def run_pipeline_package(path: str | Path, pixels: np.ndarray, weights: str | None = None, seed: int = 0,
                         compare: bool = False, progress: Callable[[str, int, int], None] | None = None
                         ) -> PipelineRun:
    from ..model import build_graph
    from ..model.weights import load_weights, random_weights
    from ..reference import Mode, Policy, run_graph
    pp = PipelinePackage(path)
    m = pp.manifest
    results = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ipuplan-pipeline-") as tmp:
        x = None
        whole = spec = g_whole = tgt = None
        for i, st in enumerate(m["stages"]):
            pk = open_package(pp.extract(st["member"], Path(tmp)), progress)
            if whole is None:  # one set of weights for the whole model, each stage given its slice
                spec, tgt = pk.spec, pk.target
                g_whole = build_graph(spec, m["batch"])
                whole = load_weights(weights, g_whole, spec) if weights else random_weights(g_whole, spec, seed)
                patches = batch_patches(pixels, spec, m["batch"], "pipeline")
                inputs = {"patches": patches}
            else:
                inputs = {m["bindings"][i - 1]["input"]: x}
            r = execute(pk, inputs, stage_weights(whole, pk.graph, pk.stage), compare, progress, fp32=False)
            results.append(r)
            x = r.output
    secs = time.perf_counter() - t0
    cmp = None
    if compare:
        pol = Policy.for_target(tgt, Mode.MIXED)
        mixed = run_graph(g_whole, {"patches": patches}, whole, pol)[g_whole.outputs[0]]
        f32 = run_graph(g_whole, {"patches": patches}, whole, Policy.for_target(tgt, Mode.FP32))[g_whole.outputs[0]]
        pf = [r.compare["plan_faithful"] for r in results]
        cmp = {"stages_bit_exact": [p["bit_exact"] for p in pf], "bit_exact": all(p["bit_exact"] for p in pf),
               "mixed": {"cosine": _cos(x, mixed), "max_abs": float(np.abs(x - mixed).max())},
               "fp32": {"cosine": _cos(x, f32), "max_abs": float(np.abs(x - f32).max()),
                        "reference_mixed_cosine": _cos(mixed, f32)}}
    return PipelineRun(x, secs, results, cmp)
