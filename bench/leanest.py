"""The leanest implementations the catalogues offer an instance's encoder ops: per op and catalogue, the fewest
bytes an implementation's own buffers take on their fullest tile during its compute step (output, exchanged
inputs, staged parameters, resident parameters with every layer's copy, scratch; not the parameter homes,
tables or other live tensors; `solver/probe.own_bytes` with every copy counted — the plan-first probe's hint
leaves resident parameters out, as they are homes every plan holds), with its cycles.
A lower bound on what the op adds to a tile, to see which op a batch outgrows first.

Usage: python bench/leanest.py MODEL --batch 8 [--catalogues rotating,compact] [--ops encoder/attn,encoder/fc1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--catalogues", default="rotating,compact")
    ap.add_argument("--ops", default="encoder/qkv,encoder/attn,encoder/o,encoder/fc1,encoder/fc2")
    ap.add_argument("--show", type=int, default=2, help="implementations listed per op and catalogue")
    a = ap.parse_args()
    from ipuplan.catalogue import CATALOGUE, Catalogue
    from ipuplan.catalogue.impl import Ctx
    from ipuplan.catalogue.schedule import build_schedule
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.probe import own_bytes
    from ipuplan.target import load_target
    target = load_target(ROOT / "targets" / "c600.yaml")
    sched = build_schedule(build_graph(load_model(a.model), a.batch))
    T = target.tiles
    counts = {k: v.count for k, v in sched.params.items()}
    print(f"{Path(a.model).stem} b{a.batch}: op buffers on the fullest tile of the op's compute step")
    print(f"| op | catalogue | bytes | cycles | implementation |\n|---|---|---:|---:|---|")
    for kind in a.catalogues.split(","):
        ctx = Ctx(target, sched, a.batch, Catalogue(kind))
        for key in a.ops.split(","):
            sop = sched.op(key)
            rows = [(own_bytes(im, T, counts), im.cycles, im.label) for im in CATALOGUE[sop.op.kind](ctx, sop)]
            for nbytes, cyc, label in sorted(set(rows))[:a.show]:
                print(f"| {key} | {kind} | {nbytes:,} | {cyc:,} | {label} |")


if __name__ == "__main__":
    main()
