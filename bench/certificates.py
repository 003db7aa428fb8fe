"""INFEASIBLE certificates for the cases issue-level claims rest on, each produced by `ipuplan solve` and
re-proved by `ipuplan check` as separate processes (what a user runs).

Usage: python bench/certificates.py [--time-limit 120] [--out out/bench-certificates]
Cases: SigLIP batch 4 and PE batch 8 at full depth; SigLIP batch 2 on a target with 576 KiB of SRAM per
tile; SigLIP batch 2 with a 30,000 B exchange-table budget. Prints a markdown table for bench/RESULTS.md:
time to the verdict, to the certificate (inside the solve), the solve's wall time, the certificate kind and
rows, and the check's result and wall time. Solves run with --no-explain (the certificate does not need
the least-overflow explanation; it is built before it either way).
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


def _less_memory(out: Path) -> str:
    from ipuplan.job.whatif import grown_target
    p = out / "c600-576KiB.yaml"
    p.write_text(grown_target("targets/c600.yaml", 589_824 - 638_976))
    return str(p)


def _cases(out: Path):
    yield "SigLIP b4, 27 layers", ["models/siglip.yaml", "--batch", "4"]
    yield "PE b8, 24 layers", ["models/pe.yaml", "--batch", "8"]
    yield "SigLIP b2 on 576 KiB tiles", ["models/siglip.yaml", "--batch", "2", "--target", _less_memory(out)]
    yield "SigLIP b2, table budget 30,000 B", ["models/siglip.yaml", "--batch", "2", "--exchange-table-budget",
                                              "30000"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--out", default="out/bench-certificates")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"# {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; time limit {a.time_limit:g} s\n")
    print("| case | verdict (exit) | verdict s | core s | solve wall s | kind | rows | check | check s |")
    print("|---|---|---:|---:|---:|---|---:|---|---:|")
    for i, (name, args) in enumerate(_cases(out)):
        d = out / f"case{i}"
        t = time.perf_counter()
        r = subprocess.run(["ipuplan", "solve", *args, "--time-limit", str(a.time_limit), "--no-explain", "-o", str(d)],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t
        stats = json.loads((d / "solve-stats.json").read_text())
        doc = json.loads((d / "verdict.json").read_text()) if (d / "verdict.json").exists() else {"verdict": "FIT"}
        cert = doc.get("core", {}).get("certificate", {})
        t = time.perf_counter()
        c = subprocess.run(["ipuplan", "check", str(d)], capture_output=True, text=True)
        cwall = time.perf_counter() - t
        check = "verified" if c.returncode == 0 else f"FAILED ({c.returncode})"
        print(f"| {name} | {doc['verdict']} ({r.returncode}) | {stats.get('verdict_seconds', '')} | "
              f"{stats.get('core_seconds', '')} | {wall:.1f} | {cert.get('kind')} | {cert.get('rows')} | "
              f"{check} | {cwall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
