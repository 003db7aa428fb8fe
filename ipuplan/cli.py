"""The `ipuplan` command line: parse, call one function, map ipuplan errors to messages and exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .cli_common import (CATALOGUE_HELP, DEFAULT_TARGET, RELAY_HELP, SCALES_HELP, _batch, _catalogue, _load, _seconds, _seed,  # noqa: F401,E501
                         _images_or_pixels, _print_time, _print_verdict, _solve_option_ranges, _target_path, app, err, out)
from . import cli_common, heap, options
from .errors import InputError, Interrupted, IpuplanError


@app.command()
def show(model: str = typer.Argument(..., help="model YAML, e.g. models/siglip.yaml"),
         batch: int = typer.Option(1, "--batch", "-b", help="images per batch"),
         layers: Optional[int] = typer.Option(None, "--layers", help="override the encoder depth"),
         precision: Optional[str] = typer.Option(None, "--precision", help="f16 or fp8 GEMM operands"),
         print_ir: bool = typer.Option(False, "--ir", help="also print the IR"),
         as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Graph summary: ops by kind, parameters and bytes per precision, FLOPs per image, largest activation."""
    from .ir import print_graph
    from .model import build_graph
    from .summary import summarize

    spec = _load(model, layers, precision)
    g = build_graph(spec, _batch(batch))
    s = summarize(g, spec, batch)
    if as_json:
        print(json.dumps(s.to_json(), indent=2))
        return
    out.print(f"[bold]{s.model}[/]  batch {s.batch}, {s.layers} layers, {s.tokens} tokens x {s.width}")
    out.print(f"parameters  {s.parameters:,}  ("
              + ", ".join(f"{k} {v:,} B" for k, v in s.parameter_bytes.items()) + ")")
    out.print(f"constants   {s.constant_bytes:,} B")
    out.print(f"FLOPs/image {s.flops_per_image / 1e9:,.2f} G")
    la = s.largest_activation
    out.print(f"largest activation  {la.name} {la.type_str()} = {la.nbytes:,} B")
    t = Table("op kind", "executed", "in IR")
    for k, v in s.ops.items():
        t.add_row(k, f"{v:,}", f"{s.ops_static[k]:,}")
    out.print(t)
    if print_ir:
        out.print(print_graph(g), markup=False, highlight=False)


