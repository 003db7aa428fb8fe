"""Verdict grid: models x batches x depths, with wall time, modeled cycles, peak bytes and the checker's word.

Usage: python bench/solve_matrix.py [--models siglip,pe] [--batches 1,2,4,8] [--layers 1,2,full]
       [--time-limit 120] [--out bench/out]
Prints a markdown table (paste into bench/RESULTS.md with the command, date and machine).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _grid import cases, grid_args, heading

from ipuplan.check import check_plan
from ipuplan.solver.driver import Job, run_solve
from ipuplan.solver.solve import SolveOptions


def main() -> None:
    ap = argparse.ArgumentParser()
    grid_args(ap)
    ap.add_argument("--target", default="targets/c600.yaml")
    ap.add_argument("--out", default="bench/out")
    a = ap.parse_args()
    print(heading(a))
    print("| model | batch | layers | verdict | wall s | modeled cycles | ms | gap | peak B/tile (tile, step) | check |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---|---|")
    for m, path, b, layers in cases(a):
        job = Job(path, a.target, b, layers, options=SolveOptions(batch=b, time_limit=a.time_limit))
        t = time.perf_counter()
        res, doc = run_solve(job, Path(a.out) / f"{m}-b{b}-l{layers}")
        wall = time.perf_counter() - t
        if doc["verdict"] == "FIT":
            c, pk = doc["cycles"], doc["peaks"]["total"]
            ok = "passed" if check_plan(doc).ok else "FAILED"
            print(f"| {m} | {b} | {layers} | FIT | {wall:.1f} | {c['modeled']:,} | {c['ms']:.3f} | "
                  f"{c['gap'] * 100:.2f}% | {pk['bytes']:,} ({pk['tile']}, {pk['step']}) | {ok} |", flush=True)
        else:
            fam = ", ".join(doc.get("core", {}).get("families", {}))
            print(f"| {m} | {b} | {layers} | {doc['verdict']} | {wall:.1f} | | | | {fam} | |", flush=True)

if __name__ == "__main__":
    main()
