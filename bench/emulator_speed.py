"""Emulator and reference wall time on one package with the code on the import path: run it once per checkout
(`PYTHONPATH=<other worktree> python bench/emulator_speed.py ...` for the other side of a before/after).

Usage: python bench/emulator_speed.py PACKAGE PIXELS.npy
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

import ipuplan
from ipuplan.runner.job import run_package


def main() -> None:
    pkg, pixels = sys.argv[1], sys.argv[2]
    t = time.time()
    r = run_package(pkg, np.load(pixels), None, 0, True)
    c = r.compare
    print(json.dumps({"code": ipuplan.__file__, "total_s": round(time.time() - t, 1), "emulator_s": round(r.seconds, 1),
                      "plan_faithful_s": c["plan_faithful"]["seconds"], "mixed_s": c["mixed"]["seconds"],
                      "bit_exact": c["plan_faithful"]["bit_exact"], "fp32_cosine": c["fp32"]["cosine"],
                      "peak_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))


if __name__ == "__main__":
    main()
