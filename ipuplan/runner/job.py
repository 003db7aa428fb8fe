"""The `run` job: a package on a device with an image batch and weights; optionally the comparison with the
reference on the same inputs (bit for bit against the plan-faithful mixed reference, cosine and max error
against fp32) and the per-superstep profile."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ArrayInputError, InputError
from ..package import sources
from .emulator import Emulator


@dataclasses.dataclass
class RunResult:
    output: np.ndarray
    seconds: float
    compare: dict | None
    profile: list[dict]
    saturated: tuple = ()  # (FP8 parameter, largest |w|, the most its scale stores) where the weights saturate


def saturated_params(graph, weights) -> tuple:
    """FP8 parameters whose largest magnitude exceeds what their metadata scale can store (they saturate)."""
    from ..numerics import F143_MAX, F152_MAX
    out = []
    for v in graph.values:
        if v.dtype.is_fp8 and v.name in weights:
            top = (F143_MAX if v.dtype.short == "f143" else F152_MAX) * 2.0 ** v.scale
            mx = float(np.max(np.abs(weights[v.name])))
            if mx > top:
                out.append((v.name, mx, top))
    return tuple(out)


def load_pixels(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ArrayInputError(path, None, "no such file", "pass a .npy file written by numpy.save") from None
    except (ValueError, OSError) as e:
        raise ArrayInputError(path, None, f"not a readable .npy array ({e})", "use numpy.save") from None


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def package_spec(package: str | Path):
    """The model a package was built from (its carried copy, at the package's depth and precision)."""
    from ..model import load_model
    from ..package.archive import Archive
    m = Archive(package).manifest
    with sources.unpacked(package, m) as d:
        return load_model(str(d / sources.LAYOUT["model"])).with_options(
            layers=m["layers"], precision=m["precision"], fuse_qkv=m["fuse_qkv"],
            fp8_scales=m.get("fp8_scales") or None)


def run_package(package: str | Path, pixels: np.ndarray, weights: str | None = None, seed: int = 0,
                compare: bool = False, progress: Callable[[str, int, int], None] | None = None,
                faithful: bool = True) -> RunResult:
    from ..model.weights import load_weights, random_weights
    pk = open_package(package, progress)
    if pk.stage is not None:
        raise InputError(str(package), None, f"is one stage of a pipeline ({pk.stage.label()})",
                         "run the pipeline's .ipupipe artefact, which hands each stage its input")
    patches = batch_patches(pixels, pk.spec, pk.manifest["batch"], "package")
    w = load_weights(weights, pk.graph, pk.spec) if weights else random_weights(pk.graph, pk.spec, seed)
    return execute(pk, {"patches": patches}, w, compare, progress, faithful, fp32=compare)


def batch_patches(pixels: np.ndarray, spec, batch: int, what: str) -> np.ndarray:
    """The pixels as the model's patches, if they hold the batch the `what` (package, pipeline) runs."""
    from ..model.host import pack_patches
    patches = pack_patches(pixels, spec)
    if patches.shape[0] != batch:
        raise ArrayInputError("--pixels", None, f"holds {patches.shape[0]} images", f"the {what} runs batch {batch}")
    return patches


@dataclasses.dataclass
class Loaded:
    """A package on the emulator with what it was built from: its model (at its depth), target, plan, graph
    (of its pipeline stage, when it is one)."""

    device: Emulator
    manifest: dict
    spec: object
    target: object
    plan: dict
    graph: object
    stage: object


def open_package(package: str | Path, progress=None) -> Loaded:
    from ..model import build_graph, load_model
    from ..model.stage import Stage
    from ..target import load_target
    dev = Emulator(None, progress)
    m = dev.load(Path(package))
    # the model and target are the package's own copies: a package runs from any directory
    with sources.unpacked(Path(package), m) as d:
        spec = load_model(str(d / sources.LAYOUT["model"])).with_options(
            layers=m["layers"], precision=m["precision"], fuse_qkv=m["fuse_qkv"],
            fp8_scales=m.get("fp8_scales") or None)
        tgt = load_target(str(d / sources.LAYOUT["target"]))
        plan = json.loads((d / sources.LAYOUT["plan"]).read_text())
    stage = Stage.in_doc(m, m["layers"], "manifest")
    return Loaded(dev, m, spec, tgt, plan, build_graph(spec, m["batch"], stage), stage)


def execute(pk: Loaded, inputs: dict, w: dict, compare: bool, progress=None, faithful: bool = True,
            fp32: bool = True) -> RunResult:
    """Initialize the weights, run the inputs; with `compare`, the plan-faithful reference on the same inputs
    (bit for bit) and, with `fp32`, the mixed and fp32 references (cosine, max error)."""
    from ..reference import Mode, Policy, run_graph
    from ..reference.run import op_executions
    dev, m, g, tgt, plan = pk.device, pk.manifest, pk.graph, pk.target, pk.plan
    dev.policy = Policy.for_target(tgt, Mode.MIXED)
    t0 = time.perf_counter()
    dev.call("initialize", w)
    y = dev.call("run", inputs)[g.outputs[0]]
    secs = time.perf_counter() - t0
    cmp = None
    if compare:
        def policy(mode: Mode, label: str, **kw) -> Policy:
            """The reference's policy, reporting each op it runs as progress."""
            pol = dataclasses.replace(Policy.for_target(tgt, mode), **kw)
            if progress is None:
                return pol
            total, done = op_executions(g), [0]

            def seen(key, op, ins) -> None:
                done[0] += 1
                progress(f"{label} reference: {key}", done[0], total)
            return dataclasses.replace(pol, observe=seen)
        t1 = time.perf_counter()
        if faithful:
            ref = run_graph(g, inputs, w, policy(Mode.MIXED, "plan-faithful", plan=plan["choices"]))[g.outputs[0]]
        t2 = time.perf_counter()
        diff = (y != ref) if faithful else None
        cmp = {"plan_faithful": {"bit_exact": not diff.any(), "differing": int(diff.sum()), "elements": int(y.size),
                                 "max_abs": float(np.abs(y - ref).max()), "seconds": round(t2 - t1, 2)}
               if faithful else None, "emulator_seconds": round(secs, 2)}
        if fp32:
            mixed = run_graph(g, inputs, w, policy(Mode.MIXED, "mixed"))[g.outputs[0]]
            t3 = time.perf_counter()
            f32 = run_graph(g, inputs, w, policy(Mode.FP32, "fp32"))[g.outputs[0]]
            cmp |= {"mixed": {"cosine": _cos(y, mixed), "max_abs": float(np.abs(y - mixed).max()),
                              "seconds": round(t3 - t2, 2)},
                    "fp32": {"cosine": _cos(y, f32), "max_abs": float(np.abs(y - f32).max()),
                             "reference_mixed_cosine": _cos(mixed, f32)},
                    "ratio_to_mixed_reference": round(secs / max(t3 - t2, 1e-9), 2)}
    return RunResult(y, secs, cmp, profile(m, dev.profile), saturated_params(g, w))


def profile(m: dict, executed: list[dict]) -> dict:
    """Per superstep (plan step, iteration): the modeled cycles of its slowest tile (compute, exchange, sync:
    the codelets' and the exchange's costs, as the plan's objective adds them) and the emulator's seconds.
    The modeled cycles add up to the plan's."""
    names, per = m["step_names"], m["modeled_steps"]
    wall: dict[tuple[int, int], float] = {}
    for e in executed:
        k = (e["plan_step"], e["iteration"])
        wall[k] = wall.get(k, 0.0) + e["seconds"]
    body = m.get("body")
    order = [(s, 0) for s in range(len(names))] if not body else (
        [(s, 0) for s in range(body[0])] + [(s, it) for it in range(m["count"]) for s in range(body[0], body[1] + 1)]
        + [(s, 0) for s in range(body[1] + 1, len(names))])
    rows = [{"plan_step": s, "name": names[s], "iteration": it, "compute": per[s][0], "exchange": per[s][1],
             "sync": per[s][2], "emulator_seconds": round(wall.get((s, it), 0.0), 4)} for s, it in order]
    tot = {k: sum(r[k] for r in rows) for k in ("compute", "exchange", "sync")}
    return {"model": m["model"], "batch": m["batch"], "layers": m["layers"], "modeled_cycles": m["modeled_cycles"],
            "total": {**tot, "cycles": sum(tot.values())}, "supersteps": rows}
