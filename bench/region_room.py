"""One case solved two ways in one process: region 1's rows with the interleaved data alone (the relaxation as it
was) and with every standard buffer larger than the tile's region-0 room too (solver/memory/regions.py); each
variant's plan then placed once.

Usage: python bench/region_room.py MODEL --batch B [--stage FIRST:COUNT] [--catalogue compact] [--effort 120]
       [--time-limit 3000]
`--stage 12:13`: the pipeline stage of COUNT layers from layer FIRST (the stem and head as the model's depth
makes them), as `solve --ipus` poses it. Each variant is one `ipuplan.solver.solve` (its cycle search, no
placement) and one `tiles.place_plan` of the plan it ends on, the placement's exact engines within their budgets;
the job's retries after a refused placement are not run. Prints, per variant, the plan's cycles and gap, the
standard buffers of the plan larger than their tile's room, the tile groups left to the exact engines and the
placement's outcome.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _placing import case_parser, outcome, place_counted  # noqa: E402 (bench/ is the script's directory)


def main() -> None:
    ap = case_parser(__doc__, "compact", 120.0, 3000.0)
    ap.add_argument("--stage", default=None, help="FIRST:COUNT, a pipeline stage of COUNT layers from layer FIRST")
    a = ap.parse_args()
    import ipuplan.solver.memory.regions as regions
    from ipuplan.catalogue import Catalogue
    from ipuplan.layout import MemClass
    from ipuplan.model import build_graph, load_model
    from ipuplan.model.stage import Stage
    from ipuplan.solver.rows import region0_room
    from ipuplan.solver.solve import SolveOptions, solve
    from ipuplan.target import load_target
    from _grid import machine_line
    stage = f" --stage {a.stage}" if a.stage else ""
    print(f"{machine_line()} · python bench/region_room.py {a.model} --batch {a.batch}{stage} --catalogue "
          f"{a.catalogue} --effort {a.effort:g} --time-limit {a.time_limit:g}\n")
    spec = load_model(a.model)
    st = None
    if a.stage:
        first, count = map(int, a.stage.split(":"))
        st = Stage.of(first, count, spec.layers)
    graph = build_graph(spec, a.batch, st) if st else build_graph(spec, a.batch)
    target = load_target(ROOT / "targets" / "c600.yaml")
    print("| region 1's rows | verdict | cycles | gap | standard buffers of the plan larger than their tile's room "
          "(tiles) | tile groups | left to the exact engines | placement | solve s | place s |")
    print("|---|---|---:|---:|---|---:|---:|---|---:|---:|")
    shipped = regions.region0_room
    for name, room_of in (("interleaved data", lambda p, gs=None: None), ("and standard beyond the room", shipped)):
        regions.region0_room = room_of
        t = time.perf_counter()
        r = solve(graph, target, SolveOptions(batch=a.batch, catalogue=Catalogue(a.catalogue), effort=a.effort,
                                              time_limit=a.time_limit, slack_effort=0, explain=False))
        solved = time.perf_counter() - t
        regions.region0_room = shipped
        if r.plan is None:
            print(f"| {name} | {r.verdict.name} | | | | | | | {solved:.0f} | |", flush=True)
            continue
        room = region0_room(r.problem)
        big = [(cb.what, int(np.count_nonzero(r.problem.vectors[cb.vec] > room))) for cb in r.problem.contribs
               if cb.lit in r.chosen and cb.mem is MemClass.STANDARD and (r.problem.vectors[cb.vec] > room).any()]
        pp, left, placed = place_counted(r.problem, r.chosen)
        s = pp.summary()
        shown = ", ".join(f"{w} ({n})" for w, n in big[:3]) + (f", {len(big) - 3} more" if len(big) > 3 else "")
        gap = 100 * (r.plan["cycles"].get("gap") or 0)
        print(f"| {name} | {r.verdict.name} | {r.plan['cycles']['modeled']:,} | {gap:.2f} % | "
              f"{len(big)}: {shown or 'none'} | {s['tile_groups']} | {left} | {outcome(pp)} | "
              f"{solved:.0f} | {placed:.1f} |", flush=True)


if __name__ == "__main__":
    main()
