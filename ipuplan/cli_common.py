"""What every command module shares: the Typer app, the consoles, the target default, and the solve options'
ranges and verdict printing that `solve` and `build` both use."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from . import options
from .errors import InputError

app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Provable memory planning of vision transformers on IPU21-class tiles.")
# an INFEASIBLE whose core re-solve did not finish: its certificate scanned the tightest rows instead
NO_CORE = "found within the effort; the certificate is over the tightest exact rows instead"
PENDING_EXIT = 0  # the exit code a command has decided on, kept when its output pipe closes under it


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version
        print(f"ipuplan {version('ipuplan')}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True,
                                                  help="print the version and exit")) -> None:
    """Provable memory planning of vision transformers on IPU21-class tiles."""


def decided(code: int) -> int:
    """Remember the exit code a command has decided on before it prints (see PENDING_EXIT)."""
    global PENDING_EXIT
    PENDING_EXIT = code
    return code


class _Console(Console):
    """A console whose closed pipe is the command line's to answer (rich would exit 1 on its own)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


out = _Console(soft_wrap=True)
err = _Console(stderr=True, soft_wrap=True)
DEFAULT_TARGET = "targets/c600.yaml"


def _target_path(target: Optional[str]) -> str:
    if target:
        return target
    here = Path(DEFAULT_TARGET)
    if here.exists():
        return str(here)
    packaged = Path(__file__).resolve().parent.parent / DEFAULT_TARGET
    return str(packaged if packaged.exists() else here)


def _load(model: str, layers: Optional[int], precision: Optional[str] = None, fuse_qkv: Optional[bool] = None):
    from .model import load_model
    return load_model(model).with_options(layers=layers, precision=precision, fuse_qkv=fuse_qkv)


def _catalogue(name: str):
    """The --catalogue option as the solver's enum (bad input: exit 2 naming what is valid)."""
    return options.catalogue(name)


CATALOGUE_HELP = ("implementation space: shaped (homes and producer layouts shaped for their readers, grids screened "
                  "by the objective's costs), rotating (shaped plus rotating compute-shift matmuls and ring attention), "
                  "compact (rotating, FP8 rotating matmuls accumulating in their F16 output) or grid (the earlier "
                  "space, for comparisons)")


RELAY_HELP = ("offer relays: gather a replicated operand onto relay tiles, then multicast (default: on with "
              "--catalogue grid, off with shaped)")


def _seconds(flag: str, value: float) -> float:
    return options.seconds(flag, value)


def _seed(seed: int) -> int:
    return options.seed(seed)


def _batch(batch: int) -> int:
    return options.batch(batch)


def _solve_option_ranges(target_path: str, support_reserve, table_budget, headroom) -> None:
    """The options a plan or certificate may be made for (the checkers accept the same ranges)."""
    from .target import load_target
    t = load_target(target_path)
    if support_reserve is not None and not 0 <= support_reserve < t.seeds_planned_data_bytes:
        raise InputError("--support-reserve", None, f"{support_reserve:,} is out of range",
                         f"valid: 0..{t.seeds_planned_data_bytes - 1:,} (inside the seeds' planned-data budget)")
    if table_budget is not None and not 1 <= table_budget <= t.exchange_table_bytes_max:
        raise InputError("--exchange-table-budget", None, f"{table_budget:,} is out of range",
                         f"valid: 1..{t.exchange_table_bytes_max:,} (the target's limit)")
    if not 0 <= headroom < t.usable_bytes:
        raise InputError("--headroom", None, f"{headroom:,} is out of range", f"valid: 0..{t.usable_bytes - 1:,}")


def _print_time(b: dict | None) -> None:
    """Where the modeled cycles go: compute / exchange / sync, by op kind, and the slowest supersteps."""
    if not b:
        return
    tot = b["compute"] + b["exchange"] + b["sync"] or 1
    pct = lambda d: "/".join(f"{100 * d[k] / tot:.0f}" for k in ("compute", "exchange", "sync"))
    beyond = f" (of which {b['exchange_beyond_bytes']:,} beyond bytes)" if "exchange_beyond_bytes" in b else ""
    out.print(f"  time: compute {b['compute']:,}, exchange {b['exchange']:,}{beyond}, sync {b['sync']:,} cycles "
              f"({pct(b)} %); by kind (compute/exchange/sync %): "
              + ", ".join(f"{k} {pct(d)}" for k, d in b["by_kind"].items()), highlight=False)
    out.print("  slowest supersteps per run: " + ", ".join(
        f"{s['step']} {s['per_run']:,} ({s['compute']:,}/{s['exchange']:,}/{s['sync']:,})"
        + (f" x{s['runs']}" if s["runs"] > 1 else "") for s in b["slowest_steps"]), highlight=False)