@app.command()
def reference(model: str = typer.Argument(..., help="model YAML"),
              pixels: Optional[str] = typer.Option(None, "--pixels", help="float32 .npy [batch, C, H, W], normalized"),
              image: Optional[List[str]] = typer.Option(None, "--image", help="an image file (PNG, JPEG), "
                                                        "preprocessed as the model declares; repeat for a batch"),
              output: str = typer.Option(..., "-o", "--output", help="where to write the pooled [batch, width] .npy"),
              weights: Optional[str] = typer.Option(None, "--weights", help="safetensors checkpoint (native naming)"),
              layers: Optional[int] = typer.Option(None, "--layers", help="override the encoder depth"),
              mode: str = typer.Option("fp32", "--mode", help="fp32 or mixed"),
              seed: int = typer.Option(0, "--seed", help="seed of the random weights (without --weights)"),
              target: Optional[str] = typer.Option(None, "--target", help="target YAML (accumulation policy)"),
              plan: Optional[str] = typer.Option(None, "--plan", help="a build or solve directory: round in the "
                                                 "plan's order (its k-splits, key splits, statistics; --mode mixed), "
                                                 "with its precision and FP8 scales"),
              scales: str = typer.Option("fixed", "--scales", help=SCALES_HELP + " (without --plan)"),
              as_json: bool = typer.Option(False, "--json", help="print what was written as JSON")) -> None:
    """Run the numpy reference on an image batch and write the pooled embedding."""
    import numpy as np

    from .model import build_graph
    from .model.host import pack_patches
    from .model.weights import load_weights, random_weights
    from .reference import Mode, Policy, run_graph
    from .target import load_target

    from .artefacts import output_file, save_npy
    try:
        m = Mode(mode)
    except ValueError:
        raise InputError("--mode", None, f"{mode!r} is not a mode", "valid: fp32, mixed") from None
    _seed(seed)
    dest = output_file(output, "-o", ".npy")
    doc = None
    if plan is not None:
        if m is not Mode.MIXED:
            raise InputError("--plan", None, "needs --mode mixed", "the plan fixes the mixed mode's rounding order")
        if scales != "fixed":
            raise InputError("--scales", None, "is given with --plan", "the plan's own FP8 scales apply")
        try:
            doc = json.loads((Path(plan) / "plan.json").read_text())
            spec = _load(model, layers).with_options(precision=doc["precision"], fuse_qkv=doc["fuse_qkv"],
                                                     fp8_scales=doc.get("fp8_scales") or None)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(str(Path(plan) / "plan.json"), None, f"not a readable plan ({e})",
                             "pass a directory ipuplan solve or build wrote") from None
    else:
        spec = _load(model, layers).with_options(fp8_scales=options.fp8_scales(scales, model))
    tgt = load_target(_target_path(target))
    x = _images_or_pixels(pixels, image, spec)
    patches = pack_patches(x, spec, pixels or "--image")
    g = build_graph(spec, patches.shape[0])
    w = load_weights(weights, g, spec) if weights else random_weights(g, spec, seed)
    pol = Policy.for_target(tgt, m)
    if doc is not None:
        if doc.get("model") != spec.name or doc.get("batch") != patches.shape[0] or doc.get("layers") != spec.layers:
            raise InputError("--plan", None, f"the plan is for {doc.get('model')} batch {doc.get('batch')}, "
                             f"{doc.get('layers')} layers", f"give a plan for {spec.name} batch {patches.shape[0]}, "
                             f"{spec.layers} layers")
        import dataclasses
        pol = dataclasses.replace(pol, plan=doc["choices"])
    y = run_graph(g, {"patches": patches}, w, pol)[g.outputs[0]]
    save_npy(dest, y.astype(np.float32))
    if as_json:
        print(json.dumps({"output": str(dest), "shape": list(y.shape), "mode": m.value, "plan_faithful": bool(plan)}))
        return
    err.print(f"wrote {dest}: {list(y.shape)} float32 ({m.value}{', plan-faithful' if plan else ''})")


