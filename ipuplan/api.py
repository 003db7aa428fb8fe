"""The Python API: `solve`, `build`, `run` and `check` as the command line runs them, returning typed results;
bad input raises the exception tree of `ipuplan.errors` (InputError and its kin), never a verdict."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from . import options
from .errors import InputError

DEFAULT_TARGET = Path(__file__).resolve().parent.parent / "targets" / "c600.yaml"


@dataclass(frozen=True)
class Solved:
    """A solve's verdict and where its artefacts are. `document` is plan.json (FIT) or verdict.json."""

    verdict: str  # "FIT", "INFEASIBLE" or "UNKNOWN"
    directory: Path
    document: dict
    modeled_cycles: int | None
    ms: float | None
    package: Path | None = None  # `build` only: DIR/model.ipupkg when FIT

    @property
    def exit_code(self) -> int:
        return {"FIT": 0, "INFEASIBLE": 1, "UNKNOWN": 3}[self.verdict]


@dataclass(frozen=True)
class Checked:
    ok: bool
    kind: str  # "plan", "certificate", "package", "pipeline" or "pipeline package"
    violations: tuple[str, ...]
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Ran:
    output: np.ndarray  # the model's output for the batch (float32)
    seconds: float
    bit_exact: bool | None  # against the plan-faithful reference, when compare=True
    compare: dict | None


def _job(model, batch, target, layers, catalogue, effort, time_limit, seed, headroom, scales):
    from .job.solve import Job
    from .solver.solve import SolveOptions
    options.batch(batch, "batch")
    for name, v in (("effort", effort), ("time_limit", time_limit)):
        if options.seconds(name, v) <= 0:
            raise InputError(name, None, f"{v!r} is not positive", "give seconds > 0")
    options.seed(seed, "seed")
    cat = options.catalogue(catalogue, "catalogue")
    tpath = str(target) if target is not None else str(DEFAULT_TARGET)
    return Job(str(model), tpath, batch, layers,
               options=SolveOptions(batch=batch, time_limit=float(time_limit), effort=float(effort), seed=seed,
                                    headroom=headroom, catalogue=cat),
               fp8_scales=options.fp8_scales(scales, str(model), "scales"))


def _solved(result, doc, out: Path, package: Path | None = None) -> Solved:
    c = doc.get("cycles") or {}
    return Solved(result.verdict.value, out, doc, c.get("modeled"), c.get("ms"), package)


def solve(model: str | Path, batch: int = 1, target: str | Path | None = None, out: str | Path | None = None,
          layers: int | None = None, catalogue: str = "shaped", effort: float = 120.0, time_limit: float = 600.0,
          seed: int = 0, headroom: int = 0, progress: Callable[[str], None] | None = None,
          scales: str | Path | None = None, ipus: int = 1, objective: str = "throughput") -> Solved:
    """Plan `model` at `batch` on `target` (default the C600): FIT with a checked, placed plan, INFEASIBLE with a
    checked certificate, or UNKNOWN; the artefacts go to `out` (default out/<model>-b<batch>). `scales`: a scales
    file from `ipuplan calibrate` (default: the model's fixed FP8 scale). `ipus` > 1: a pipeline over that many
    chips (`document` is pipeline.json; `modeled_cycles` its slowest stage plus link, `ms` its latency)."""
    from .artefacts import output_dir
    from .job.solve import run_solve
    job = _job(model, batch, target, layers, catalogue, effort, time_limit, seed, headroom, scales)
    d = output_dir(out if out is not None else f"out/{Path(model).stem}-b{batch}")
    if ipus != 1 or objective != "throughput":
        return _pipeline(job, ipus, objective, d, progress)
    result, doc = run_solve(job, d, progress)
    return _solved(result, doc, d)


