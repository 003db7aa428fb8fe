"""The plan that overflows least, for an instance whose solve ends without a plan (UNKNOWN as well as INFEASIBLE):
the elastic model `ipuplan explain` runs on an INFEASIBLE verdict (every capacity with a slack, their sum
minimized), printed as JSON — the deficit, its tile and step, what is live there, each op's cheapest alternative.

Usage: python bench/deficit.py MODEL [--batch 8] [--catalogue rotating] [--effort 60] [--time-limit 1800]
       [--stage FIRST:COUNT]   (one stage of a pipeline over several chips: docs/PIPELINE.md)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--catalogue", default="shaped")
    ap.add_argument("--effort", type=float, default=60.0)
    ap.add_argument("--time-limit", type=float, default=1800.0)
    ap.add_argument("--stage", default=None, help="FIRST:COUNT, a pipeline stage's layers")
    a = ap.parse_args()
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import tile_classes
    from ipuplan.solver.explain import elastic_explanation
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.solve import SolveOptions
    from ipuplan.target import load_target
    target = load_target(ROOT / "targets" / "c600.yaml")
    opts = SolveOptions(batch=a.batch, catalogue=Catalogue(a.catalogue), effort=a.effort, time_limit=a.time_limit)
    spec = load_model(a.model)
    stage = None
    if a.stage:
        from ipuplan.model.stage import Stage
        first, count = map(int, a.stage.split(":"))
        stage = Stage.of(first, count, spec.layers)
    p = build_problem(build_graph(spec, a.batch, stage), target, a.batch, None, opts.use_relays,
                      opts.table_budget, 0, opts.catalogue)
    classes = tile_classes([p.vectors[i] for i in sorted({cb.vec for cb in p.contribs})], target.tiles)
    t0 = time.perf_counter()
    ex = elastic_explanation(p, classes, opts, Budget.start(opts.effort, opts.time_limit))
    ex["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(ex, indent=1))


if __name__ == "__main__":
    main()