@app.command()
def solve(model: str = typer.Argument(..., help="model YAML, e.g. models/siglip.yaml"),
          batch: int = typer.Option(1, "--batch", "-b", help="images per batch"),
          layers: Optional[int] = typer.Option(None, "--layers", help="override the encoder depth"),
          target: Optional[str] = typer.Option(None, "--target", help="target YAML (default targets/c600.yaml)"),
          time_limit: float = typer.Option(600.0, "--time-limit",
                                           help="wall-clock seconds; an unfinished answer becomes UNKNOWN"),
          effort: float = typer.Option(120.0, "--effort",
                                       help="deterministic seconds of search (decides the answer, not the machine)"),
          seed: int = typer.Option(0, "--seed", help="solver seed (same inputs + seed = same plan)"),
          slack_effort: float = typer.Option(
              10.0, "--slack-effort", help="deterministic seconds, after the fastest plan is found, to look among "
              "equally fast plans for the one with the most free bytes on its fullest tile; 0 skips it"),
          headroom: int = typer.Option(0, "--headroom", help="bytes per tile left free on top of the plan"),
          support_reserve: Optional[int] = typer.Option(
              None, "--support-reserve", help="the seeds' accounting: B bytes reserved in a 586,960 B budget"),
          relay: Optional[bool] = typer.Option(None, "--relay/--no-relay", help=RELAY_HELP),
          strategy: str = typer.Option("cpsat", "--strategy", help="cpsat (proof) or beam (the seeds' heuristic)"),
          catalogue: str = typer.Option("shaped", "--catalogue", help=CATALOGUE_HELP),
          scales: str = typer.Option("fixed", "--scales", help=SCALES_HELP),
          no_explain: bool = typer.Option(False, "--no-explain",
                                          help="on INFEASIBLE, skip core minimization and the deficit search"),
          table_budget: Optional[int] = typer.Option(
              None, "--exchange-table-budget", help="exchange table bytes per tile (default: the target's limit)"),
          ipus: int = typer.Option(1, "--ipus", help="chips in a pipeline (more than 1: contiguous stages, one per "
                                   "chip, over the target's link)"),
          objective: str = typer.Option("throughput", "--objective", help="with --ipus > 1: throughput (the slowest "
                                        "stage plus its link transfer) or latency (all stages and links)"),
          output: Optional[str] = typer.Option(None, "-o", "--output", help="directory (default out/<model>-b<batch>)"),
          as_json: bool = typer.Option(False, "--json", help="print the plan/verdict document")) -> None:
    """Plan MODEL on the target: FIT (exit 0), INFEASIBLE (1) or UNKNOWN (3)."""
    from .job.solve import Job, run_solve
    from .solver.solve import SolveOptions

    from .artefacts import output_dir
    spec_name = Path(model).stem
    out_dir = output_dir(output or f"out/{spec_name}-b{batch}")
    options.positive_seconds("--time-limit", time_limit)
    options.positive_seconds("--effort", effort)
    _seconds("--slack-effort", slack_effort)
    _seed(seed)
    if slack_effort < 0:
        raise InputError("--slack-effort", None, f"{slack_effort:g} is negative", "give seconds >= 0 (0 skips it)")
    if strategy not in ("cpsat", "beam"):
        raise InputError("--strategy", None, f"{strategy!r} is not a strategy", "valid: cpsat, beam")
    tpath = _target_path(target)
    _solve_option_ranges(tpath, support_reserve, table_budget, headroom)
    job = Job(model, tpath, _batch(batch), layers,
              options=SolveOptions(batch=batch, support_reserve=support_reserve, time_limit=time_limit, effort=effort,
                                   seed=seed, relays=relay, table_budget=table_budget, headroom=headroom,
                                   explain=not no_explain, strategy=strategy, slack_effort=slack_effort,
                                   catalogue=_catalogue(catalogue)),
              fp8_scales=options.fp8_scales(scales, model))
    report = None if as_json else (lambda s: err.print(f"[dim]  {s}[/]"))
    if ipus != 1 or objective != "throughput":
        from .cli_pipeline import solve_pipeline
        return solve_pipeline(job, ipus, objective, out_dir, report, as_json)  # exits with the verdict's code
    result, doc = run_solve(job, out_dir, report)
    cli_common.decided(result.verdict.exit_code)
    if as_json:
        print(json.dumps(doc, indent=1))
    else:
        _print_verdict(doc, out_dir)
    raise typer.Exit(result.verdict.exit_code)


