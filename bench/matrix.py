"""CP-SAT against the seeds' beam strategy, same catalogue and accounting, in one run (alternating).

Usage: python bench/matrix.py [--models siglip,pe] [--batches 1,2,4,8] [--layers 1,2,full] [--time-limit 120]
Prints a markdown table for bench/RESULTS.md: verdict, wall time, modeled cycles, peak tile bytes and
exchange-table bytes for each strategy, the ratios CP-SAT / beam, and where CP-SAT proves INFEASIBLE the
time at which its certificate was ready (and its kind). CP-SAT runs without the least-overflow explanation
(`--no-explain`): the table compares time to a verdict, and an INFEASIBLE verdict's proof is its certificate.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _grid import cases, grid_args, heading

from ipuplan.checker.certificate import check_certificate
from ipuplan.job.solve import Job, run_solve
from ipuplan.solver.solve import SolveOptions


def _run(path: str, b: int, layers: int, strategy: str, limit: float) -> tuple[dict, float, dict]:
    opts = SolveOptions(batch=b, time_limit=limit, strategy=strategy, explain=False)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        res, doc = run_solve(Job(path, "targets/c600.yaml", b, layers, options=opts), Path(d))
        wall = time.perf_counter() - t
        cert = Path(d) / "certificate.json"
        if cert.exists():  # re-proved by the independent checker before the directory goes away
            c = json.loads(cert.read_text())
            res.stats["certificate_checked"] = check_certificate(c).ok
        return doc, wall, res.stats


def _certificate(doc: dict, stats: dict) -> str:
    c = doc.get("core", {}).get("certificate") or {}
    if doc["verdict"] != "INFEASIBLE":
        return ""
    if not c.get("kind"):
        return "none"
    checked = "checked" if stats.get("certificate_checked") else "CHECK FAILED"
    return f"{stats['certificate_at_seconds']:.1f} ({c['kind']}, {checked})"


def _cell(doc: dict, wall: float) -> str:
    if doc["verdict"] != "FIT":
        return f"{doc['verdict']} | {wall:.1f} | |"
    return (f"FIT | {wall:.1f} | {doc['cycles']['modeled']:,} | {doc['peaks']['total']['bytes']:,} / "
            f"{doc['exchange']['tables']['bytes']:,}")


def main() -> None:
    ap = argparse.ArgumentParser()
    grid_args(ap)
    a = ap.parse_args()
    print(heading(a))
    print("| model | batch | layers | CP-SAT verdict | s | cycles | peak / tables B | beam verdict | s | cycles | "
          "peak / tables B | time ratio | cycle ratio | CP-SAT certificate s (kind) |")
    print("|---|---:|---:|---|---:|---:|---|---|---:|---:|---|---:|---:|---|")
    for m, path, b, layers in cases(a):
        cp, tc, st = _run(path, b, layers, "cpsat", a.time_limit)
        bm, tb, _ = _run(path, b, layers, "beam", a.time_limit)
        ratio = f"{tc / tb:.2f}" if tb else ""
        cyc = (f"{cp['cycles']['modeled'] / bm['cycles']['modeled']:.4f}"
               if cp["verdict"] == bm["verdict"] == "FIT" else "")
        print(f"| {m} | {b} | {layers} | {_cell(cp, tc)} | {_cell(bm, tb)} | {ratio} | {cyc} | {_certificate(cp, st)} |",
              flush=True)


if __name__ == "__main__":
    main()
