"""The command line's pipeline answers: `solve --ipus N` verdicts and `check` of a pipeline directory."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer

from . import cli_common
from .cli_common import out
from .errors import InputError


def solve_pipeline(job, ipus: int, objective: str, out_dir: Path, report, as_json: bool) -> None:
    """Plan `job`'s model over `ipus` chips and exit with the verdict's code."""
    from .pipeline.solve import pipeline_job, run_pipeline
    o = run_pipeline(pipeline_job(job, ipus, objective), out_dir, report)
    code = cli_common.decided(o.verdict.exit_code)
    if as_json:
        print(json.dumps(o.doc, indent=1))
    else:
        print_pipeline(o.doc, out_dir)
    raise typer.Exit(code)


def print_pipeline(doc: dict, out_dir: Path) -> None:
    v = doc["verdict"]
    head = f"{doc['model']} batch {doc['batch']}, {doc['layers']} layers on {doc['ipus']} chip(s)"
    b = doc["bound"]
    if v == "FIT":
        tp, lat = doc["throughput"], doc["latency"]
        out.print(f"[bold green]FIT[/]  {head}: {tp['images_per_s']:,.1f} images/s modeled (slowest stage "
                  f"{tp['bottleneck_stage']} + its link: {tp['bottleneck_cycles']:,} cycles), latency "
                  f"{lat['ms']:.3f} ms", highlight=False)
        for s in doc["stages"]:
            st = s["stage"]
            ends = "".join(x for x, on in ((" + stem", st["stem"]), (" + head", st["head"])) if on)
            link = (f"; hands {s['output']['bytes']:,} B over the link in {s['output']['link_cycles']:,} cycles"
                    if s["output"] else "")
            gap = f" (gap {s['gap'] * 100:.2f}%)" if s.get("gap") is not None else ""
            out.print(f"  stage {s['index']}: layers {st['first']}..{st['first'] + st['count'] - 1}{ends}: "
                      f"{s['cycles']:,} cycles = {s['ms']:.3f} ms{gap}{link} ({out_dir / s['dir']})",
                      markup=False, highlight=False)
        out.print(f"  machine bound over stages: at least {b['fewest_ipus']} chip(s); partitions tried: "
                  + ", ".join(f"{'+'.join(map(str, p['counts']))} "
                              f"({p['score']:,} cycles)" if p["score"] is not None else
                              f"{'+'.join(map(str, p['counts']))} (no plan on every stage)"
                              for p in doc["partition_search"]["partitions"]), markup=False, highlight=False)
        out.print(f"  pipeline: {out_dir / 'pipeline.json'}; every stage placed and checked; `ipuplan check "
                  f"{out_dir}` re-checks them and the boundaries")
    elif v == "INFEASIBLE":
        out.print(f"[bold red]INFEASIBLE[/]  {head}: {doc['headline']}", highlight=False)
        cert = doc.get("certificate") or {}
        for k, c in (cert.get("stages") or {}).items():
            out.print(f"  {k} stage with {c['count']} layers: INFEASIBLE, {c['reason']}", markup=False,
                      highlight=False)
        bound = ("within the catalogue, beside the machine bound's" if cert.get("kind") == "pipeline-stages" else
                 "the machine bound's")
        out.print(f"  {bound} fewest chips: {b['fewest_ipus'] or 'none (a layer exceeds one chip)'}"
                  f"; certificate {out_dir / 'certificate.json'} (`ipuplan check {out_dir}` re-proves it)",
                  highlight=False)
    else:
        out.print(f"[bold yellow]UNKNOWN[/]  {head}: {doc['unknown']['reason']}", highlight=False)
        for p in (doc.get("partition_search") or {}).get("partitions", []):
            out.print(f"  partition {'+'.join(map(str, p['counts']))}: " + ", ".join(
                f"stage {i} {v}" + (f" ({p['reasons'][str(i)]})" if str(i) in p.get("reasons", {}) else "")
                for i, v in enumerate(p["verdicts"])), markup=False, highlight=False)


def check_pipeline(d: Path, as_json: bool) -> None:
    from .checker.pipeline import check_pipeline_dir
    rep = check_pipeline_dir(d)
    code = cli_common.decided(0 if rep.ok else 1)
    if as_json:
        print(json.dumps({"ok": rep.ok, "kind": "pipeline", "violations": rep.violations, "lines": rep.lines},
                         indent=1))
        raise typer.Exit(code)
    for line in rep.lines:
        out.print(line, markup=False, highlight=False)
    out.print("[bold green]PIPELINE CHECK PASSED[/]" if rep.ok else "[bold red]PIPELINE CHECK FAILED[/]")
    raise typer.Exit(code)


def what_if_ipus(d: Path, doc: dict, kind: str, as_json: bool, time_limit: float = 600.0) -> None:
    """`explain --what-if ipus` (from any solve or pipeline directory); other questions about a pipeline are not
    answered yet."""
    from .cli_common import err
    if kind != "ipus":
        raise InputError("--what-if", None, f"{kind} is not answered for a pipeline directory",
                         "valid here: ipus (or ask about a single-chip solve directory); the largest batch on N "
                         "chips: `ipuplan sweep MODEL --set ipus=N --largest-batch -o DIR` (docs/SWEEP.md)")
    from .pipeline.whatif import fewest_ipus
    from .job.whatif import job_from_doc
    out_dir = d / "what-if"
    out_dir.mkdir(parents=True, exist_ok=True)
    job = job_from_doc(doc, d)
    job = dataclasses.replace(job, options=dataclasses.replace(job.options, time_limit=time_limit))
    r = fewest_ipus(job, out_dir, None if as_json else (lambda s: err.print(f"[dim]  {s}[/]")))
    (out_dir / "ipus.json").write_text(json.dumps(r, indent=1) + "\n")
    if as_json:
        print(json.dumps({"verdict": doc["verdict"], "what_if": r}, indent=1))
        raise typer.Exit(0)
    if r["bound_fewest"] is None:
        out.print(f"what-if ipus: {r['note']}")
        raise typer.Exit(0)
    b = r.get("below")
    out.print(f"what-if ipus: the machine bound over stages needs at least {r['bound_fewest']} chip(s)"
              + (f"; {b['ipus']}: {b['verdict']} ({b['evidence']})" if b else ""), highlight=False)
    if r["fewest_fit"]:
        out.print(f"  fewest chips with a plan: {r['fewest_fit']} ({r['fit_evidence']}; {r['fit_dir']})"
                  + ("; the boundary is proven" if r["proven"] else
                     "; between the bound and it no plan was found and nothing is proven"), highlight=False)
    else:
        out.print("  no pipeline found a plan on every stage up to " + max(r["probes"], key=int) + " chips; probes: "
                  + ", ".join(f"{k}={v}" for k, v in r["probes"].items()), highlight=False)
    raise typer.Exit(0)


def build_pipeline_cli(job, ipus: int, objective: str, out_dir: Path, report, as_json: bool) -> None:
    from .pipeline.build import build_pipeline
    from .pipeline.solve import pipeline_job
    o, summary = build_pipeline(pipeline_job(job, ipus, objective), out_dir, report)
    code = cli_common.decided(o.verdict.exit_code)
    if as_json:
        print(json.dumps({"verdict": o.verdict.value, "package": summary}, indent=1))
        raise typer.Exit(code)
    print_pipeline(o.doc, out_dir)
    if summary:
        out.print(f"[bold green]BUILT[/] {summary['file']}: {summary['bytes'] / 2**20:.2f} MiB, {summary['stages']} "
                  f"stage packages ({summary['programs']} programs lowered); solve and place "
                  f"{summary['seconds']['solve_and_place']:.1f} s, lower and write "
                  f"{summary['seconds']['lower_and_write']:.1f} s", highlight=False)
    raise typer.Exit(code)


def check_pipeline_package_cli(path: Path, as_json: bool) -> None:
    from .checker.pipeline_package import check_pipeline_package
    ok, lines, why = check_pipeline_package(path)
    code = cli_common.decided(0 if ok else 1)
    if as_json:
        print(json.dumps({"ok": ok, "kind": "pipeline package", "violations": [] if ok else [why], "lines": lines},
                         indent=1))
        raise typer.Exit(code)
    for line in lines:
        out.print(line, markup=False, highlight=False)
    out.print("[bold green]PIPELINE PACKAGE CHECK PASSED[/]" if ok else f"[bold red]PIPELINE PACKAGE CHECK FAILED[/]: "
              f"{why}")
    raise typer.Exit(code)


def run_pipeline_cli(package: str, pixels, image, weights, seed: int, output, compare: bool, min_cosine,
                     as_json: bool) -> None:
    """`run X.ipupipe`: the stages in order; exit 1 when a stage differs from its plan-faithful reference or the
    cosine against fp32 is below --min-cosine."""
    import numpy as np

    from .artefacts import output_file, save_npy
    from .cli_common import _images_or_pixels, progress
    from .package.pipeline import PipelinePackage
    from .runner.pipeline import run_pipeline_package
    if min_cosine is not None and not compare:
        raise InputError("--min-cosine", None, "needs --compare", "add --compare (the fp32 reference gives the cosine)")
    dest = output_file(output or Path(package).parent / "output.npy", "-o", ".npy")
    spec = None
    if image:
        import tempfile

        from .runner.job import package_spec
        pp = PipelinePackage(package)
        with tempfile.TemporaryDirectory() as tmp:
            spec = package_spec(pp.extract(pp.manifest["stages"][0]["member"], Path(tmp)))
    x = _images_or_pixels(pixels, image, spec)
    with progress("run") as update:
        r = run_pipeline_package(package, x, weights, seed, compare, update)
    save_npy(dest, r.output.astype(np.float32))
    c = r.compare
    code = 1 if c and not c["bit_exact"] else 0
    if c and min_cosine is not None and not c["fp32"]["cosine"] >= min_cosine:
        code = 1
    cli_common.decided(code)
    if as_json:
        print(json.dumps({"output": str(dest), "shape": list(r.output.shape), "seconds": round(r.seconds, 3),
                          "stages": [{"seconds": round(s.seconds, 3), "modeled_cycles": s.profile["modeled_cycles"],
                                      "compare": s.compare} for s in r.stages], "compare": c}, indent=1,
                         default=float))
        raise typer.Exit(code)
    out.print(f"wrote {dest}: {list(r.output.shape)} float32; {len(r.stages)} stages emulated in {r.seconds:.1f} s")
    for i, s in enumerate(r.stages):
        pf = (s.compare or {}).get("plan_faithful")
        word = "" if not pf else (" BIT-EXACT" if pf["bit_exact"] else
                                  f" {pf['differing']:,} of {pf['elements']:,} differ")
        out.print(f"  stage {i}: modeled {s.profile['modeled_cycles']:,} cycles; emulator {s.seconds:.1f} s{word}",
                  markup=False, highlight=False)
    if c:
        out.print(("[bold green]BIT-EXACT[/]" if c["bit_exact"] else "[bold red]NOT BIT-EXACT[/]") +
                  " against the plan-faithful reference, stage by stage on the stages' own inputs")
        out.print(f"mixed reference: cosine {c['mixed']['cosine']:.6f}; fp32 reference: cosine "
                  f"{c['fp32']['cosine']:.6f} (the mixed reference's own {c['fp32']['reference_mixed_cosine']:.6f})")
    raise typer.Exit(code)
