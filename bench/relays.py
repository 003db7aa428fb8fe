"""What relays change: the same model planned with and without the relay alternative.

Usage: python bench/relays.py [--models siglip,pe] [--batch 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ipuplan.checker import check_plan
from ipuplan.job.solve import Job, run_solve
from ipuplan.solver.solve import SolveOptions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="siglip,pe")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--table-budget", type=int, default=None)
    a = ap.parse_args()
    print("| model | relays | verdict | wall s | modeled cycles | max tables B (tile) | max fragments (tile) | "
          "relays chosen | check |")
    print("|---|---|---|---:|---:|---|---|---:|---|")
    for m in a.models.split(","):
        for relays in (True, False):
            opts = SolveOptions(batch=a.batch, relays=relays, table_budget=a.table_budget)
            with tempfile.TemporaryDirectory() as d:
                t = time.perf_counter()
                _, doc = run_solve(Job(f"models/{m}.yaml", "targets/c600.yaml", a.batch, options=opts), Path(d))
                wall = time.perf_counter() - t
            if doc["verdict"] != "FIT":
                print(f"| {m} | {'on' if relays else 'off'} | {doc['verdict']} | {wall:.1f} | | | | | |")
                continue
            x = doc["exchange"]
            ok = "passed" if check_plan(doc).ok else "FAILED"
            print(f"| {m} | {'on' if relays else 'off'} | FIT | {wall:.1f} | {doc['cycles']['modeled']:,} | "
                  f"{x['tables']['bytes']:,} ({x['tables']['tile']}) | {x['fragments']['count']:,} "
                  f"({x['fragments']['tile']}) | {len(x['relays'])} | {ok} |", flush=True)


if __name__ == "__main__":
    main()
