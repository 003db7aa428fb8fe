"""The backend commands: `build` (solve, place, lower, package), `export` (ipu-stack interchange), `run` (the
emulator)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from .cli_common import (CATALOGUE_HELP, RELAY_HELP, SCALES_HELP, _batch, _catalogue, _print_verdict,
                         _seed, _images_or_pixels, _solve_option_ranges, _target_path, app, decided, err, out, progress)
from . import cli_common, options
from .errors import InputError


COSINE_WARNING = 0.99  # `run --compare` warns below this cosine against the fp32 reference


@app.command()
def build(model: str = typer.Argument(..., help="model YAML, e.g. models/siglip.yaml"),
          batch: int = typer.Option(1, "--batch", "-b", help="images per batch"),
          layers: Optional[int] = typer.Option(None, "--layers", help="override the encoder depth"),
          target: Optional[str] = typer.Option(None, "--target", help="target YAML (default targets/c600.yaml)"),
          time_limit: float = typer.Option(600.0, "--time-limit", help="wall-clock seconds for the solve"),
          effort: float = typer.Option(120.0, "--effort", help="deterministic seconds of search"),
          seed: int = typer.Option(0, "--seed", help="solver seed"),
          headroom: int = typer.Option(0, "--headroom", help="bytes per tile left free on top of the plan"),
          relay: Optional[bool] = typer.Option(None, "--relay/--no-relay", help=RELAY_HELP),
          table_budget: Optional[int] = typer.Option(None, "--exchange-table-budget",
                                                     help="exchange table bytes per tile"),
          catalogue: str = typer.Option("shaped", "--catalogue", help=CATALOGUE_HELP),
          scales: str = typer.Option("fixed", "--scales", help=SCALES_HELP),
          ipus: int = typer.Option(1, "--ipus", help="chips in a pipeline: one package per stage in DIR/model.ipupipe"),
          objective: str = typer.Option("throughput", "--objective", help="with --ipus > 1: throughput or latency"),
          output: Optional[str] = typer.Option(None, "-o", "--output", help="directory (default out/<model>-b<batch>)"),
          as_json: bool = typer.Option(False, "--json", help="print the build summary as JSON")) -> None:
    """Solve, place and lower MODEL into DIR/model.ipupkg (DIR/model.ipupipe with --ipus > 1) (exit 0), or report
    why not (1 INFEASIBLE, 3 UNKNOWN)."""
    from .job.build import run_build
    from .job.solve import Job
    from .solver.solve import SolveOptions

    from .artefacts import output_dir
    out_dir = output_dir(output or f"out/{Path(model).stem}-b{batch}")
    options.positive_seconds("--time-limit", time_limit)
    options.positive_seconds("--effort", effort)
    _seed(seed)
    tpath = _target_path(target)
    _solve_option_ranges(tpath, None, table_budget, headroom)
    job = Job(model, tpath, _batch(batch), layers,
              options=SolveOptions(batch=batch, time_limit=time_limit, effort=effort, seed=seed, relays=relay,
                                   table_budget=table_budget, headroom=headroom, explain=False,
                                   catalogue=_catalogue(catalogue)),
              fp8_scales=options.fp8_scales(scales, model))
    report = None if as_json else (lambda s: err.print(f"[dim]  {s}[/]"))
    if ipus != 1 or objective != "throughput":
        from .cli_pipeline import build_pipeline_cli
        return build_pipeline_cli(job, ipus, objective, out_dir, report, as_json)
    result, doc, summary = run_build(job, out_dir, report)
    decided(result.verdict.exit_code)
    if as_json:
        print(json.dumps({"verdict": doc["verdict"], "package": summary}, indent=1))
    else:
        _print_verdict(doc, out_dir)
        if summary:
            s = summary["seconds"]
            out.print(f"[bold green]BUILT[/] {summary['file']}: {summary['bytes'] / 2**20:.2f} MiB, {summary['steps']} "
                      f"steps, {summary['vertices']:,} vertices, {summary['runs']:,} exchange runs; solve and place "
                      f"{s['solve_and_place']:.1f} s, lower {s['lower']:.1f} s, write {s['write']:.1f} s, validate "
                      f"{s['read_and_validate']:.1f} s")
    raise typer.Exit(result.verdict.exit_code)


@app.command()
def calibrate(model: str = typer.Argument(..., help="model YAML (precision fp8, or --precision fp8)"),
              pixels: Optional[str] = typer.Option(None, "--pixels", help="calibration batch: float32 .npy "
                                                   "[N, C, H, W], normalized"),
              image: Optional[List[str]] = typer.Option(None, "--image", help="a calibration image (PNG, JPEG); "
                                                        "repeat for more"),
              weights: Optional[str] = typer.Option(None, "--weights", help="safetensors checkpoint (upstream "
                                                    "naming); without it, the seeded random weights `run` uses"),
              seed: int = typer.Option(0, "--seed", help="seed of the random weights (without --weights)"),
              layers: Optional[int] = typer.Option(None, "--layers", help="override the encoder depth"),
              precision: Optional[str] = typer.Option(None, "--precision", help="override the model's precision"),
              target: Optional[str] = typer.Option(None, "--target", help="target YAML (its FP8 accumulation type "
                                                   "bounds the scales; default targets/c600.yaml)"),
              headroom: int = typer.Option(1, "--headroom", help="binades between the largest calibrated "
                                           "activation and the FP8 format's largest value"),
              output: str = typer.Option("scales.json", "-o", "--output", help="scales file to write"),
              as_json: bool = typer.Option(False, "--json", help="print the scales as JSON")) -> None:
    """Choose FP8 scales for MODEL's GEMMs from its weights and the fp32 reference on calibration images (each
    weight's from its own values, each activation's from what the images produce, both kept inside the target's
    FP8 accumulator); write them for `solve/build --scales FILE`."""
    from .artefacts import output_file, write_file
    from .cli_common import _load
    from .model import build_graph
    from .model.host import pack_patches
    from .model.spec import Precision
    from .model.weights import load_weights, random_weights
    from .scales import choose
    from .target import load_target
    import numpy as np

    _seed(seed)
    if not 0 <= headroom <= 8:
        raise InputError("--headroom", None, f"{headroom} binades", "valid: 0..8")
    dest = output_file(output, "-o", ".json")
    spec = _load(model, layers, precision)
    if spec.precision is not Precision.FP8:
        raise InputError(model, "precision", f"is {spec.precision.value}", "scales are for FP8 GEMMs: --precision fp8")
    tgt = load_target(_target_path(target))
    patches = pack_patches(_images_or_pixels(pixels, image, spec), spec)
    g = build_graph(spec, patches.shape[0])
    w = load_weights(weights, g, spec) if weights else random_weights(g, spec, seed)
    acc = {"f16": np.float16, "f32": np.float32}[tgt.accumulation["f8"]]
    try:
        sc = choose(g, spec.name, w, {"patches": patches}, patches.shape[0], float(np.finfo(acc).max), headroom)
    except ValueError as e:
        raise InputError("--weights" if weights else model, None, str(e), "calibrate with weights and images that "
                         "give every GEMM nonzero operands") from None
    write_file(dest, json.dumps(sc.to_json(), indent=1) + "\n")
    if as_json:
        print(json.dumps(sc.to_json(), indent=1))
        return
    out.print(f"wrote {dest}: {len(sc.gemms)} GEMMs of {spec.name}, {sc.method}")
    for gs in sc.gemms:
        out.print(f"  {gs.gemm:<16} x 2^{gs.x:<4} w 2^{gs.w:<4} (|x| <= {gs.x_max:.4g}, |w| <= {gs.w_max:.4g}, "
                  f"|x @ w| <= {gs.acc_max:.4g})")


@app.command()
def export(directory: str = typer.Argument(..., help="a build directory (DIR/model.ipupkg) or a package"),
           exchange_snapshot: bool = typer.Option(False, "--exchange-snapshot",
                                                  help="every exchange phase as ipu-stack ExchangeScheduleSnapshot v4"),
           output: Optional[str] = typer.Option(None, "-o", "--output",
                                                help="file (default DIR/exchange-snapshot.json)"),
           as_json: bool = typer.Option(False, "--json", help="print what was written as JSON")) -> None:
    """Write the package's exchanges in another toolchain's format."""
    from .artefacts import output_file, write_file
    from .package.io import read_package
    from .package.snapshot import snapshot
    from .package.validate import validate

    if not exchange_snapshot:
        raise InputError("export", None, "no format chosen", "valid: --exchange-snapshot")
    d = cli_common.solve_dir(directory)
    pkg = d if d.suffix == ".ipupkg" else d / "model.ipupkg"
    dest = output_file(output or pkg.parent / "exchange-snapshot.json", "-o")
    prog, m = read_package(pkg)
    validate(prog, m, pkg)
    snap = snapshot(prog)
    write_file(dest, json.dumps(snap, separators=(",", ":")))
    runs = sum(len(p["transfers"]) for p in snap["phases"])
    if as_json:
        print(json.dumps({"output": str(dest), "schema_version": snap["schema_version"], "tiles": snap["tile_count"],
                          "phases": len(snap["phases"]), "transfers": runs}))
        return
    out.print(f"wrote {dest}: schema_version {snap['schema_version']}, {snap['tile_count']} tiles, "
              f"{len(snap['phases'])} phases, {runs:,} transfers")


@app.command()
def run(package: str = typer.Argument(..., help="a package (DIR/model.ipupkg) or a pipeline (DIR/model.ipupipe)"),
        pixels: Optional[str] = typer.Option(None, "--pixels", help="float32 .npy [batch, C, H, W], normalized"),
        image: Optional[List[str]] = typer.Option(None, "--image", help="an image file (PNG, JPEG), preprocessed as "
                                                  "the model declares; repeat for a batch"),
        weights: Optional[str] = typer.Option(None, "--weights", help="safetensors checkpoint (upstream naming)"),
        seed: int = typer.Option(0, "--seed", help="seed of the random weights (without --weights)"),
        output: Optional[str] = typer.Option(None, "-o", "--output", help="pooled output .npy (default DIR/output.npy)"),
        compare: bool = typer.Option(False, "--compare", help="compare with the reference on the same inputs"),
        faithful: bool = typer.Option(True, "--faithful/--no-faithful",
                                      help="with --compare: also the plan-faithful reference (bit for bit)"),
        profile: Optional[str] = typer.Option(None, "--profile", help="per-superstep profile JSON"),
        min_cosine: Optional[float] = typer.Option(
            None, "--min-cosine", help="with --compare: fail (exit 1) when the output's cosine against the fp32 "
            "reference is below C (without it, a warning below 0.99)"),
        as_json: bool = typer.Option(False, "--json", help="print the outcome (output, profile totals, comparison) "
                                     "as JSON")) -> None:
    """Execute a package on the emulated IPU21 (exit 0; 1 when --compare finds the plan-faithful reference
    differs, the cosine against fp32 is below --min-cosine, or the program faults; 2 bad input or package)."""
    from .artefacts import output_file, save_npy, write_file
    from .runner.job import package_spec, run_package
    if Path(package).suffix == ".ipupipe":
        from .cli_pipeline import run_pipeline_cli
        return run_pipeline_cli(package, pixels, image, weights, seed, output, compare, min_cosine, as_json)

    _seed(seed)
    if min_cosine is not None and not (-1.0 <= min_cosine <= 1.0):
        raise InputError("--min-cosine", None, f"{min_cosine:g} is not a cosine", "valid: -1..1, e.g. 0.99")
    if min_cosine is not None and not compare:
        raise InputError("--min-cosine", None, "needs --compare", "add --compare (the fp32 reference gives the cosine)")
    dest = output_file(output or Path(package).parent / "output.npy", "-o", ".npy")
    prof = output_file(profile, "--profile") if profile else None
    x = _images_or_pixels(pixels, image, package_spec(package) if image else None)
    with progress("run") as update:
        r = run_package(package, x, weights, seed, compare, update, faithful)
    import numpy as np
    save_npy(dest, r.output.astype(np.float32))
    if prof:
        write_file(prof, json.dumps(r.profile, indent=1))
    code = 1 if r.compare and r.compare["plan_faithful"] and not r.compare["plan_faithful"]["bit_exact"] else 0
    for name, mx, top in r.saturated:
        err.print(f"[bold yellow]warning:[/] {name}: largest |w| {mx:.4g} exceeds {top:.4g}, the most its FP8 scale "
                  f"stores: those weights saturate (calibrate with these weights and build with --scales)")
    cosine = r.compare["fp32"]["cosine"] if r.compare else None
    floor = COSINE_WARNING if min_cosine is None else min_cosine
    low = cosine is not None and not cosine >= floor  # NaN is low
    if low:
        err.print(f"[bold yellow]warning:[/] the output's cosine against the fp32 reference is {cosine:.6f}, below "
                  f"{floor:g}: the FP8 scales may not fit this model's tensors (calibrate: `ipuplan calibrate`, "
                  f"then build with --scales)")
        if min_cosine is not None:
            code = 1
    decided(code)
    if as_json:
        print(json.dumps({"output": str(dest), "shape": list(r.output.shape), "seconds": round(r.seconds, 3),
                          "profile": r.profile["total"] | {"modeled_cycles": r.profile["modeled_cycles"]},
                          "compare": r.compare}, indent=1, default=float))
        raise typer.Exit(code)
    out.print(f"wrote {dest}: {list(r.output.shape)} float32; emulator {r.seconds:.1f} s")
    t = r.profile["total"]
    out.print(f"modeled {t['cycles']:,} cycles (compute {t['compute']:,}, exchange {t['exchange']:,}, sync "
              f"{t['sync']:,}) over {len(r.profile['supersteps'])} supersteps; the plan's {r.profile['modeled_cycles']:,}")
    if r.compare:
        c = r.compare
        pf, f = c["plan_faithful"], c["fp32"]
        if pf:
            word = "[bold green]BIT-EXACT[/]" if pf["bit_exact"] else \
                f"[bold red]{pf['differing']:,} of {pf['elements']:,} differ[/]"
            out.print(f"plan-faithful mixed reference: {word} (max abs {pf['max_abs']:.3g}, reference "
                      f"{pf['seconds']:.1f} s)")
        out.print(f"mixed reference: cosine {c['mixed']['cosine']:.6f}, max abs {c['mixed']['max_abs']:.3g} "
                  f"({c['mixed']['seconds']:.1f} s; emulator / reference {c['ratio_to_mixed_reference']:.2f})")
        out.print(f"fp32 reference: cosine {f['cosine']:.6f}, max abs {f['max_abs']:.3g} (the mixed reference's own "
                  f"cosine {f['reference_mixed_cosine']:.6f})")
        if code:
            raise typer.Exit(code)
