"""The infeasible core's re-solve at CP-SAT's default linearization and at max_lp's (level 2), in one run.

Usage: python bench/core_relaxation.py [--effort 36] [--wall 600] [--full] [--levels 1,2,max_lp]
                                      [--refuted pe-base:48:shaped,...] [--solve-effort 400]
Each case is a model CP-SAT refutes; `infeasible_core` (ipuplan/solver/solve.py) re-solves it with every guard an
assumption, one worker, as the solve does after a refutation (without the rows the refuting model had gained).
Level 1 is CP-SAT's default; `max_lp` is level 2 with every LP constraint added up front (`as_max_lp`, the
precheck's parameters). --effort is the deterministic seconds each re-solve may spend (the solve gives
it 0.3 of what is left of --effort: 36 at the default 120). --full adds the full-size cases (SigLIP So400m/14
b9 and pe-small b72, both UNKNOWN for want of a core). --refuted adds full-depth cases (model:batch:catalogue on
the C600) taken as the solve leaves them: `ipuplan solve` with --solve-effort, no slack phase, no explanation, 3 x --wall, and
the re-solves start from the refuting model with the exact tile rows it had gained. Prints a markdown table:
status, deterministic and wall seconds, the core's size against the guards.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path(tempfile.mkdtemp(prefix="core-relaxation-"))


def _target(tiles: int, base: str = "targets/c600.yaml", count: str = "tiles: 1472") -> Path:
    """`base` with another tile count (every other machine fact unchanged)."""
    p = SCRATCH / f"t{tiles}.yaml"
    p.write_text((ROOT / base).read_text().replace(count, f"tiles: {tiles}", 1))
    return p


def _cases(full: bool):
    from ipuplan.catalogue import Catalogue
    from ipuplan.model.stage import Stage
    # (name, model, batch, target, headroom, catalogue, stage)
    yield ("vit-small b1, 8 tiles, 400,000 B held back", "models/vit-small.yaml", 1,
           _target(8, "targets/small64.yaml", "tiles: 64 "), 400_000, Catalogue.SHAPED, None)
    yield ("vit-small b4, 16 tiles, 520,000 B held back", "models/vit-small.yaml", 4, _target(16), 520_000,
           Catalogue.SHAPED, None)
    yield ("vit-small b4, 16 tiles, 520,000 B held back, grid", "models/vit-small.yaml", 4, _target(16), 520_000,
           Catalogue.GRID, None)
    yield ("SigLIP b7, last 6 layers and head, 16 KiB held back", "models/siglip.yaml", 7,
           ROOT / "targets/c600.yaml", 16_384, Catalogue.SHAPED, Stage.of(21, 6, 27))
    if full:
        yield ("pe-small b72, shaped", "models/pe-small.yaml", 72, ROOT / "targets/c600.yaml", 0,
               Catalogue.SHAPED, None)
        yield ("SigLIP So400m/14 b9, compact", "models/siglip.yaml", 9, ROOT / "targets/c600.yaml", 0,
               Catalogue.COMPACT, None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--effort", type=float, default=36.0)
    ap.add_argument("--wall", type=float, default=600.0)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--refuted", default="")
    ap.add_argument("--solve-effort", type=float, default=400.0)
    a = ap.parse_args()
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.budget import MAX_LP_LINEARIZATION, Budget, WallClockExpired
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.rounds import build_model
    from ipuplan.solver.solve import SolveOptions, infeasible_core, solve_problem
    from ipuplan.target import load_target

    levels = a.levels.split(",")
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"effort {a.effort:g} per re-solve, wall {a.wall:g} s\n")

    def built():
        """(name, problem, classes, rows, catalogue) per case: the problems as built, then the refuting models."""
        for name, model, batch, target, headroom, cat, stage in _cases(a.full):
            m = load_model(ROOT / model)
            g = build_graph(m, batch, stage) if stage else build_graph(m, batch)
            p = build_problem(g, load_target(target), batch, headroom=headroom, catalogue=cat)
            classes = problem_classes(p)
            yield name, p, classes, frozenset(), cat
        for case in filter(None, a.refuted.split(",")):
            model, batch, cat = case.split(":")
            o = SolveOptions(batch=int(batch), catalogue=Catalogue(cat), effort=a.solve_effort, slack_effort=0,
                             explain=False, time_limit=3 * a.wall)
            p = o.problem(build_graph(load_model(ROOT / "models" / f"{model}.yaml"), o.batch),
                          load_target(ROOT / "targets" / "c600.yaml"))
            t0 = time.perf_counter()
            res = solve_problem(p, o)
            kind = (res.certificate or {}).get("kind")
            print(f"{model} b{batch} {cat}: the solve's verdict {res.verdict.name}"
                  f"{f' ({kind})' if kind else ''}, {time.perf_counter() - t0:.0f} s, "
                  f"{len(res.model_rows)} rows gained\n", flush=True)
            if res.plan is None:
                yield f"{model} b{batch} {cat}, refuting model", p, problem_classes(p), res.model_rows, o.catalogue

    print("| case | linearization | status | deterministic s | wall s | core / guards |")
    print("|---|---:|---|---:|---:|---:|")
    for name, p, classes, rows, cat in built():
        guards = len(build_model(p, classes, objective=False).guards)
        for lvl in levels:
            sub = Budget.start(a.effort, a.wall)
            t0 = time.perf_counter()
            try:
                core, ctx = infeasible_core(p, classes, SolveOptions(batch=p.batch, catalogue=cat), sub, rows,
                                            linearization=MAX_LP_LINEARIZATION if lvl == "max_lp" else int(lvl),
                                            up_front=lvl == "max_lp")
                status = "core" if ctx is not None else "no answer within the effort"
            except WallClockExpired:
                core, status = [], f"no answer within {a.wall:g} s"
            wall = time.perf_counter() - t0
            shown = {"1": "1 (default)", "max_lp": "2, up front (max_lp)"}.get(lvl, lvl)
            print(f"| {name} | {shown} | {status} | {sub.spent:.2f} | {wall:.1f} | "
                  f"{len(core) if core else '–'} / {guards} |", flush=True)


if __name__ == "__main__":
    main()
