"""The throughput ceiling of a catalogue: per batch, the fewest modeled cycles any plan in it can have, whatever
memory, tables and fragments it would need — so the most images/s any plan of that catalogue can model there.

Two lower bounds on the objective of every plan the solver could return (`ipuplan/solver/ceiling.py`): the
floor (the constant, each op's cheapest implementation, each edge's cheapest layout pair; sums, no solver) and
the free optimum (CP-SAT on the choice family and the objective alone, no memory, table or fragment family;
CP-SAT's proof, not re-checked; its best bound when the time runs out). The script asserts floor <= free optimum
and that the free optimum's plan costs what CP-SAT says.

A statement about the catalogue and the prices, not about every compiler: a plan outside the catalogue may be
faster. Beside each: the compute roofline (every matmul and attention product at the AMP's peak on every tile).

Usage: python bench/ceiling.py MODEL [--batches 1,2,4,8,16] [--catalogues shaped,compact] [--effort 120]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batches", default="1,2,4,8,16")
    ap.add_argument("--catalogues", default="shaped,compact")
    ap.add_argument("--effort", type=float, default=120.0,
                    help="deterministic seconds per CP-SAT solve (as solve's --effort)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    from _grid import machine_line
    from catalogues import roofline
    from ipuplan.bounds import machine_bound
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.ceiling import floor, free_optimum
    from ipuplan.solver.objective import objective_value
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    target = load_target(ROOT / "targets" / "c600.yaml")
    spec = load_model(a.model)
    name = Path(a.model).stem
    clock = target.clock_hz
    print(f"{machine_line()}; {name}, images/s at {clock / 1e9:g} GHz")
    print("| batch | catalogue | implementations | floor cycles | free optimum cycles | ceiling images/s | "
          "compute / exchange / sync | x roofline | s |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    for b in (int(x) for x in a.batches.split(",")):
        graph = build_graph(spec, b)
        roof = roofline(name, b)
        if machine_bound(graph, target, None).proves:
            print(f"| {b} | any | | | | 0 (machine bound: INFEASIBLE for any compiler) | | | |", flush=True)
            continue
        for cat in a.catalogues.split(","):
            t0 = time.perf_counter()
            p = build_problem(graph, target, b, None, True, None, 0, Catalogue(cat))
            n = sum(len(v) for v in p.impls.values())
            if any(not v for v in p.impls.values()):
                print(f"| {b} | {cat} | {n} | | | no implementation of some op | | | |", flush=True)
                continue
            lo = floor(p)
            c = free_optimum(p, a.effort, a.workers)
            cyc = c.cycles
            assert cyc >= lo, (cyc, lo)
            if c.optimal:
                assert objective_value(p, c.chosen) == cyc
            sp = c.split(p)
            parts = f"{sp.compute:,}/{sp.exchange:,}/{sp.sync:,}" if c.optimal else "(bound only)"
            what = f"{cyc:,}" if c.optimal else f"≥ {cyc:,} (bound; not optimal within an effort of {a.effort:g})"
            print(f"| {b} | {cat} | {n:,} | {lo:,} | {what} | {b * clock / cyc:.1f} | {parts} | "
                  f"{cyc / roof:.2f} | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
