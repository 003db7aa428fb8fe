"""CP-SAT against the seeds' beam strategy, same catalogue and accounting, in one run (alternating).

Usage: python bench/matrix.py [--models siglip,pe] [--batches 1,2,4,8] [--layers 1,2,full] [--time-limit 120]
Prints a markdown table for bench/RESULTS.md: verdict, wall time, modeled cycles, peak tile bytes and
exchange-table bytes for each strategy, and the ratios CP-SAT / beam.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

from ipuplan.model import load_model
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
    ap.add_argument("--models", default="siglip,pe")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--layers", default="1,2,full")
    ap.add_argument("--time-limit", type=float, default=120.0)
    a = ap.parse_args()
    print(f"# {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores; time limit {a.time_limit:g} s\n")
    print("| model | batch | layers | CP-SAT verdict | s | cycles | peak / tables B | beam verdict | s | cycles | "
          "peak / tables B | time ratio | cycle ratio |")
    print("|---|---:|---:|---|---:|---:|---|---|---:|---:|---|---:|---:|")
    for m in a.models.split(","):
        path = f"models/{m}.yaml"
        full = load_model(path).layers
        for b in (int(x) for x in a.batches.split(",")):
            for ls in a.layers.split(","):
                layers = full if ls == "full" else int(ls)
                cp, tc = _run(path, b, layers, "cpsat", a.time_limit)
                bm, tb = _run(path, b, layers, "beam", a.time_limit)
                ratio = f"{tc / tb:.2f}" if tb else ""
                cyc = (f"{cp['cycles']['modeled'] / bm['cycles']['modeled']:.4f}"
                       if cp["verdict"] == bm["verdict"] == "FIT" else "")
                print(f"| {m} | {b} | {layers} | {_cell(cp, tc)} | {_cell(bm, tb)} | {ratio} | {cyc} |", flush=True)


if __name__ == "__main__":
    main()
