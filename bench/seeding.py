"""What a hardware measurement of the AMP's seeding would be worth: a model's ceiling and its best plan with the
rotating matmul step priced as today, and priced as if seeding the AMP from the running sum cost nothing.

Today a rotating step (`codelets.gemm.accumulate_cycles`) pays, after its first step, the running sum's bytes
counted as F32 at the k-split reduction's measured 1 B per cycle (docs/COSTS.md): no cheaper figure is measured.
The AMP can start a product from partial sums it loads; if that load overlapped the products, a step would cost
its product and epilogue alone. This script prices both in one process, the second by replacing
`accumulate_cycles` in its own process only: no target, codelet or catalogue file changes, and no plan it
reports can be built, placed or checked (the checker prices the step as the codelet does). Per batch and price:
the free optimum (the ceiling, memory aside; `ipuplan/solver/ceiling.py`) and the memory-constrained solve
(`ipuplan.solver.solve`, exact per-tile rows, no placement): its modeled cycles, its bound, and the matmuls
it rotates.

A hypothesis, not a price: the second row of each batch says what a measurement would have to show to move
the model's throughput, and by how much.

Usage: python bench/seeding.py MODEL [--batches 3,4] [--catalogue compact] [--effort 400] [--time-limit 2400]
"""

from __future__ import annotations

import argparse
import sys
import time
from math import ceil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def seeded_free(measured):
    """The rotating step without the running sum's add: the AMP product and the epilogue of every step."""
    def accumulate_cycles(target, m, k, n, fp8, first):
        return measured(target, m, k, n, fp8, True)
    return accumulate_cycles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batches", default="3,4")
    ap.add_argument("--catalogue", default="compact")
    ap.add_argument("--effort", type=float, default=400.0, help="deterministic seconds per solve (as --effort)")
    ap.add_argument("--time-limit", type=float, default=2400.0, help="wall seconds per solve (as --time-limit)")
    ap.add_argument("--ceiling-effort", type=float, default=120.0, help="deterministic seconds per free optimum")
    ap.add_argument("--goal", type=float, default=300.0, help="images/s to state in cycles per batch")
    a = ap.parse_args()
    from ipuplan.catalogue import Catalogue
    from ipuplan.codelets import gemm
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.ceiling import free_optimum
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.solve import SolveOptions, solve
    from ipuplan.target import load_target
    from _grid import machine_line
    target = load_target(ROOT / "targets" / "c600.yaml")
    spec = load_model(a.model)
    clock = target.clock_hz
    measured = gemm.accumulate_cycles
    prices = (("measured (add at 1 B/cycle)", measured), ("seeding free (hypothesis)", seeded_free(measured)))
    print(f"{machine_line()}; {Path(a.model).stem}, {a.catalogue} catalogue, images/s at {clock / 1e9:g} GHz, "
          f"effort {a.effort:g}, time limit {a.time_limit:g} s")
    print("| batch | rotating step | ceiling images/s | verdict | modeled cycles | images/s | bound: images/s at most "
          "| rotating matmuls | peak B (tile) | wall s |")
    print("|---:|---|---:|---|---:|---:|---:|---|---:|---:|")
    for b in (int(x) for x in a.batches.split(",")):
        graph = build_graph(spec, b)
        for name, price in prices:
            gemm.accumulate_cycles = price  # the catalogue reads it through the module, at build time
            try:
                t0 = time.perf_counter()
                p = build_problem(graph, target, b, None, False, None, 0, Catalogue(a.catalogue))
                free = free_optimum(p, a.ceiling_effort, 2)
                ceil_ips = f"{b * clock / free.cycles:.1f}" + ("" if free.optimal else " (bound)")
                opts = SolveOptions(batch=b, catalogue=Catalogue(a.catalogue), effort=a.effort,
                                    time_limit=a.time_limit, slack_effort=0, explain=False)
                r = solve(graph, target, opts)
            finally:
                gemm.accumulate_cycles = measured
            wall = time.perf_counter() - t0
            if r.plan is None:
                print(f"| {b} | {name} | {ceil_ips} | {r.verdict.value} | | | | | | {wall:.0f} |", flush=True)
                continue
            cyc = r.plan["cycles"]
            rot = sorted(f"{op.split('/')[-1]} r{c['rotate']}" for op, c in r.plan["choices"].items()
                         if c.get("rotate"))
            peak = r.plan["peaks"]["total"]
            bound = cyc.get("best_bound") or cyc["modeled"]
            print(f"| {b} | {name} | {ceil_ips} | {r.verdict.value} | {cyc['modeled']:,} | "
                  f"{b * clock / cyc['modeled']:.1f} | {b * clock / bound:.1f} | {', '.join(rot) or 'none'} | "
                  f"{peak['bytes']:,} ({peak['tile']}) | {wall:.0f} |", flush=True)
    print(f"{a.goal:g} images/s is " + ", ".join(f"{ceil(b * clock / a.goal):,} cycles at b{b}"
                                              for b in (int(x) for x in a.batches.split(","))))


if __name__ == "__main__":
    main()
