"""Same inputs and seed, same bytes: `ipuplan solve` twice, once beside CPU hogs that keep every core busy; the
sha256 of plan.json (a FIT) and certificate.json (an INFEASIBLE) of both runs, and their wall times.

Usage: python bench/determinism.py [--hogs 2] [--out bench/out/determinism]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

CASES = [("SigLIP b2, 27 layers", ["models/siglip.yaml", "--batch", "2"], "plan.json"),
         ("SigLIP b4, 27 layers", ["models/siglip.yaml", "--batch", "4", "--no-explain"], "certificate.json")]


def run(args: list[str], out: Path, hogs: int) -> tuple[int, float]:
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        t = time.perf_counter()
        rc = subprocess.run(["ipuplan", "solve", *args, "-o", str(out)], capture_output=True).returncode
        return rc, time.perf_counter() - t
    finally:
        for p in busy:
            p.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--out", default="bench/out/determinism")
    a = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')}; python bench/determinism.py --hogs {a.hogs}\n")
    print("| case | artefact | quiet: exit, s, sha256 | beside hogs: exit, s, sha256 | identical |")
    print("|---|---|---|---|---|")
    for name, args, artefact in CASES:
        rows = []
        for tag, hogs in (("quiet", 0), ("busy", a.hogs)):
            d = Path(a.out) / f"{name.split(',')[0].replace(' ', '-')}-{tag}"
            rc, wall = run(args, d, hogs)
            digest = hashlib.sha256((d / artefact).read_bytes()).hexdigest() if (d / artefact).exists() else "-"
            rows.append((rc, wall, digest))
        same = rows[0][2] == rows[1][2] != "-"
        print(f"| {name} | {artefact} | {rows[0][0]}, {rows[0][1]:.1f}, {rows[0][2][:16]} | "
              f"{rows[1][0]}, {rows[1][1]:.1f}, {rows[1][2][:16]} | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
