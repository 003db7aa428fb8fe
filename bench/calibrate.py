"""Modeled cycles against the seeds' hardware measurements (docs/SOURCES.md): kernels, then whole models.

Usage: python bench/calibrate.py [--out bench/out/calibrate] [--kernels-only] [--catalogue grid|shaped]
Kernels: the codelets' cost formulas (ipuplan/codelets) on the shape each measurement used, with the ratio
and whether the measurement set a constant ("fit": ratio 1 by construction) or is held out. Whole models: one
`ipuplan solve --catalogue grid` process per case (the plan family the seeds ran; `--catalogue shaped` prices
the default space instead); the measured figure (cycles at 1.5 GHz), our modeled cycles with the
compute / exchange / sync split, and the ratio modeled / measured. Our plans are not the seeds' plans: a ratio
away from 1 is either a missing or wrong cost or a different plan (docs/COSTS.md discusses each).
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


def kernels() -> None:
    """Every kernel-level figure in the seeds next to the codelet model on the same shape."""
    from ipuplan import codelets as cl
    from ipuplan.target import load_target
    t = load_target("targets/c600.yaml")
    p = t.patch
    add16 = cl.vector.cycles(t, "add", 16 * 2)
    rows = [
        ("LayerNorm, one 1,152-wide F16 row on one tile (six workers)", 15_558,
         cl.vector.cycles(t, "layernorm", 1152 * 2), "held out; measured before the seeds' kernel upgrade"),
        ("final Add over 288 tiles (4 x 1,152 F16), per tile", 378, add16, "held out"),
        ("final Add over 288 tiles, compute-set span", 456, add16 + t.compute_set_cycles,
         "span - per tile set compute_set_cycles"),
        ("coefficient-panel packer, 768 x 16 F16", 23_190, cl.attention.PACK.cycles(t, 768 * 16 * 2), "fit"),
        ("Repeat patching, 78 words, six workers", 936, p["workers_call"] + 78 * p["workers_word"],
         "held out (fit at 24 and 1,024 words)"),
        ("Repeat patching, 78 words, scalar loop", 2_520, p["scalar_call"] + 78 * p["scalar_word"],
         "held out (fit at 24 and 1,024 words)"),
        ("Repeat patching, 24 / 1,024 words, six workers", 450 + 9_468,
         2 * p["workers_call"] + (24 + 1024) * p["workers_word"], "fit (sum of both points)"),
    ]
    print("| kernel (seeds) | measured cycles | modeled cycles | modeled / measured | constant |")
    print("|---|---:|---:|---:|---|")
    for what, measured, modeled, how in rows:
        print(f"| {what} | {measured:,} | {modeled:,} | {modeled / measured:.2f} | {how} |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/calibrate")
    ap.add_argument("--kernels-only", action="store_true")
    ap.add_argument("--catalogue", default="grid", choices=("grid", "shaped"),
                    help="the implementation space whole models are priced in: grid (default), the plan family the "
                         "seeds ran (homes spread, grids screened by bytes), or shaped (ipuplan's default)")
    a = ap.parse_args()
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/calibrate.py\n")
    kernels()
    if a.kernels_only:
        return
    spans: list[str] = []
    print("| case | measured cycles | modeled cycles | compute | exchange | sync | modeled / measured | source |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for m, b, layers, measured, src in CASES:
        d = Path(a.out) / f"{m}-b{b}-l{layers}"
        rc = subprocess.run(["ipuplan", "solve", f"models/{m}.yaml", "--batch", str(b), "--layers", str(layers),
                             "--catalogue", a.catalogue, "-o", str(d)], capture_output=True).returncode
        if rc != 0:
            print(f"| {m} b{b} {layers} layers | {measured:,} | (exit {rc}) | | | | | {src} |")
            continue
        c = json.loads((d / "plan.json").read_text())["cycles"]
        br = c["breakdown"]
        print(f"| {m} b{b} {layers} layers | {measured:,} | {c['modeled']:,} | {br['compute']:,} | {br['exchange']:,} | "
              f"{br['sync']:,} | {c['modeled'] / measured:.2f} | {src} |", flush=True)
        if (m, b, layers) == ("siglip", 1, 1):
            ph = br["exchange_phases"]
            spans.append(f"| SigLIP b1 1 layer, exchange phase spans | 484,428 ({53} phases) | {ph['cycles']:,} "
                         f"({ph['count']} phases) | {ph['cycles'] / 484_428:.2f} | seeds 003: the fused 779,868-cycle "
                         f"profile (before the elementwise upgrade) |")
    for line in spans:
        print("\n| whole-plan figure | measured | modeled | modeled / measured | source |\n|---|---:|---:|---:|---|")
        print(line)


if __name__ == "__main__":
    main()
