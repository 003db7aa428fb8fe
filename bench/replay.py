"""The placement of one plan three ways in one process: first fit alone before the exact engines, first fit, best
fit and replays of placed neighbours (backend/placement/greedy.py), and those with the sweep of short CP-SAT runs
over what they leave beyond the exact engines' cap (backend/placement/tiles.py, as it ships).

Usage: python bench/replay.py MODEL --batch B [--catalogue shaped] [--effort 60] [--time-limit 1800] [--headroom 0]
Solves the case once (`ipuplan.solver.solve`: the plan the cycle search ends on, not placed; `--headroom` bytes kept
free per tile, as the job's retries keep them), then places that plan with each variant: `tiles.place_plan` with
best fit, neighbour replays and the sweep switched off, then with the sweep alone off, then as it ships. All run
the same short canonical search and the same exact engines within their budgets (EXACT_GROUPS groups,
EXACT_BUDGET deterministic CP-SAT seconds); every placement is validated apart. Prints,
per variant, the groups each method placed, how many were left to the exact engines, CP-SAT's deterministic
seconds, the wall seconds and the outcome.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _placing import case_parser, outcome, place_counted  # noqa: E402 (bench/ is the script's directory)


def main() -> None:
    ap = case_parser(__doc__, "shaped", 60.0, 1800.0)
    ap.add_argument("--headroom", type=int, default=0, help="bytes kept free per tile (as --headroom)")
    a = ap.parse_args()
    import ipuplan.backend.placement.greedy as greedy
    import ipuplan.backend.placement.tiles as tiles
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.solve import SolveOptions, solve
    from ipuplan.target import load_target
    from _grid import machine_line
    print(f"{machine_line()} · python bench/replay.py {a.model} --batch {a.batch} --catalogue {a.catalogue} "
          f"--effort {a.effort:g} --time-limit {a.time_limit:g} --headroom {a.headroom}\n")
    t = time.perf_counter()
    graph = build_graph(load_model(a.model), a.batch)
    r = solve(graph, load_target(ROOT / "targets" / "c600.yaml"),
              SolveOptions(batch=a.batch, catalogue=Catalogue(a.catalogue), effort=a.effort, time_limit=a.time_limit,
                           slack_effort=0, explain=False, headroom=a.headroom))
    if r.plan is None:
        print(f"{r.verdict.name}: no plan to place ({time.perf_counter() - t:.0f} s)")
        return
    print(f"plan: {r.verdict.name}, {r.plan['cycles']['modeled']:,} cycles modeled ({time.perf_counter() - t:.0f} s)\n")
    print("| variant | groups | first fit | best fit | replay | left to the exact engines | search | CP-SAT | "
          "CP-SAT det s | wall s | outcome |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    shipped = tiles.best_fit, greedy.NEIGHBOURS, tiles.SWEEP_BUDGET
    for name, best, neighbours, sweep in (("first fit alone", None, 0, 0.0),
                                          ("with best fit and replays", shipped[0], shipped[1], 0.0),
                                          ("and the sweep", *shipped)):
        tiles.best_fit = best or (lambda inst: None)
        greedy.NEIGHBOURS, tiles.SWEEP_BUDGET = neighbours, sweep
        pp, gone, wall = place_counted(r.problem, r.chosen)
        s = pp.summary()
        print(f"| {name} | {s['tile_groups']} | {s['by_first_fit']} | {s['by_best_fit']} | {s['by_replay']} | {gone} | "
              f"{s['by_search']} | {s['by_cpsat']} | {pp.work:.2f} | {wall:.1f} | {outcome(pp)} |", flush=True)
    tiles.best_fit, greedy.NEIGHBOURS, tiles.SWEEP_BUDGET = shipped


if __name__ == "__main__":
    main()
