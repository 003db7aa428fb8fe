"""Verdict grid: models x batches x depths, each `ipuplan solve` and `ipuplan check` a separate process.

Usage: python bench/solve_matrix.py [--models siglip,pe] [--batches 1,2,4,8] [--layers full]
       [--time-limit 600] [--out bench/out/matrix] [--extra "--headroom 4096"]
Prints a markdown table (paste into bench/RESULTS.md with the command, date and machine): verdict (exit code),
wall seconds of the solve process, modeled cycles, the fewest free bytes of any tile (its tile), the largest
exchange tables, the certificate kind for INFEASIBLE, and the independent checker's word.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import time
from pathlib import Path

from _grid import cases, grid_args, heading


def main() -> None:
    ap = argparse.ArgumentParser()
    grid_args(ap)
    ap.add_argument("--target", default="targets/c600.yaml")
    ap.add_argument("--out", default="bench/out/matrix")
    ap.add_argument("--extra", default="", help="more solve options, e.g. \"--headroom 4096\"")
    a = ap.parse_args()
    print(heading(a))
    print("| model | batch | layers | verdict (exit) | solve s | modeled cycles | slack B (tile) | tables B | "
          "certificate | check |")
    print("|---|---:|---:|---|---:|---:|---|---:|---|---|")
    for m, path, b, layers in cases(a):
        d = Path(a.out) / f"{m}-b{b}-l{layers}"
        cmd = ["ipuplan", "solve", path, "--batch", str(b), "--layers", str(layers), "--target", a.target,
               "--time-limit", str(a.time_limit), "--no-explain", "-o", str(d), *shlex.split(a.extra)]
        t = time.perf_counter()
        rc = subprocess.run(cmd, capture_output=True).returncode
        wall = time.perf_counter() - t
        doc = json.loads((d / ("plan.json" if rc == 0 else "verdict.json")).read_text())
        chk = subprocess.run(["ipuplan", "check", str(d)], capture_output=True).returncode if rc in (0, 1) else None
        check = {0: "passed", None: ""}.get(chk, f"FAILED ({chk})")
        if doc["verdict"] == "FIT":
            s, x = doc["slack"], doc["exchange"]["tables"]
            print(f"| {m} | {b} | {layers} | FIT ({rc}) | {wall:.1f} | {doc['cycles']['modeled']:,} | "
                  f"{s['bytes']:,} ({s['tile']}) | {x['bytes']:,} | | {check} |", flush=True)
        else:
            kind = ("machine" if "machine" in doc and "core" not in doc
                    else (doc.get("core") or {}).get("certificate", {}).get("kind") or "")
            note = doc.get("unknown", {}).get("reason", "")
            print(f"| {m} | {b} | {layers} | {doc['verdict']} ({rc}) | {wall:.1f} | | | | {kind}{note} | {check} |",
                  flush=True)


if __name__ == "__main__":
    main()
