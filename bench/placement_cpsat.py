"""The placement's CP-SAT engine with and without the bottom-left search rule, on the tile groups a real plan
leaves to the exact engines.

Usage: python bench/placement_cpsat.py [--model models/siglip.yaml] [--batch 8] [--catalogue compact]
                                       [--effort 400] [--time-limit 3600] [--seconds 8] [--out bench/out/pcpsat]
Solves the case in this process up to the placement of the first plan the search ends on; the groups the cheap
placements, their replays and the short canonical search leave (the exact engines' work) are kept and the solve
is stopped there. Each group then gets one CP-SAT run per engine, `--seconds` deterministic seconds each (the
placement's longer run is 8), one worker, fixed seed, the placement validated apart. Prints a markdown table:
per group its first tile, buffers, conflict pairs and bytes free at its fullest step; per engine its outcome
(placed, proven impossible, undecided), deterministic and wall seconds; then the totals.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time


class _Enough(Exception):
    """The instances are in hand: the solve goes no further."""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/siglip.yaml")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--catalogue", default="compact")
    ap.add_argument("--effort", type=float, default=400.0)
    ap.add_argument("--time-limit", type=float, default=3600.0)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--out", default="bench/out/pcpsat")
    a = ap.parse_args()

    import ipuplan.backend.placement.tiles as tiles
    from ipuplan.api import solve
    from ipuplan.backend.placement.cpsat import place_cpsat
    from ipuplan.backend.placement.validate import violations

    groups: list = []

    def keep(gs, left, final, node_budget, pp, near=None, deadline=None):
        groups.extend(gs[k] for k in left)
        raise _Enough

    tiles._exact = keep
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/placement_cpsat.py "
          f"--model {a.model} --batch {a.batch} --catalogue {a.catalogue} --effort {a.effort:g} "
          f"--time-limit {a.time_limit:g} --seconds {a.seconds:g}\n")
    t = time.perf_counter()
    try:
        solve(a.model, a.batch, out=a.out, catalogue=a.catalogue, effort=a.effort, time_limit=a.time_limit)
        print("the first plan needed no exact engine: nothing to compare")
        return
    except _Enough:
        pass
    print(f"{len(groups)} tile groups left to the exact engines by the first plan ({time.perf_counter() - t:.0f} s "
          f"to reach it)\n")
    print("| first tile | buffers | conflicts | free B | free search | det s | wall s | bottom-left | det s | wall s |")
    print("|---:|---:|---:|---:|---|---:|---:|---|---:|---:|")
    totals = {False: [0, 0.0, 0.0], True: [0, 0.0, 0.0]}
    for g in groups:
        row = [int(g.tiles[0]), len(g.inst.buffers), len(g.inst.conflicts), tiles.slack(g.inst)]
        for rule in (False, True):
            t = time.perf_counter()
            r = place_cpsat(g.inst, a.seconds, bottom_left=rule)
            wall = time.perf_counter() - t
            if r.placed and violations(g.inst, r.offsets):
                raise RuntimeError(f"tile {row[0]}: a placement that fails validation")
            row += ["placed" if r.placed else "impossible" if r.proven else "undecided", f"{r.work:.2f}",
                    f"{wall:.1f}"]
            totals[rule][0] += r.placed
            totals[rule][1] += r.work
            totals[rule][2] += wall
        print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
    n = len(groups)
    print(f"\nfree search: {totals[False][0]} of {n} placed, {totals[False][1]:.2f} deterministic s, "
          f"{totals[False][2]:.0f} s wall; bottom-left: {totals[True][0]} of {n} placed, {totals[True][1]:.2f} "
          f"deterministic s, {totals[True][2]:.0f} s wall")


if __name__ == "__main__":
    main()
