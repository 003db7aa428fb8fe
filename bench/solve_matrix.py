"""Verdict grid: models x batches x depths, with wall time, modeled cycles, peak bytes and the checker's word.

Usage: python bench/solve_matrix.py [--models siglip,pe] [--batches 1,2,4,8] [--layers 1,2,full]
       [--time-limit 120] [--out bench/out]
Prints a markdown table (paste into bench/RESULTS.md with the command, date and machine).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

from ipuplan.check import check_plan
from ipuplan.model import load_model
from ipuplan.solver.driver import Job, run_solve
from ipuplan.solver.solve import SolveOptions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="siglip,pe")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--layers", default="1,2,full")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--target", default="targets/c600.yaml")
    ap.add_argument("--out", default="bench/out")
    a = ap.parse_args()
    print(f"# {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; time limit {a.time_limit:g} s\n")
    print("| model | batch | layers | verdict | wall s | modeled cycles | ms | gap | peak B/tile (tile, step) | check |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---|---|")
    for m in a.models.split(","):
        path = f"models/{m}.yaml"
        full = load_model(path).layers
        for b in (int(x) for x in a.batches.split(",")):
            for ls in a.layers.split(","):
                layers = full if ls == "full" else int(ls)
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