@app.command()
def explain(directory: str = typer.Argument(..., help="a solve output directory"),
            what_if: Optional[str] = typer.Option(None, "--what-if", help="batch, layers, memory, ipus (the fewest "
                                                  "chips that hold the model, and the certificate for one fewer) or "
                                                  "speed (the catalogue's fastest plan with memory aside, and what "
                                                  "memory costs this one)"),
            time_limit: float = typer.Option(600.0, "--time-limit",
                                             help="wall-clock seconds for each solve or search a --what-if makes "
                                                  "(each spends the solve's recorded effort)"),
            as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Why DIR's model does not fit (contributors in bytes, deficit, cheaper alternatives) and what would."""
    options.positive_seconds("--time-limit", time_limit)
    d = cli_common.solve_dir(directory)
    directory = str(d)
    name = "verdict.json" if (d / "verdict.json").exists() else "pipeline.json" if (d / "pipeline.json").exists() \
        else "plan.json"
    if not (d / name).exists():
        raise InputError(directory, None, "no verdict.json or plan.json here", "pass a directory ipuplan solve wrote")
    try:
        doc = json.loads((d / name).read_text())
        if not isinstance(doc, dict) or "verdict" not in doc:
            raise ValueError("no verdict in it")
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InputError(str(d / name), None, f"not a readable {name} ({e})",
                         "pass a directory ipuplan solve wrote (solve again if the file was cut short)") from None
    result = None
    if what_if:
        from .job.whatif import what_if as run_what_if
        if what_if not in ("batch", "layers", "memory", "ipus", "speed"):
            raise InputError("--what-if", None, f"{what_if!r} is not a question",
                             "valid: batch, layers, memory, ipus, speed")
        if what_if == "ipus" or "ipus" in doc:
            from .cli_pipeline import what_if_ipus
            return what_if_ipus(d, doc, what_if, as_json, time_limit)
        result = run_what_if(d, what_if, None if as_json else (lambda s: err.print(f"[dim]  {s}[/]")), time_limit)
    if as_json:
        print(json.dumps({"verdict": doc["verdict"], "core": doc.get("core"), "what_if": result}, indent=1))
        return
    if "ipus" in doc:
        from .cli_pipeline import print_pipeline
        print_pipeline(doc, d)
        return
    _print_explanation(doc)
    if result:
        _print_what_if(result)


def _print_explanation(doc: dict) -> None:
    head = f"{doc['model']} batch {doc['batch']}, {doc['layers']} layers"
    if doc["verdict"] != "INFEASIBLE":
        out.print(f"{doc['verdict']}: {head} — nothing to explain" + (
            f"; peak {doc['peaks']['total']['bytes']:,} B on tile {doc['peaks']['total']['tile']} at "
            f"{doc['peaks']['total']['step']}" if doc["verdict"] == "FIT" else ""), highlight=False)
        return
    core = doc["core"]
    out.print(f"[bold red]INFEASIBLE[/] {head}: {core['scope']}", highlight=False)
    shrunk = core.get("size_before_minimizing")
    if not core["constraints"]:
        out.print(f"  core: none {cli_common.NO_CORE}", highlight=False)
    else:
        out.print(f"  {'minimal ' if core.get('minimal') else ''}core ({len(core['constraints'])} constraints"
                  + (f", shrunk from {shrunk}" if shrunk and shrunk != len(core["constraints"]) else "") + "):")
    for c in core["constraints"]:
        out.print(f"    {c}", markup=False, highlight=False)
    _print_certificate(core.get("certificate") or {})
    ex = core.get("explanation") or {}
    if "deficit_bytes" in ex and ex["deficit_bytes"] == 0:
        out.print(f"  the least-overflowing plan fits memory but exceeds exchange tables by {ex['tables_over']:,} B "
                  f"and fragments by {ex['fragments_over']:,}", highlight=False)
    elif "deficit_bytes" in ex:
        exact = "exactly" if ex["slack_lower_bound"] == ex["deficit_bytes"] else "at most"
        out.print(f"  the least-overflowing plan needs {ex['deficit_bytes']:,} B more on tile {ex['tile']} at "
                  f"{ex['step']} ({exact}: usable {ex['usable_bytes']:,} -> {ex['needs_usable_bytes']:,} B)",
                  highlight=False)
        if ex["tables_over"] or ex["fragments_over"]:
            out.print(f"  and exceeds exchange tables by {ex['tables_over']:,} B, fragments by {ex['fragments_over']:,}")
        out.print("  live on that tile then:")
        for c in ex["contributors"][:12]:
            out.print(f"    {c['bytes']:>9,} B  {c['tensor']}", markup=False, highlight=False)
        if ex["alternatives"]:
            out.print("  cheaper choices on that tile (they may cost elsewhere):")
            for a in ex["alternatives"][:6]:
                out.print(f"    {a['op']}: {a['chosen']} -> {a['cheapest_here']} saves {a['saves']:,} B",
                          markup=False, highlight=False)
    elif ex.get("note"):
        out.print(f"  explanation: {ex['note']}", highlight=False)


def _print_certificate(c: dict) -> None:
    if not c.get("kind"):
        out.print(f"  certificate: none ({c.get('note', 'not built')})", highlight=False)
        return
    out.print(f"  certificate: {c['kind']} over {c['rows']} exact row(s), certificate.json "
              f"(`ipuplan check` re-proves it)", highlight=False)
    for r in c.get("row_details", []):
        out.print(f"    {r['name']}: capacity {r['capacity']:,} B; the cheapest choice of every op there (with the "
                  f"parameter homes it brings) needs {r['cheapest_bytes']:,} B", markup=False, highlight=False)
        for g in r["cheapest_by_group"][:6]:
            out.print(f"      {g['bytes']:>9,} B  {g['group']} ({g['cheapest']})", markup=False, highlight=False)
    m = c.get("machine")
    if m:
        verdict = "which alone proves it does not fit" if m["proves"] else "so no catalogue-independent proof"
        out.print(f"  machine: parameters {m['parameter_bytes']:,} B + live activations {m['live_activation_bytes']:,} B "
                  f"at {m['at']} = {m['needs_bytes']:,} B of {m['capacity_bytes']:,} B on all tiles, {verdict}",
                  highlight=False)


def _print_what_if(r: dict) -> None:
    if r["kind"] == "speed":
        _print_speed(r)
        return
    if r["kind"] == "memory":
        if "needs_usable_bytes" in r:
            how = 'exact' if r['exact'] else 'upper bound; lower bound ' + format(r['lower_bound_bytes'], ',')
            if r["confirmed_fit"]:
                out.print(f"what-if memory: a plan exists with {r['needs_usable_bytes']:,} usable B per tile ({how}); "
                          f"confirmed FIT ({r['fit_dir']})", highlight=False)
            else:  # the elastic plan fits the model there; a solve on that target did not reach a checked, placed FIT
                out.print(f"what-if memory: the least-overflowing plan fits {r['needs_usable_bytes']:,} usable B per "
                          f"tile ({how}), not confirmed: the solve on that target is {r.get('confirm_verdict', '?')} "
                          f"({r['fit_dir']})", highlight=False)
            if r.get("confirm_hinted_ops"):
                out.print(f"  that solve started from the least-overflowing plan ({r['confirm_hinted_ops']} ops hinted)",
                          highlight=False)
            b = r.get("one_byte_less")
            if b:
                out.print(f"  one byte less per tile: {b['verdict']}, {b['evidence']} ({b['dir']})", highlight=False)
        else:
            out.print(f"what-if memory: {r['note']}", highlight=False)
        lo = r.get("least_overflowing")
        if lo:  # sought by the what-if itself (the solve left none): where it overflows most, and by what
            out.print(f"  the least-overflowing plan: {lo['deficit_bytes']:,} B over on tile {lo['tile']} at "
                      f"{lo['step']}" + (" (no plan overflows less)" if lo["slack_lower_bound"] == lo["deficit_bytes"] else
                                         f" (no plan overflows less than {max(0, lo['slack_lower_bound']):,} B)")
                      + "; live on that tile then:", highlight=False)
            for c in lo["contributors"]:
                out.print(f"    {c['bytes']:>9,} B  {c['tensor']}", markup=False, highlight=False)
            for a in lo["alternatives"]:
                out.print(f"    {a['op']}: {a['chosen']} -> {a['cheapest_here']} saves {a['saves']:,} B here",
                          markup=False, highlight=False)
        return
    out.print(f"what-if {r['kind']}: largest FIT {r['largest_fit']} ({r.get('fit_evidence')}), smallest INFEASIBLE "
              f"{r['smallest_infeasible']} ({r.get('infeasible_evidence')}); probes: "
              f"{', '.join(f'{k}={v}' for k, v in r['probes'].items())}", highlight=False)
    if r.get("unknown"):
        hi = r["smallest_infeasible"]
        out.print(f"  not proven either way: {r['kind']} {', '.join(map(str, r['unknown']))} (UNKNOWN: no plan found and "
                  f"no independent proof within the effort); the largest FIT is {r['largest_fit'] or 0} or more"
                  + (f", less than {hi}" if hi else ""), highlight=False)


def _print_speed(r: dict) -> None:
    if "note" in r:
        out.print(f"what-if speed: {r['note']}", highlight=False)
        return
    how = "optimal" if r["ceiling_optimal"] else "a bound: the effort ran out before the optimum"
    out.print(f"what-if speed: memory aside, no plan of the {r['catalogue']} catalogue is faster than "
              f"{r['ceiling_cycles']:,} cycles ({r['ceiling_images_per_s']:,} images/s; {how}; the per-op floor "
              f"{r['floor_cycles']:,})" + (f"; this plan {r['plan_cycles']:,} ({r['plan_images_per_s']:,} images/s), "
                                           f"{100 * r['above_ceiling']:.1f} % above" if "plan_cycles" in r else ""),
              highlight=False)
    if "ceiling_split" in r:
        c = r["ceiling_split"]
        out.print(f"  the fastest plan: compute {c['compute']:,}, exchange {c['exchange']:,}, sync {c['sync']:,} "
                  "cycles (docs/PLANNER.md, \"The ceiling of a catalogue\")", highlight=False)
    if r.get("ops"):
        out.print("  what memory costs this plan, per op (cycles over all runs; the op's own bytes on its fullest "
                  "tile, every layer's copy of its parameters counted):")
        for x in r["ops"][:8]:
            out.print(f"    {x['op']}: {x['extra_cycles']:+,}  {x['chosen']} ({x['chosen_bytes']:,} B) instead of "
                      f"{x['fastest']} ({x['fastest_bytes']:,} B)", markup=False, highlight=False)
        cv = r["conversions"]
        out.print(f"    layout conversions between ops: {cv['plan_cycles'] - cv['ceiling_cycles']:+,}", highlight=False)


def _verdict_of(path) -> str | None:
    """The verdict a verdict.json records, or None when it is unreadable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return doc.get("verdict") if isinstance(doc, dict) else None


@app.command()
def check(directory: str = typer.Argument(..., help="a solve output directory (plan.json or certificate.json) "
                                              "or a package (DIR/model.ipupkg)"),
          as_json: bool = typer.Option(False, "--json", help="print {ok, kind, violations, lines} as JSON")) -> None:
    """Independently re-verify a FIT plan, an INFEASIBLE certificate or a package against model and target
    (exit 0 holds, 1 violated or rejected, 2 an unreadable or invalid package)."""
    from .checker import check_dir
    from .checker.certificate import check_certificate

    d = cli_common.solve_dir(directory)
    if d.suffix == ".ipupkg":
        _check_package(d, as_json)
        return
    if d.suffix == ".ipupipe":
        from .cli_pipeline import check_pipeline_package_cli
        return check_pipeline_package_cli(d, as_json)
    plan = (d / "plan.json").exists()
    if not plan and (d / "pipeline.json").exists():
        from .cli_pipeline import check_pipeline
        return check_pipeline(d, as_json)
    if not plan and (d / "certificate.json").exists():
        try:
            cert = json.loads((d / "certificate.json").read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(str(d / "certificate.json"), None, f"not a readable certificate ({e})",
                             "pass a directory ipuplan solve wrote for an INFEASIBLE verdict") from None
        report = check_certificate(cert, base=d)
        what = "CERTIFICATE VERIFIED"
    elif not plan and (d / "verdict.json").exists():
        if _verdict_of(d / "verdict.json") == "UNKNOWN":
            raise InputError(directory, None, "an UNKNOWN verdict: no plan and no proof, nothing to check",
                             "solve again with more --effort or a longer --time-limit; `ipuplan explain DIR "
                             "--what-if memory` says how far it is from fitting")
        raise InputError(directory, None, "an INFEASIBLE verdict without certificate.json (no proof of its core "
                         "was found)", "re-run ipuplan solve with a longer --time-limit")
    else:
        report = check_dir(d)  # a missing plan.json is reported there
        what = "CHECK PASSED"
    cli_common.decided(0 if report.ok else 1)
    if as_json:
        print(json.dumps({"ok": report.ok, "kind": "certificate" if what.startswith("CERT") else "plan",
                          "violations": report.violations, "lines": report.lines}, indent=1))
        if report.ok and plan and (d / "model.ipupkg").exists():
            _check_package(d / "model.ipupkg", as_json)
        raise typer.Exit(0 if report.ok else 1)
    for line in report.lines:
        out.print(line, markup=False, highlight=False)
    if report.ok:
        out.print(f"[bold green]{what}[/]")
        if plan and (d / "model.ipupkg").exists():
            _check_package(d / "model.ipupkg")
        return
    out.print(f"[bold red]CHECK FAILED[/]: {report.violations[0]}", highlight=False)
    raise typer.Exit(1)


def _check_package(path: Path, as_json: bool = False) -> None:
    from .checker.package import check_package
    ok, lines, why = check_package(path)
    cli_common.decided(0 if ok else 1)
    if as_json:
        print(json.dumps({"ok": ok, "kind": "package", "violations": [] if ok else [why], "lines": lines}, indent=1))
        raise typer.Exit(0 if ok else 1)
    for line in lines:
        out.print(line, markup=False, highlight=False)
    if ok:
        out.print("[bold green]PACKAGE CHECK PASSED[/]")
        return
    out.print(f"[bold red]CHECK FAILED[/]: {why}", highlight=False)
    raise typer.Exit(1)


@app.command("import")
def import_model(hf: Optional[str] = typer.Option(None, "--hf", help="a Hugging Face SigLIP config.json (vision or "
                                                 "full model), or a save directory holding one"),
                 timm_name: Optional[str] = typer.Option(None, "--timm", help="a timm model name (vit_pe_core_*)"),
                 name: Optional[str] = typer.Option(None, "--name", help="the model's name (default from the source)"),
                 output: Optional[str] = typer.Option(None, "-o", "--output", help="the model YAML to write "
                                                      "(default: print it)"),
                 as_json: bool = typer.Option(False, "--json", help="print {output, model, yaml} as JSON")) -> None:
    """Write a model YAML from an upstream description; the file loads like models/*.yaml."""
    from .artefacts import output_file, write_file
    from .model import load_model
    from .model.importers import from_hf_config, from_timm
    if bool(hf) == bool(timm_name):
        raise InputError("--hf/--timm", None, "give exactly one of them", "--hf config.json or --timm vit_pe_core_*")
    dest = output_file(output, "-o", ".yaml") if output else None
    text, nm = from_hf_config(hf, name) if hf else from_timm(timm_name, name)
    if dest is not None:
        write_file(dest, text)
        spec = load_model(dest)  # what was written loads (and says so)
    if as_json:
        print(json.dumps({"output": str(dest) if dest else None, "model": nm, "yaml": text}))
    elif dest is None:
        print(text, end="")
    else:
        err.print(f"wrote {dest}: {spec.name}, {spec.layers} layers, width {spec.width}, {spec.image_size} px")


@app.command()
def place(csv_file: str = typer.Argument(..., help="buffers in MiniMalloc's CSV format: id,lower,upper,size[,alignment]"),
          capacity: int = typer.Option(..., "--capacity", help="bytes of memory to place them in"),
          output: Optional[str] = typer.Option(None, "-o", "--output", help="write the CSV with an offset column"),
          nodes: int = typer.Option(50_000_000, "--nodes", help="canonical search nodes (deterministic)"),
          cpsat_seconds: float = typer.Option(20.0, "--cpsat-seconds",
                                              help="then CP-SAT, deterministic seconds (0: none)"),
          as_json: bool = typer.Option(False, "--json", help="print the outcome as JSON")) -> None:
    """Place every buffer at an offset (exit 0), prove no placement exists (1), or run out of effort (3)."""
    import time

    from .backend.placement import place as place_buffers
    from .backend.placement import violations
    from .backend.placement.csvio import read_csv, write_csv

    if capacity <= 0 or nodes <= 0 or cpsat_seconds < 0:
        raise InputError("--capacity" if capacity <= 0 else "--nodes" if nodes <= 0 else "--cpsat-seconds", None,
                         "is out of range", "give a positive number (--cpsat-seconds may be 0)")
    inst = read_csv(csv_file, capacity)
    t0 = time.perf_counter()
    res = place_buffers(inst, node_budget=nodes, cpsat_seconds=cpsat_seconds)
    secs = time.perf_counter() - t0
    head = f"{len(inst.buffers)} buffers, capacity {capacity:,} B: "
    if res.placed:
        bad = violations(inst, res.offsets)
        if bad:  # the validator is written apart from the search; a disagreement is a bug, never a placement
            raise RuntimeError(f"the placement failed validation: {bad[0]}")
        height = max((o + b.size for o, b in zip(res.offsets, inst.buffers)), default=0)
        if output:
            write_csv(output, inst, res.offsets)
        if as_json:
            print(json.dumps({"verdict": "PLACED", "buffers": len(inst.buffers), "capacity": capacity, "height": height,
                              "method": res.method, "nodes": res.nodes, "seconds": round(secs, 3),
                              "offsets": [int(o) for o in res.offsets], "output": output}))
        else:
            out.print(f"[bold green]PLACED[/] {head}height {height:,} B, {res.method}, {res.nodes:,} nodes, "
                      f"{secs:.2f} s; validated")
        raise typer.Exit(0)
    verdict, code = ("IMPOSSIBLE", 1) if res.proven else ("UNKNOWN", 3)
    if as_json:
        print(json.dumps({"verdict": verdict, "buffers": len(inst.buffers), "capacity": capacity, "reason": res.reason,
                          "nodes": res.nodes, "seconds": round(secs, 3)}))
    elif res.proven:
        out.print(f"[bold red]IMPOSSIBLE[/] {head}{res.reason} ({res.nodes:,} nodes, {secs:.2f} s)")
    else:
        out.print(f"[bold yellow]UNKNOWN[/] {head}{res.reason} ({secs:.2f} s)")
    raise typer.Exit(code)


from . import cli_build, cli_sweep  # noqa: E402,F401  (build, export, run and sweep register on `app`)


def _usage_line(e) -> str:
    """A usage error as one line: what is wrong, and where the valid forms are listed."""
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "ipuplan"
    msg = " ".join(e.format_message().split()).rstrip(".")
    return f"error: {where}: {msg}; see `{where} --help`"


def main() -> None:
    """Run the command line: a verdict's exit code (0 FIT, 1 INFEASIBLE, 3 UNKNOWN), 2 for any bad input or usage
    (one line, never a traceback), 130 when interrupted; a closed output pipe ends quietly."""
    cex = _click_exceptions()
    heap.apply()
    try:
        rc = app(standalone_mode=False)  # click returns a typer.Exit's code instead of raising it
    except Interrupted:
        _finish(lambda: print("interrupted", file=sys.stderr), 130)
    except IpuplanError as e:
        _finish(lambda: print(f"error: {e.render()}", file=sys.stderr), e.exit_code)
    except typer.Exit as e:
        _finish(None, e.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _finish(lambda: print("interrupted", file=sys.stderr), 130)
    except BrokenPipeError:
        _finish(None, cli_common.PENDING_EXIT)
    except SystemExit:
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click met a closed pipe and exits 1: not ours
            _finish(None, cli_common.PENDING_EXIT)
        raise
    except cex.ClickException as e:
        if isinstance(e, getattr(cex, "NoArgsIsHelpError", ())) and getattr(e, "ctx", None) is not None:
            _finish(lambda: print(e.ctx.get_help()), 2)  # a bare command: its help, as a usage error
        _finish(lambda: print(_usage_line(e), file=sys.stderr), e.exit_code if e.exit_code else 2)
    _finish(None, rc if isinstance(rc, int) else 0)


def _click_exceptions():
    """The click that typer parses with (recent typer vendors its own copy)."""
    try:
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer on the real click
        from click import exceptions
    return exceptions


def _finish(say, code: int) -> None:
    """Print the last words and exit with `code`; a reader that closed the pipe gets nothing more, quietly."""
    import os
    try:
        if say is not None:
            say()
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except ValueError:  # stdout already closed
        pass
    try:  # Python flushes stdout again at exit: point it at /dev/null so a closed pipe stays quiet
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)


if __name__ == "__main__":
    main()
