"""FP8 scales at full depth with seeded random weights (variance 1/fan_in, `ipuplan run`'s default): for each
model, a build with the model's fixed scale and one with per-GEMM scales from `ipuplan calibrate` (4 seeded
N(0, 1) calibration images, the same random weights), both emulated with `ipuplan run --compare` on a batch the
calibration never saw; the figures are each output's cosine against the fp32 reference, and the emulator's and
the references' wall times.

Usage: python bench/scales_depth.py [--models siglip,pe] [--batch 2] [--out bench/out/scales-depth]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import time
from pathlib import Path

import numpy as np

from scales import ROOT, ipuplan  # bench/scales.py: the same way of calling the command line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="siglip,pe")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "scales-depth"))
    a = ap.parse_args()
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    from ipuplan.model import load_model
    print(f"# FP8 scales at full depth, random weights, batch {a.batch}, c600, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}")
    print("| model | scales | cosine vs fp32 | mixed reference vs fp32 | plan-faithful | emulator s | "
          "mixed reference s | calibrate s | build s |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|")
    for name in a.models.split(","):
        d = out / name
        d.mkdir()
        yaml = ROOT / "models" / f"{name}.yaml"
        img = load_model(str(yaml)).image_size
        np.save(d / "calib.npy", np.random.default_rng(1).standard_normal((4, 3, img, img)).astype(np.float32))
        np.save(d / "x.npy", np.random.default_rng(2).standard_normal((a.batch, 3, img, img)).astype(np.float32))
        t = time.time()
        r = ipuplan("calibrate", yaml, "--pixels", d / "calib.npy", "-o", d / "scales.json")
        cal_s = time.time() - t
        if r.returncode:
            print(f"| {name} | calibrate exit {r.returncode}: {r.stderr.strip()[-100:]} | | | | | | | |", flush=True)
            continue
        for kind, extra in (("fixed", []), ("calibrated", ["--scales", d / "scales.json"])):
            t = time.time()
            b = ipuplan("build", yaml, "--batch", a.batch, "-o", d / kind, *extra)
            build_s = time.time() - t
            if b.returncode:
                print(f"| {name} | {kind} | build exit {b.returncode} | | | | | | |", flush=True)
                continue
            rr = ipuplan("run", d / kind / "model.ipupkg", "--pixels", d / "x.npy", "--compare", "--json")
            if rr.returncode not in (0, 1):
                print(f"| {name} | {kind} | run exit {rr.returncode}: {rr.stderr.strip()[-100:]} | | | | | | |",
                      flush=True)
                continue
            doc = json.loads(rr.stdout)
            c = doc["compare"]
            pf = c["plan_faithful"]
            faithful = "bit-exact" if pf["bit_exact"] else f"{pf['differing']} differ"
            print(f"| {name} | {kind} | {c['fp32']['cosine']:.6f} | {c['fp32']['reference_mixed_cosine']:.6f} | "
                  f"{faithful} | {doc['seconds']:.1f} | {c['mixed']['seconds']:.1f} | "
                  f"{cal_s if kind == 'calibrated' else 0:.0f} | {build_s:.0f} |", flush=True)


if __name__ == "__main__":
    main()
