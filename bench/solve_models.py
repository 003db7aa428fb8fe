"""Wall time of `ipuplan solve` (whole CLI process) for SigLIP and PE at batch 2, full depth, plus the check.

Usage: python bench/solve_models.py [--repeats 3] [--batch 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    a = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d')} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    for m in ("siglip", "pe"):
        times, doc = [], None
        for _ in range(a.repeats):
            with tempfile.TemporaryDirectory() as d:
                t = time.perf_counter()
                rc = subprocess.run(["ipuplan", "solve", f"models/{m}.yaml", "--batch", str(a.batch), "-o", d],
                                    capture_output=True).returncode
                times.append(time.perf_counter() - t)
                name = "plan.json" if rc == 0 else "verdict.json"
                doc = json.load(open(os.path.join(d, name)))
                t = time.perf_counter()
                chk = subprocess.run(["ipuplan", "check", d], capture_output=True).returncode if rc == 0 else None
                tcheck = time.perf_counter() - t
        line = (f"{m} b{a.batch} {doc['layers']} layers: {doc['verdict']} (exit {rc}); solve wall "
                f"min {min(times):.1f} s, median {statistics.median(times):.1f} s over {a.repeats}")
        if doc["verdict"] == "FIT":
            line += (f"; modeled {doc['cycles']['modeled']:,} cycles, gap {doc['cycles']['gap'] * 100:.2f}%; "
                     f"peak {doc['peaks']['total']['bytes']:,} B/tile; check exit {chk} in {tcheck:.1f} s")
        print(line, flush=True)


if __name__ == "__main__":
    main()