def _print_verdict(doc: dict, out_dir: Path) -> None:
    v = doc["verdict"]
    head = f"{doc['model']} batch {doc['batch']}, {doc['layers']} layers"
    if v == "FIT":
        c, pk = doc["cycles"], doc["peaks"]
        out.print(f"[bold green]FIT[/]  {head}" + (" (beam search)" if doc.get("strategy") == "beam" else ""))
        if c["best_bound"] is None:
            out.print(f"  modeled {c['modeled']:,} cycles = {c['ms']:.3f} ms; no bound (heuristic search)")
        else:
            roomy = c.get("fastest_found", c["modeled"]) != c["modeled"]
            out.print(f"  modeled {c['modeled']:,} cycles = {c['ms']:.3f} ms; no plan is faster than "
                      f"{c['best_bound']:,} (proven bound; gap {c['gap'] * 100:.2f}%)"
                      + (f"; the roomiest of the plans within the gap of the fastest found, {c['fastest_found']:,}"
                         if roomy else ""), highlight=False)
        _print_time(c.get("breakdown"))
        for k in ("total", "region0", "region1", "interleaved"):
            out.print(f"  peak {k:<11} {pk[k]['bytes']:>9,} B  tile {pk[k]['tile']:>4}  at {pk[k]['step']}")
        sl = doc["slack"]
        out.print(f"  slack {sl['bytes']:,} B free on the fullest tile ({sl['tile']}, at {sl['step']}); "
                  f"{sl['tiles_under_8k']:,} tiles keep under 8 KiB" + (f"; headroom {sl['headroom']:,} B requested"
                                                                        if sl["headroom"] else ""), highlight=False)
        x = doc["exchange"]
        tb, fr = x["tables"], x["fragments"]
        out.print(f"  exchange tables {tb['bytes']:,} B on tile {tb['tile']} (limit {tb['limit']:,}, margin "
                  f"{tb['margin']:,}; largest superstep {tb['largest_superstep']})", highlight=False)
        out.print(f"  exchange fragments {fr['count']:,} on tile {fr['tile']} (limit {fr['limit']:,}, margin "
                  f"{fr['margin']:,}; largest superstep {fr['largest_superstep']}); relays: {len(x['relays'])}",
                  highlight=False)
        a = doc["accounting"]
        what = ("fixed reservations, code and program" if a["mode"] == "modeled" else "the seeds' fixed support reserve")
        out.print(f"  usable {a['usable_bytes']:,} B per tile; region 0 holds {a['support_bytes']:,} B of {what}; "
                  f"plan checked by the independent checker", highlight=False)
        pl = doc.get("placement")
        if pl:
            out.print(f"  placed: every buffer of all {pl['tiles']:,} tiles at an address ({pl['tile_groups']} groups of "
                      f"identical tiles, {pl['by_first_fit']} by first fit, {pl.get('by_best_fit', 0)} by best fit, "
                      f"{pl.get('by_replay', 0)} by replaying a neighbour, {pl['by_search']} by exact search, "
                      f"{pl.get('by_cpsat', 0)} by CP-SAT; "
                      f"{pl['cuts']} planning cuts" + (f", {pl['headroom_added']:,} B of headroom added to place it"
                                                       if pl.get("headroom_added") else "")
                      + f"; highest end {pl['highest_address']:,} B), checked",
                      highlight=False)
            if pl.get("fell_back"):
                fb = pl["fell_back"]
                out.print(f"  [yellow]the search's fastest plan, {fb['cycles']:,} cycles, was not placed[/] "
                          f"({fb['reason']}); this is the probe's plan", highlight=False)
                if fb.get("retry"):
                    rt = fb["retry"]
                    found = (f"a placed plan of {rt['cycles']:,} cycles, not faster" if rt["cycles"] is not None
                             else "no placed plan")
                    out.print(f"  solving again with {rt['headroom_added']:,} B more headroom per tile found {found}",
                              highlight=False)
        out.print(f"  plan: {out_dir / 'plan.json'}" + (f" + {pl['file']}" if pl else ""))
    elif v == "INFEASIBLE" and "core" not in doc:
        m = doc["machine"]
        out.print(f"[bold red]INFEASIBLE[/]  {head}: parameters and live activations need {m['needs_bytes']:,} B, "
                  f"the target holds {m['capacity_bytes']:,} B on all tiles: no compiler can fit this on one "
                  f"{doc['target']}", highlight=False)
        out.print(f"  machine bound: parameters {m['parameter_bytes']:,} B + live activations "
                  f"{m['live_activation_bytes']:,} B at {m['at']}; `ipuplan check {out_dir}` re-derives it",
                  highlight=False)
    elif v == "INFEASIBLE":
        out.print(f"[bold red]INFEASIBLE[/]  {head} (no combination of the catalogued implementations fits)")
        core = doc["core"]
        if core["families"]:
            out.print("  conflicting families: " + ", ".join(f"{k} x{n}" for k, n in core["families"].items()))
        else:
            out.print(f"  conflicting families: no core {NO_CORE}", highlight=False)
        for name in core["constraints"][:12]:
            out.print(f"    {name}", markup=False, highlight=False)
        if len(core["constraints"]) > 12:
            out.print(f"    ... {len(core['constraints']) - 12} more")
        c = core.get("certificate") or {}
        if c.get("kind"):
            r = c["row_details"][0] if c.get("row_details") else None
            out.print(f"  certificate: {c['kind']} over {c['rows']} exact row(s)"
                      + (f", e.g. {r['name']} (capacity {r['capacity']:,} B)" if r else "")
                      + f"; `ipuplan check {out_dir}` re-proves it", markup=False, highlight=False)
        else:
            out.print(f"  certificate: none ({c.get('note', '')})", markup=False, highlight=False)
        ex = core.get("explanation") or {}
        if ex.get("deficit_bytes"):
            out.print(f"  the least-overflowing plan lacks {ex['deficit_bytes']:,} B on tile {ex['tile']} at "
                      f"{ex['step']}; `ipuplan explain {out_dir}` for the contributors", highlight=False)
        elif ex.get("note"):
            out.print(f"  explanation: {ex['note']}", highlight=False)
        out.print(f"  details: {out_dir / 'verdict.json'}, {out_dir / 'certificate.json'}")
    elif v == "REJECTED":
        out.print(f"[bold yellow]REJECTED[/]  {head}: the beam search kept no plan; this is not a proof "
                  f"({doc['rejection'].get('screened_out', 0):,} candidates screened out)")
    else:
        out.print(f"[bold yellow]UNKNOWN[/]  {head}: {doc['unknown']['reason']}", highlight=False)


