"""Would a weight-stationary matmul family raise the ceiling? A lower bound on its cycles per matmul, beside what the
catalogue's fastest plan (the free optimum, memory aside) spends on the same op.

In a weight-stationary grid every tile keeps one unique block of w (its home: nothing staged, nothing replicated)
and multiplies every row of x through it: a pk x pn grid of k-slices by column blocks, pk * pn <= tiles. Whatever
the schedule (x streamed in row chunks or held whole), the busiest tile of it pays at least
- its AMP product over all m rows (`codelets.gemm.cycles` of [m, k / pk] x [k / pk, n / pn]),
- receiving its x column slice: the pn tiles of a k-slice all need all m rows of it and x exists once, so together
  they receive at least (pn - 1) * m * (k / pk) bytes; the busiest at least 1 / pn of that, at the exchange rate,
- with pk > 1, adding the pk partial sums of every output value: (pk - 1) * m * (n / pn) additions spread over
  the pk tiles at best, each output value counted at 2 bytes (F16, the least any partial takes) at the target's
  reduction rate.
Pieces, syncs, launches and the output's way out are left out, so the figure is below any such plan's. The
catalogue side is the free optimum's own implementation of the op plus the layout pair its x arrives by (the
cycles its plan pays for them; `solver/ceiling.py`), and the cheapest implementation that stages (or rotates) its
weights from their homes, plus the cheapest layout pair into its x: what a plan pays that does not hold every
layer's replicated weights. The last line bounds the ceiling if every matmul took the
cheaper of the two: the free optimum less every saving (an upper bound on images/s, not a plan).

Usage: python bench/stationary.py MODEL [--batches 3,4] [--catalogue compact]
"""

from __future__ import annotations

import argparse
import sys
import time
from math import ceil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def stationary_bound(t, m: int, k: int, n: int, fp8: bool) -> tuple[int, int, int, tuple[int, int, int]]:
    """(cycles, pk, pn, (compute, x in, reduction)) of the best weight-stationary grid's lower bound."""
    from ipuplan.codelets import gemm
    e = 1 if fp8 else 2
    best = None
    pk = 1
    while pk <= min(t.tiles, k):
        pn = min(t.tiles // pk, n)
        kb, nb = ceil(k / pk), ceil(n / pn)
        comp = gemm.cycles(t, m, kb, nb, fp8)
        xin = ceil((pn - 1) * m * kb * e / pn / t.exchange_bytes_per_cycle)
        red = ceil((pk - 1) * m * nb * 2 / pk / t.reduction_bytes_per_cycle)
        c = (comp + xin + red, pk, pn, (comp, xin, red))
        best = c if best is None or c < best else best
        pk *= 2
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batches", default="3,4")
    ap.add_argument("--catalogue", default="compact")
    ap.add_argument("--effort", type=float, default=120.0, help="deterministic seconds for the free optimum")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    from ipuplan.catalogue import Catalogue
    from ipuplan.catalogue.impl import ParamMode
    from ipuplan.catalogue.schedule import matrix
    from ipuplan.ir.graph import OpKind
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.ceiling import free_optimum
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    from _grid import machine_line
    target = load_target(ROOT / "targets" / "c600.yaml")
    spec = load_model(a.model)
    print(f"{machine_line()}; {Path(a.model).stem}, {a.catalogue} catalogue, cycles per trip")
    for b in (int(x) for x in a.batches.split(",")):
        t0 = time.perf_counter()
        p = build_problem(build_graph(spec, b), target, b, None, False, None, 0, Catalogue(a.catalogue))
        free = free_optimum(p, a.effort, a.workers)
        print(f"\nbatch {b}: free optimum {free.cycles:,} cycles ({'optimal' if free.optimal else 'bound'}), "
              f"{b * target.clock_hz / free.cycles:.1f} images/s")
        print("| op | trips | m x k x n | free optimum's impl + x edge | its implementation | cheapest with weights "
              "staged + cheapest x edge | stationary bound (compute + x in + reduction) | pk x pn |")
        print("|---|---:|---|---:|---|---:|---:|---:|")
        saving = 0
        for s in p.sched.ops:
            if s.op.kind is not OpKind.MATMUL or s.key not in p.impls:
                continue
            xref, wref = s.reads[0][1], s.reads[1][1]
            xv = p.sched.buffers[xref.key].value if xref.kind == "act" else p.sched.params[xref.key].value
            m, k = matrix(xv)
            n = p.sched.params[wref.key].value.shape[1]
            i = next(i for i in range(len(p.impls[s.key])) if ("impl", s.key, i) in free.chosen)
            into_x = [e for e in p.edges if e.consumer == s.key and e.index == 0]
            edge = sum(p.cycles.get(pr.lit, 0) for e in into_x for pr in e.pairs if pr.lit in free.chosen)
            ours = (p.cycles.get(("impl", s.key, i), 0) + edge) // s.trips
            x_edge = min((min((p.cycles.get(pr.lit, 0) for pr in e.pairs), default=0) for e in into_x), default=0)
            staged = [p.cycles.get(("impl", s.key, j), 0) for j, im in enumerate(p.impls[s.key])
                      if all(q.mode is ParamMode.STAGED for q in im.params)]
            lean = (min(staged) + x_edge) // s.trips if staged else None
            cyc, pk, pn, (comp, xin, red) = stationary_bound(target, m, k, n, xv.dtype.is_fp8)
            saving += max(0, ours - cyc) * s.trips
            print(f"| {s.key} | {s.trips} | {m} x {k} x {n} | {ours:,} | {p.impls[s.key][i].label} | "
                  f"{'none' if lean is None else format(lean, ',')} | {cyc:,} "
                  f"({comp:,} + {xin:,} + {red:,}) | {pk} x {pn} |")
        best = free.cycles - saving
        print(f"\nwith the cheaper of the two for every matmul: at least {best:,} cycles, at most "
              f"{b * target.clock_hz / best:.1f} images/s ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