def _pipeline(job, ipus: int, objective_name: str, d: Path, progress, build: bool = False) -> Solved:
    from .pipeline.build import build_pipeline
    from .pipeline.solve import pipeline_job, run_pipeline
    pj = pipeline_job(job, ipus, objective_name)
    o, summary = build_pipeline(pj, d, progress) if build else (run_pipeline(pj, d, progress), None)
    doc = o.doc
    fit = o.verdict.value == "FIT"
    return Solved(o.verdict.value, d, doc, doc["throughput"]["bottleneck_cycles"] if fit else None,
                  doc["latency"]["ms"] if fit else None, Path(summary["file"]) if summary else None)


def build(model: str | Path, batch: int = 1, target: str | Path | None = None, out: str | Path | None = None,
          layers: int | None = None, catalogue: str = "shaped", effort: float = 120.0, time_limit: float = 600.0,
          seed: int = 0, headroom: int = 0, progress: Callable[[str], None] | None = None,
          scales: str | Path | None = None, ipus: int = 1, objective: str = "throughput") -> Solved:
    """`solve`, then lower a FIT to `out/model.ipupkg` (validated; `out/model.ipupipe` for a pipeline); `package`
    is None for other verdicts."""
    from .artefacts import output_dir
    from .job.build import run_build
    job = _job(model, batch, target, layers, catalogue, effort, time_limit, seed, headroom, scales)
    d = output_dir(out if out is not None else f"out/{Path(model).stem}-b{batch}")
    if ipus != 1 or objective != "throughput":
        return _pipeline(job, ipus, objective, d, progress, build=True)
    result, doc, summary = run_build(job, d, progress)
    return _solved(result, doc, d, Path(summary["file"]) if summary else None)


def run(package: str | Path, pixels: np.ndarray | str | Path, weights: str | None = None, seed: int = 0,
        compare: bool = False) -> Ran:
    """Execute a package (or a pipeline's .ipupipe, stage by stage) on the emulator: `pixels` normalized float32
    [batch, channels, size, size] (an array or a .npy path); `weights` a safetensors checkpoint (default seeded
    random weights)."""
    from .runner.job import load_pixels, run_package
    px = load_pixels(str(pixels)) if isinstance(pixels, (str, Path)) else np.asarray(pixels)
    if Path(package).suffix == ".ipupipe":
        from .runner.pipeline import run_pipeline_package
        p = run_pipeline_package(package, px, weights, seed, compare)
        return Ran(p.output, p.seconds, p.compare["bit_exact"] if p.compare else None, p.compare)
    r = run_package(package, px, weights, seed, compare)
    pf = (r.compare or {}).get("plan_faithful") if compare else None
    return Ran(r.output, r.seconds, pf["bit_exact"] if pf else None, r.compare)


def check(path: str | Path) -> Checked:
    """Independently re-verify a solve directory (its plan and placement, or its certificate) or a package."""
    from .checker import check_dir
    from .checker.certificate import check_certificate
    from .checker.package import check_package
    p = Path(path)
    if p.suffix == ".ipupipe":
        from .checker.pipeline_package import check_pipeline_package
        ok, lines, why = check_pipeline_package(p)
        return Checked(ok, "pipeline package", () if ok else (why,), tuple(lines))
    if (p / "pipeline.json").exists() and not (p / "plan.json").exists():
        from .checker.pipeline import check_pipeline_dir
        rep = check_pipeline_dir(p)
        return Checked(rep.ok, "pipeline", tuple(rep.violations), tuple(rep.lines))
    if p.suffix == ".ipupkg":
        ok, lines, why = check_package(p)
        return Checked(ok, "package", () if ok else (why,), tuple(lines))
    if not (p / "plan.json").exists() and (p / "certificate.json").exists():
        try:
            cert = json.loads((p / "certificate.json").read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(str(p / "certificate.json"), None, f"not a readable certificate ({e})",
                             "pass a directory ipuplan solve wrote") from None
        rep, kind = check_certificate(cert, base=p), "certificate"
    else:
        rep, kind = check_dir(p), "plan"
    return Checked(rep.ok, kind, tuple(rep.violations), tuple(rep.lines))
