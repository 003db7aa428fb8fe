"""Shared by the placement benches: their command line, one plan placed with the number of tile groups the exact
engines were given counted, and the outcome in words."""

from __future__ import annotations

import argparse
import time


def case_parser(doc: str, catalogue: str, effort: float, time_limit: float) -> argparse.ArgumentParser:
    """MODEL --batch B [--catalogue] [--effort] [--time-limit], with these defaults."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--catalogue", default=catalogue)
    ap.add_argument("--effort", type=float, default=effort, help="deterministic seconds for the solve (as --effort)")
    ap.add_argument("--time-limit", type=float, default=time_limit)
    return ap


def place_counted(problem, chosen):
    """(the plan's placement, the tile groups left to the exact engines, wall seconds): `tiles.place_plan` with
    its exact engines wrapped to count what they are given."""
    import ipuplan.backend.placement.tiles as tiles
    left: list[int] = []
    exact = tiles._exact

    def counting(groups, todo, *rest):
        left.append(len(todo))
        return exact(groups, todo, *rest)

    tiles._exact = counting
    t = time.perf_counter()
    try:
        pp = tiles.place_plan(problem, chosen)
    finally:
        tiles._exact = exact
    return pp, (left[0] if left else sum(m == "" for m in pp.methods)), time.perf_counter() - t


def outcome(pp) -> str:
    return "placed" if pp.placed else f"{'proven unplaceable' if pp.failed is not None else 'undecided'}: {pp.reason}"
