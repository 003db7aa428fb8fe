"""The placement engine on MiniMalloc's public "challenging" suite (google/minimalloc, benchmarks/challenging,
11 instances at 1 MiB), next to plain CP-SAT AddNoOverlap2D on the same machine.

    git clone https://github.com/google/minimalloc bench/out/minimalloc
    python bench/minimalloc.py --dir bench/out/minimalloc/benchmarks/challenging

Prints one row per instance: our verdict, nodes, seconds (every placement validated independently), then
CP-SAT's verdict and seconds under a wall-clock limit. The CSVs are read from the clone, not copied here."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ortools.sat.python import cp_model

from ipuplan.backend.placement import place, violations
from ipuplan.backend.placement.csvio import read_csv


def cpsat(inst, seconds: float, workers: int) -> tuple[str, float]:
    m = cp_model.CpModel()
    xs, ys = [], []
    for b in inst.buffers:
        o = m.NewIntVar(0, inst.capacity - b.size, f"o{b.name}")
        xs.append(m.NewFixedSizeIntervalVar(o, b.size, f"x{b.name}"))
        ys.append(m.NewFixedSizeIntervalVar(b.first, b.last - b.first + 1, f"y{b.name}"))
    m.AddNoOverlap2D(xs, ys)
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = seconds
    s.parameters.num_workers = workers
    t0 = time.perf_counter()
    st = s.Solve(m)
    return s.StatusName(st), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="benchmarks/challenging of a google/minimalloc clone")
    ap.add_argument("--capacity", type=int, default=1 << 20)
    ap.add_argument("--nodes", type=int, default=1_500_000, help="our search's node budget per instance")
    ap.add_argument("--cpsat-seconds", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-cpsat", action="store_true")
    a = ap.parse_args()
    files = sorted(Path(a.dir).glob("*.csv"))
    if not files:
        raise SystemExit(f"no CSV files in {a.dir}")
    place(read_csv(files[0], a.capacity), node_budget=10)  # compile the search before timing anything
    print(f"{'instance':<22} {'buffers':>7} | {'ipuplan':<9} {'nodes':>10} {'seconds':>8} | {'CP-SAT':<9} {'seconds':>8}")
    solved = [0, 0]
    for f in files:
        inst = read_csv(f, a.capacity)
        t0 = time.perf_counter()
        r = place(inst, node_budget=a.nodes)
        secs = time.perf_counter() - t0
        if r.placed:
            bad = violations(inst, r.offsets)
            verdict = "INVALID" if bad else "placed"
            solved[0] += not bad
        else:
            verdict = "proven" if r.proven else "unknown"
        cs, csecs = ("-", 0.0) if a.skip_cpsat else cpsat(inst, a.cpsat_seconds, a.workers)
        solved[1] += cs in ("OPTIMAL", "FEASIBLE")
        print(f"{f.name:<22} {len(inst.buffers):>7} | {verdict:<9} {r.nodes:>10,} {secs:>8.2f} | {cs:<9} {csecs:>8.2f}",
              flush=True)
    print(f"placed: ipuplan {solved[0]} of {len(files)}; CP-SAT {solved[1]} of {len(files)} "
          f"(limit {a.cpsat_seconds:g} s, {a.workers} workers)")


if __name__ == "__main__":
    main()
