"""CP-SAT against the seeds' beam strategy, same catalogue and accounting, in one run (alternating).

Usage: python bench/matrix.py [--models siglip,pe] [--batches 1,2,4,8] [--layers 1,2,full] [--time-limit 120]
Prints a markdown table for bench/RESULTS.md: verdict, wall time, modeled cycles, peak tile bytes and
exchange-table bytes for each strategy, and the ratios CP-SAT / beam.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _grid import cases, grid_args, heading

from ipuplan.solver.driver import Job, run_solve
from ipuplan.solver.solve import SolveOptions


def _run(path: str, b: int, layers: int, strategy: str, limit: float) -> tuple[dict, float]:
    opts = SolveOptions(batch=b, time_limit=limit, strategy=strategy)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        _, doc = run_solve(Job(path, "targets/c600.yaml", b, layers, options=opts), Path(d))
        return doc, time.perf_counter() - t


def _cell(doc: dict, wall: float) -> str:
    if doc["verdict"] != "FIT":
        return f"{doc['verdict']} | {wall:.1f} | |"
    return (f"FIT | {wall:.1f} | {doc['cycles']['modeled']:,} | {doc['peaks']['total']['bytes']:,} / "
            f"{doc['exchange']['tables']['bytes']:,}")


def main() -> None:
    ap = argparse.ArgumentParser()
    grid_args(ap)
    a = ap.parse_args()
    print(heading(a))
    print("| model | batch | layers | CP-SAT verdict | s | cycles | peak / tables B | beam verdict | s | cycles | "
          "peak / tables B | time ratio | cycle ratio |")
    print("|---|---:|---:|---|---:|---:|---|---|---:|---:|---|---:|---:|")
    for m, path, b, layers in cases(a):
        cp, tc = _run(path, b, layers, "cpsat", a.time_limit)
        bm, tb = _run(path, b, layers, "beam", a.time_limit)
        ratio = f"{tc / tb:.2f}" if tb else ""
        cyc = (f"{cp['cycles']['modeled'] / bm['cycles']['modeled']:.4f}"
               if cp["verdict"] == bm["verdict"] == "FIT" else "")
        print(f"| {m} | {b} | {layers} | {_cell(cp, tc)} | {_cell(bm, tb)} | {ratio} | {cyc} |", flush=True)


if __name__ == "__main__":
    main()
