"""What would fit: the largest batch for SigLIP and PE at full depth, each boundary backed by a checked plan
(largest FIT) and a checked certificate (smallest INFEASIBLE).

Usage: python bench/whatif.py [--models siglip,pe] [--out out/bench-whatif]
Runs `ipuplan solve MODEL --batch 2 --no-explain` then `ipuplan explain DIR --what-if batch --json` as a user
would, and prints the boundary, the probes, the evidence on each side and the wall time.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="siglip,pe")
    ap.add_argument("--out", default="out/bench-whatif")
    a = ap.parse_args()
    print(f"# {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}\n")
    print("| model | largest FIT batch | evidence | smallest INFEASIBLE batch | evidence | probes | wall s |")
    print("|---|---:|---|---:|---|---|---:|")
    for m in a.models.split(","):
        d = Path(a.out) / m
        t = time.perf_counter()
        subprocess.run(["ipuplan", "solve", f"models/{m}.yaml", "--batch", "2", "--no-explain", "-o", str(d)],
                       capture_output=True, text=True)
        r = subprocess.run(["ipuplan", "explain", str(d), "--what-if", "batch", "--json"], capture_output=True,
                           text=True)
        wall = time.perf_counter() - t
        if r.returncode:
            print(f"| {m} | explain failed ({r.returncode}): {r.stderr.strip()[-200:]} | | | | | {wall:.0f} |")
            continue
        w = json.loads(r.stdout)["what_if"]
        probes = ", ".join(f"{k}: {v}" for k, v in w["probes"].items())
        print(f"| {m} | {w['largest_fit']} | {w['fit_evidence']} | {w['smallest_infeasible']} | "
              f"{w['infeasible_evidence']} | {probes} | {wall:.0f} |", flush=True)


if __name__ == "__main__":
    main()
