"""`ipuplan sweep` (a verdict grid on Ray: progress, table, DIR/sweep.json, DIR/sweep.csv) and `ipuplan report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from . import cli_common
from .cli_common import _target_path, app, err, out, progress
from .errors import InputError


@app.command()
def sweep(models: List[str] = typer.Argument(..., help="model YAML files"),
          batch: str = typer.Option("1,2,4,8", "--batch", help="batches, comma-separated"),
          layers: Optional[str] = typer.Option(None, "--layers", help="depths, comma-separated (`full`: the model's)"),
          target: Optional[List[str]] = typer.Option(None, "--target", help="target YAML (repeatable)"),
          sets: Optional[List[str]] = typer.Option(None, "--set", help="KEY=V1,V2: a solve option's values (repeatable)"),
          workers: Optional[int] = typer.Option(None, "--workers", help="local Ray workers (default: the cores)"),
          address: Optional[str] = typer.Option(
              None, "--address", help="join this Ray cluster (host:port, as `ray start --head` printed) instead"),
          retry_failed: bool = typer.Option(False, "--retry-failed", help="run failed or killed cases again"),
          largest: bool = typer.Option(
              False, "--largest-batch", help="for each combination, search the largest batch with a checked plan "
              "(doubling from the smallest --batch, then bisection) and the smallest with a checked certificate"),
          cap: int = typer.Option(64, "--batch-cap", help="with --largest-batch: the largest batch probed"),
          output: str = typer.Option(..., "-o", "--output", help="sweep directory"),
          as_json: bool = typer.Option(False, "--json", help="print every case's record as JSON (sweep.json's cases)"),
          status: bool = typer.Option(
              False, "--status", help="solve nothing: what DIR's finished cases say so far (with --largest-batch, "
              "each search's bracket and the probe it waits on); writes nothing")
          ) -> None:
    """Solve and check every case of the grid (exit 0 when every case finished, 1 when some failed)."""
    from .artefacts import output_dir
    from .sweep.cases import grid
    from .sweep.largest import searches
    from .sweep.largest import status as search_status
    from .sweep.run import run_sweep, sweep_status

    if workers is not None and workers < 1:
        raise InputError("--workers", None, f"{workers} is not positive", "give 1 or more")
    if status and not (Path(output) / "cases").is_dir():
        raise InputError("-o", None, f"{output!r} holds no sweep (no cases/ in it)",
                         "give the directory a sweep ran into, with the same models, batches and --set values")
    out_dir = Path(output) if status else output_dir(output)
    cases = grid(list(models), [_target_path(t) for t in (target or [None])], batch, layers, list(sets or []))
    if largest:
        if cap < 1:
            raise InputError("--batch-cap", None, f"{cap} is not positive", "give 1 or more (default 64)")
        if status:
            return _largest_table([search_status(s, out_dir) for s in searches(cases, cap)], output, as_json, True)
        return _largest(searches(cases, cap), out_dir, output, workers, address, retry_failed, as_json)
    if status:
        return _cases_table(sweep_status(cases, out_dir), output, as_json, True)
    with progress("sweep") as update:
        records = run_sweep(cases, out_dir, workers, address, retry_failed,
                            lambda counts, done, total: update(" · ".join(f"{k} {v}" for k, v in counts.items()),
                                                               done, total))
    _cases_table(records, output, as_json)


def _cases_table(records: list[dict], output: str, as_json: bool, status: bool = False) -> None:
    """The grid's table (or its records as JSON); exit 1 when a case failed or its artefact was not passed (and,
    but for --status, when one is open)."""
    bad = any(r["status"] not in ("done", "open") or r.get("checked") is False for r in records) or \
        (not status and any(r["status"] == "open" for r in records))
    if as_json:
        print(json.dumps({"cases": records, "sweep": str(Path(output) / "sweep.json")}, default=str))
        raise typer.Exit(1 if bad else 0)
    t = Table("model", "target", "batch", "depth", "set", "verdict", "ms", "images/s", "slack B", "checked", "s")
    for col in t.columns:  # a terminal folds long cells; a pipe gets whole lines
        col.overflow = "fold" if out.is_terminal else "ignore"
        col.no_wrap = not out.is_terminal
    for r in records:
        verdict = r.get("verdict") or ("not finished" if r["status"] == "open" else
                                       f"[red]{r['status']}[/]: {(r.get('error') or '')[:40]}")
        t.add_row(Path(r["model"]).stem, Path(r["target"]).stem, str(r["batch"]), str(r["layers"] or "full"),
                  " ".join(f"{k}={v}" for k, v in r["settings"].items()), verdict,
                  f"{r['modeled_ms']:.3f}" if r.get("modeled_ms") else "",
                  f"{r['images_per_s']:,.1f}" if r.get("images_per_s") else "",
                  f"{r['slack_bytes']:,}" if r.get("slack_bytes") is not None else "",
                  {True: "yes", False: "[red]NO[/]", None: ""}[r.get("checked")], f"{r.get('solve_seconds', 0):.0f}")
    if out.is_terminal:
        out.print(t, width=max(out.width, 150))
    else:  # rich renders no wider than its console (80 columns on a pipe): a wide console for whole lines
        type(out)(soft_wrap=True, width=400).print(t)
    failed = [r for r in records if r["status"] == "failed"]
    if status:
        out.print(f"{len(records)} cases: {sum(r['status'] == 'done' for r in records)} finished, "
                  f"{sum(r['status'] == 'open' for r in records)} not finished, {len(failed)} failed (as {output} "
                  f"holds them now; nothing solved)")
    else:
        resumed = sum(1 for r in records if r.get("resumed"))
        out.print(f"{len(records)} cases ({resumed} resumed), {len(failed)} failed; {Path(output) / 'sweep.json'}, "
                  f"{Path(output) / 'sweep.csv'}")
    if bad:
        raise typer.Exit(1)


def _largest(found, out_dir: Path, output: str, workers, address, retry_failed: bool, as_json: bool) -> None:
    from .sweep.largest import run_largest

    with progress("largest batch") as update:
        records = run_largest(found, out_dir, workers, address, retry_failed,
                              lambda counts, done, total: update(" · ".join(f"{k} {v}" for k, v in counts.items()),
                                                                 done, total))
    _largest_table(records, output, as_json)


def _largest_table(records: list[dict], output: str, as_json: bool, status: bool = False) -> None:
    """Each search's boundary (or the records as JSON); with --status, the bracket its finished probes prove and
    the probe it waits on. Exit 1 when a probe failed or an artefact was not passed (and, but for --status, when a
    search is open)."""
    bad = any(r["status"] == "failed" or r.get("unchecked") for r in records) or \
        (not status and any(r["status"] != "done" for r in records))
    if as_json:
        print(json.dumps({"searches": records, "sweep": str(Path(output) / "sweep.json")}, default=str))
        raise typer.Exit(1 if bad else 0)
    t = Table("model", "target", "depth", "set", "largest FIT", "images/s", "smallest INFEASIBLE", "unknown",
              "best images/s (batch)", "probes")
    for col in t.columns:
        col.overflow = "fold" if out.is_terminal else "ignore"
        col.no_wrap = not out.is_terminal
    short = {"FIT": "F", "INFEASIBLE": "I", "UNKNOWN": "U"}
    for r in records:
        probes = " ".join(f"{p['batch']}{short.get(p.get('verdict'), 'x')}" for p in r["probes"]) + \
            (f" {r['waits_on']}…" if r.get("waits_on") else "")
        probes = probes.strip()
        hi = r.get("smallest_infeasible")
        t.add_row(Path(r["model"]).stem, Path(r["target"]).stem, str(r["layers"] or "full"),
                  " ".join(f"{k}={v}" for k, v in r["settings"].items()),
                  str(r.get("largest_fit") or "none") + (" (proven)" if r.get("proven") else
                                                         " (the cap)" if r.get("capped") else ""),
                  f"{r['images_per_s']:,.1f}" if r.get("images_per_s") else "",
                  f"{hi} ({r.get('infeasible_certificate')})" if hi else "not found",
                  ",".join(map(str, r.get("unknown") or [])),
                  f"{r['best_images_per_s']:,.1f} ({r['best_batch']})" if r.get("best_batch") else "", probes)
    if out.is_terminal:
        out.print(t, width=max(out.width, 150))
    else:
        type(out)(soft_wrap=True, width=400).print(t)
    where = f"as {output} holds them now, nothing solved; b… the probe a search waits on" if status else \
        str(Path(output) / "sweep.json")
    out.print(f"{len(records)} searches ({sum(r['status'] == 'open' for r in records)} open), "
              f"{sum(len(r['probes']) for r in records)} probes finished; F FIT, I INFEASIBLE, U UNKNOWN, x failed; "
              f"{where}")
    if bad:
        raise typer.Exit(1)


@app.command()
def report(directory: str = typer.Argument(..., help="a solve, build or run directory"),
           output: Optional[str] = typer.Option(None, "-o", "--output", help="HTML file (default DIR/report.html)"),
           scale: str = typer.Option("auto", "--scale", help="memory colour scale: auto (the fullest cell) or fixed "
                                     "(the tile's capacity); the page can switch"),
           as_json: bool = typer.Option(False, "--json", help="print what was written as JSON")) -> None:
    """Write one self-contained HTML page: memory, placement, exchange, time, and why not when INFEASIBLE."""
    import time

    from .artefacts import output_file, write_file
    from .report import render

    if scale not in ("auto", "fixed"):
        raise InputError("--scale", None, f"{scale!r} is not a scale", "valid: auto, fixed")
    directory = str(cli_common.solve_dir(directory))
    dest = output_file(output or Path(directory) / "report.html", "-o")
    t0 = time.perf_counter()
    html = render(directory, scale)
    write_file(dest, html)
    pipe = Path(directory) / "pipeline.json"
    if pipe.exists() and output is None:  # each stage's own page, where the pipeline page links to
        for s in json.loads(pipe.read_text()).get("stages", []):
            write_file(Path(directory) / s["dir"] / "report.html", render(Path(directory) / s["dir"], scale))
    if as_json:
        print(json.dumps({"output": str(dest), "bytes": len(html.encode()), "seconds": round(time.perf_counter() - t0,
                                                                                               3)}))
        return
    out.print(f"wrote {dest}: {len(html.encode()) / 2**20:.2f} MiB in {time.perf_counter() - t0:.1f} s")
