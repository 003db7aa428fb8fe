"""The least-overflowing plan (the explanation of an INFEASIBLE verdict) searched three ways, in one run.

Usage: python bench/explain_workers.py [--effort 60] [--full]
`two`: the configured two interleaved workers from the start; `one`: a single worker for the whole effort;
`quick`: what `elastic_explanation` does, one worker for at most `explain.QUICK` deterministic seconds, kept when it
proves its plan optimal, else the two workers on the rest. Cases: the suite's small INFEASIBLE explanations
(vit-small on small64 or on c600 cut to 16 and 8 tiles, with bytes held back on every tile); --full adds SigLIP
So400m/14 b4 on the C600 (the least-overflowing plan of issue 25's explain). Prints a markdown table: the deficit
(bytes the worst tile lacks), the proven lower bound of the overflow sum, the tile and step, deterministic and
wall seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path(tempfile.mkdtemp(prefix="explain-workers-"))


def _c600(tiles: int) -> Path:
    p = SCRATCH / f"t{tiles}.yaml"
    p.write_text((ROOT / "targets" / "c600.yaml").read_text().replace("tiles: 1472", f"tiles: {tiles}", 1))
    return p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--effort", type=float, default=60.0)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver import explain
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.rounds import solve_rounds
    from ipuplan.solver.solve import SolveOptions
    from ipuplan.target import load_target

    small64 = ROOT / "targets" / "small64.yaml"
    cases = [("vit-small", small64, "small64", 4, 600_000), ("vit-small", small64, "small64", 2, 600_000),
             ("vit-small", _c600(16), "c600 cut to 16 tiles", 4, 520_000),
             ("vit-small", _c600(8), "c600 cut to 8 tiles", 1, 400_000)]
    if args.full:
        cases.append(("siglip", ROOT / "targets" / "c600.yaml", "c600", 4, 0))
    real = explain._least_overflow

    def two(ctx, opts, sub):
        return solve_rounds(ctx, opts, None, sub, "overflow")

    def one(ctx, opts, sub):
        return solve_rounds(ctx, dataclasses.replace(opts, workers=1), None, sub, "overflow")

    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"effort {args.effort:g} deterministic s, QUICK = {explain.QUICK:g}")
    print("| case | search | deficit B | overflow bound | tile, step | deterministic s | wall s |")
    print("|---|---|---:|---:|---|---:|---:|")
    for model, target, tname, batch, headroom in cases:
        p = build_problem(build_graph(load_model(ROOT / "models" / f"{model}.yaml"), batch), load_target(target),
                          batch, headroom=headroom)
        classes = problem_classes(p)
        for name, how in (("two", two), ("one", one), ("quick", real)):
            explain._least_overflow = how
            try:
                sub, t = Budget.start(args.effort, 3600), time.perf_counter()
                ex = explain.elastic_explanation(p, classes, SolveOptions(batch=batch), sub)
            finally:
                explain._least_overflow = real
            where = f"{ex['tile']}, {ex['step']}" if "tile" in ex else ex.get("status", "")
            print(f"| {model} b{batch} on {tname}, {headroom:,} B held back | {name} | {_n(ex.get('deficit_bytes'))} | "
                  f"{_n(ex.get('slack_lower_bound'))} | {where} | {sub.spent:.2f} | {time.perf_counter() - t:.1f} |",
                  flush=True)


def _n(v) -> str:
    return f"{v:,}" if isinstance(v, int) else "–"


if __name__ == "__main__":
    main()
