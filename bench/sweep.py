"""`ipuplan sweep` wall time with 1 and 2 local Ray workers on the same grid (fresh directories), and the ratio.

Usage: python bench/sweep.py [--models models/pe-tiny.yaml,models/siglip-base-224.yaml] [--batch 1,2,4,8]
       [--set KEY=V ...] [--out bench/out/sweep]   (--models all: every models/*.yaml)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="models/pe-tiny.yaml,models/siglip-base-224.yaml")
    ap.add_argument("--batch", default="1,2,4,8")
    ap.add_argument("--set", action="append", default=[], help="passed to ipuplan sweep --set")
    ap.add_argument("--out", default="bench/out/sweep")
    a = ap.parse_args()
    models = sorted(str(p) for p in Path("models").glob("*.yaml")) if a.models == "all" else a.models.split(",")
    sets = [x for s in a.set for x in ("--set", s)]
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/sweep.py "
          f"--models {a.models} --batch {a.batch}" + "".join(f" --set {s}" for s in a.set) + "\n")
    print("| workers | cases | wall s | FIT | INFEASIBLE | UNKNOWN | failed | all checked |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    walls = {}
    for w in (1, 2):
        d = Path(a.out) / f"w{w}"
        shutil.rmtree(d, ignore_errors=True)
        t = time.perf_counter()
        rc = subprocess.run(["ipuplan", "sweep", *models, "--batch", a.batch, *sets, "--workers", str(w), "-o", str(d)],
                            capture_output=True, text=True).returncode
        walls[w] = time.perf_counter() - t
        cases = json.loads((d / "sweep.json").read_text())["cases"]
        count = lambda v: sum(1 for c in cases if c.get("verdict") == v)
        checked = all(c.get("checked") for c in cases if c.get("verdict") in ("FIT", "INFEASIBLE"))
        print(f"| {w} | {len(cases)} | {walls[w]:.0f} | {count('FIT')} | {count('INFEASIBLE')} | {count('UNKNOWN')} | "
              f"{sum(1 for c in cases if c['status'] != 'done')} | {'yes' if checked and rc == 0 else f'no (exit {rc})'} |")
    print(f"\nratio (1 worker / 2 workers): {walls[1] / walls[2]:.2f}")


if __name__ == "__main__":
    main()
