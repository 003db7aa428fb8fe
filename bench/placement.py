"""Placement of full plans: each `ipuplan solve` and `ipuplan check` a separate process.

Usage: python bench/placement.py [--cases siglip:2,pe:2] [--headrooms 0,16384] [--out bench/out/placement]
Prints a markdown table: verdict (exit code), solve wall seconds (planning and placement), placement seconds
alone, tile groups, how many were placed by first fit and by the exact search (its nodes), planning cuts,
the highest address used, and the independent checker's word with its wall seconds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import time
from pathlib import Path

MODELS = {"siglip": "models/siglip.yaml", "pe": "models/pe.yaml", "vit-small": "models/vit-small.yaml"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="siglip:2,pe:2")
    ap.add_argument("--headrooms", default="0,16384")
    ap.add_argument("--out", default="bench/out/placement")
    a = ap.parse_args()
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/placement.py "
          f"--cases {a.cases} --headrooms {a.headrooms}\n")
    print("| model | batch | headroom B | verdict (exit) | solve s | placement s | groups | first fit | search/CP-SAT "
          "(nodes) | cuts | highest end B | check (s) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---|")
    for case in a.cases.split(","):
        m, b = case.split(":")
        for h in map(int, a.headrooms.split(",")):
            d = Path(a.out) / f"{m}-b{b}-h{h}"
            t = time.perf_counter()
            rc = subprocess.run(["ipuplan", "solve", MODELS[m], "--batch", b, "--headroom", str(h), "-o", str(d)],
                                capture_output=True).returncode
            wall = time.perf_counter() - t
            stats = json.loads((d / "solve-stats.json").read_text())
            doc = json.loads((d / ("plan.json" if rc == 0 else "verdict.json")).read_text())
            pl = doc.get("placement", {})
            check = "-"
            if rc == 0:
                t = time.perf_counter()
                c = subprocess.run(["ipuplan", "check", str(d)], capture_output=True, text=True)
                check = f"{'PASSED' if c.returncode == 0 else 'FAILED'} ({time.perf_counter() - t:.1f})"
            print(f"| {m} | {b} | {h:,} | {doc['verdict']} ({rc}) | {wall:.1f} | {stats.get('placement_seconds', '-')} | "
                  f"{pl.get('tile_groups', '-')} | {pl.get('by_first_fit', '-')} | {pl.get('by_search', '-')}/{pl.get('by_cpsat', '-')} "
                  f"({pl.get('search_nodes', 0):,}) | {pl.get('cuts', '-')} | {pl.get('highest_address', 0):,} | "
                  f"{check} |", flush=True)


if __name__ == "__main__":
    main()
