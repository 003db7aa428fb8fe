"""Place a plan on every tile: one engine run per group of tiles with identical requests; the outcome, the
first proven failure (its tile and the literals that put bytes there, a cut for the planner), and
placement.json."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...formats import PLACEMENT
from .requests import TileGroup, tile_groups, tile_literals
from .search import first_fit, place
from .validate import violations

NODE_BUDGET = 50_000  # per tile group, for the canonical search (deterministic)
CPSAT_FIRST = 0.5  # deterministic seconds of CP-SAT right after first fit: most tiles suit it
CPSAT_SECONDS = 2.0  # and after the canonical search
EXACT_GROUPS = 8  # tile groups per plan the full exact engines may take on (12-40 s wall each on full tiles)
QUICK_NODES = 5_000  # the short canonical search every group first fit leaves gets


@dataclass
class PlanPlacement:
    groups: list[TileGroup]
    offsets: list[list[int] | None]
    methods: list[str]
    nodes: int = 0
    seconds: float = 0.0
    failed: int | None = None  # index of a group proven unplaceable
    unknown: int | None = None  # index of a group the node budget ran out on
    reason: str = ""
    cut: list[tuple] = field(default_factory=list)  # literals that together cannot be placed on that tile

    @property
    def placed(self) -> bool:
        return self.failed is None and self.unknown is None

    def summary(self) -> dict:
        heights = [max(o + b.size for o, b in zip(offs, g.inst.buffers) if b.size) for g, offs in
                   zip(self.groups, self.offsets) if offs]
        return {"tile_groups": len(self.groups), "tiles": int(sum(len(g.tiles) for g in self.groups)),
                "buffers": int(sum(len(g.inst.buffers) * len(g.tiles) for g in self.groups)),
                "by_first_fit": sum(m.startswith("first fit") for m in self.methods),
                "by_search": sum(m == "canonical search" for m in self.methods),
                "by_cpsat": sum(m == "CP-SAT" for m in self.methods),
                "search_nodes": self.nodes, "highest_address": max(heights) if heights else 0}


def place_plan(p, chosen: set, node_budget: int = NODE_BUDGET, report=None) -> PlanPlacement:
    """First fit on every tile group, a short canonical search on those it leaves, the full exact engines on
    what is still open (at most EXACT_GROUPS groups: a plan that needs more is answered "undecided" at once, and
    the planner keeps more bytes free instead)."""
    t0 = time.perf_counter()
    groups = tile_groups(p, chosen)
    pp = PlanPlacement(groups, [], [])
    quick = [first_fit(g.inst) for g in groups]
    for k, r in enumerate(quick):  # a short canonical search places most of what first fit leaves
        if r is None:
            r = place(groups[k].inst, node_budget=QUICK_NODES, heuristic=False, cpsat_seconds=0)
            if r.placed or r.proven:
                quick[k] = r
                pp.nodes += r.nodes
    left = [k for k, r in enumerate(quick) if r is None]
    if len(left) > EXACT_GROUPS:
        k = left[0]
        pp.offsets, pp.methods = [None] * len(groups), ["first fit" if r else "" for r in quick]
        pp.unknown = k
        pp.reason = (f"first fit left {len(left)} of {len(groups)} tile groups (tile {int(groups[k].tiles[0])} "
                     f"first); the exact engines take at most {EXACT_GROUPS} per plan")
        pp.seconds = time.perf_counter() - t0
        if report:
            report(f"placement: {pp.reason} ({pp.seconds:.1f} s)")
        return pp
    pp.nodes = 0  # counted again below, with the groups' final engines
    for k, g in enumerate(groups):
        r = quick[k] or place(g.inst, node_budget=node_budget, heuristic=False, cpsat_seconds=CPSAT_SECONDS,
                              cpsat_first=CPSAT_FIRST)
        pp.nodes += r.nodes
        pp.methods.append(r.method)
        if r.placed:
            bad = violations(g.inst, r.offsets)
            if bad:  # the validator is written apart from the engine: a disagreement is a bug, never a plan
                raise RuntimeError(f"placement of tiles {g.tiles[:4]}… failed validation: {bad[0]}")
            pp.offsets.append(r.offsets)
            continue
        pp.offsets.append(None)
        tile = int(g.tiles[0])
        if r.proven:
            pp.failed, pp.reason = k, f"tile {tile} (and {len(g.tiles) - 1} like it): {r.reason}"
            pp.cut = tile_literals(p, chosen, tile)
        else:
            pp.unknown, pp.reason = k, f"tile {tile} (and {len(g.tiles) - 1} like it): {r.reason}"
        break
    pp.seconds = time.perf_counter() - t0
    if report:
        s = pp.summary()
        report(f"placement: {s['tile_groups']} tile groups, {s['by_first_fit']} by first fit, {s['by_search']} by "
               f"search ({s['search_nodes']:,} nodes), {s['by_cpsat']} by CP-SAT, {pp.seconds:.1f} s"
               + ("" if pp.placed else f": {pp.reason}"))
    return pp


def _ranges(tiles: np.ndarray) -> list[list[int]]:
    """Sorted tiles as [first, last] runs."""
    out: list[list[int]] = []
    for t in map(int, tiles):
        if out and out[-1][1] == t - 1:
            out[-1][1] = t
        else:
            out.append([t, t])
    return out


def placement_doc(p, pp: PlanPlacement) -> dict:
    """placement.json: per tile group, its tiles and every buffer's name, offset, size and live steps."""
    mm = p.target.memory_map
    return {
        "format": PLACEMENT,
        "base": mm.base if p.acct.mode == "modeled" else 0,
        "capacity": groups_capacity(pp),
        "summary": pp.summary(),
        "groups": [{"tiles": _ranges(g.tiles), "method": m,
                    "buffers": [[b.name, int(o), b.size, b.first, b.last] for b, o in zip(g.inst.buffers, offs)]}
                   for g, offs, m in zip(pp.groups, pp.offsets, pp.methods)],
    }


def groups_capacity(pp: PlanPlacement) -> int:
    return pp.groups[0].inst.capacity if pp.groups else 0
