"""Modeled cycles against the seeds' hardware measurements (docs/SOURCES.md), same models and batches.

Usage: python bench/calibrate.py [--out bench/out/calibrate]
Each case is one `ipuplan solve` process; prints a markdown table: the measured figure (cycles at 1.5 GHz),
our modeled cycles with its compute / exchange / sync split, and the ratio modeled / measured. Our plans are
not the seeds' plans: a ratio away from 1 is either a missing or wrong cost or a different plan.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

CLOCK = 1.5e9
CASES = [  # model, batch, layers, measured cycles, source
    ("siglip", 1, 1, 715_350, "seeds 003: fused 1-layer b1, 715,350 cropped cycles"),
    ("siglip", 1, 2, 1_040_742, "seeds 001: 2 layers b1, 1,040,742 cropped cycles"),
    ("siglip", 1, 3, 1_455_594, "seeds 001: 3 layers b1, 1,455,594 cropped cycles"),
    ("siglip", 2, 27, round(18.455e-3 * CLOCK), "seeds 004: 27 layers b2, 18.455 ms resident latency"),
    ("pe", 2, 24, round(15.991e-3 * CLOCK), "seeds 004: PE 24 layers b2, 15.991 ms resident latency"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/calibrate")
    a = ap.parse_args()
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/calibrate.py\n")
    print("| case | measured cycles | modeled cycles | compute | exchange | sync | modeled / measured | source |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for m, b, layers, measured, src in CASES:
        d = Path(a.out) / f"{m}-b{b}-l{layers}"
        rc = subprocess.run(["ipuplan", "solve", f"models/{m}.yaml", "--batch", str(b), "--layers", str(layers),
                             "-o", str(d)], capture_output=True).returncode
        if rc != 0:
            print(f"| {m} b{b} {layers} layers | {measured:,} | (exit {rc}) | | | | | {src} |")
            continue
        c = json.loads((d / "plan.json").read_text())["cycles"]
        br = c["breakdown"]
        print(f"| {m} b{b} {layers} layers | {measured:,} | {c['modeled']:,} | {br['compute']:,} | {br['exchange']:,} | "
              f"{br['sync']:,} | {c['modeled'] / measured:.2f} | {src} |", flush=True)


if __name__ == "__main__":
    main()