@contextmanager
def progress(label: str, every: float = 10.0):
    """Progress of long work as `update(what, done, total)`: a bar with the time left on a terminal, else a
    line at most every `every` seconds (and at the end) with the same figures, for logs and pipes."""
    import time

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if err.is_terminal:
        with Progress(TextColumn("{task.description:<40}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=err,
                      transient=True) as bar:
            task = bar.add_task(label, total=None)
            yield lambda what, done, total: bar.update(task, description=str(what)[:40], completed=done, total=total)
        return
    t0 = time.perf_counter()
    last = [t0]
    state = [None]

    def line(what, done, total) -> None:
        spent = time.perf_counter() - t0
        left = f", about {_duration(spent * (total - done) / done)} left" if done and total else ""
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        print(f"{label}: {done}/{total or '?'}{pct}, {_duration(spent)} elapsed{left}; {what}", file=sys.stderr,
              flush=True)

    def update(what, done, total) -> None:
        state[0] = (what, done, total)
        now = time.perf_counter()
        if now - last[0] >= every:
            last[0] = now
            line(what, done, total)

    yield update
    if state[0] is not None and time.perf_counter() - t0 >= every:
        line(*state[0])


# Files a solve, build or pipeline directory holds: a path to one of them names its directory.
SOLVE_FILES = ("plan.json", "verdict.json", "certificate.json", "pipeline.json", "placement.json")


def solve_dir(path: str) -> Path:
    """The directory a command reads: PATH itself, or its parent when PATH is one of the files a solve writes
    (users tab-complete to `out/plan.json` as often as to `out`)."""
    p = Path(path)
    return p.parent if p.name in SOLVE_FILES and p.is_file() else p


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s} s" if m else f"{s} s"


SCALES_HELP = ("FP8 metadata scales: `fixed` (the model's fp8_scale for every GEMM operand) or a scales file "
               "written by `ipuplan calibrate`")


def _images_or_pixels(pixels: Optional[str], images: Optional[list], spec):
    """The batch to run: a normalized float32 .npy (--pixels) or image files preprocessed as the model declares
    (--image, repeated); exactly one of the two."""
    if bool(pixels) == bool(images):
        raise InputError("--pixels/--image", None, "give exactly one of them",
                         "--pixels x.npy (normalized float32 NCHW) or --image a.png [--image b.jpg ...]")
    if images:
        from .model.images import load_images
        return load_images(list(images), spec)
    from .runner.job import load_pixels
    return load_pixels(pixels)

