"""Place a plan on every tile: one engine run per group of tiles with identical requests, the cheap placements
first and the groups placed replayed on their neighbours; the outcome, the first proven failure (its tile and
the literals that put bytes there, a cut for the planner), and placement.json."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...formats import PLACEMENT
from .cpsat import place_cpsat
from .requests import TileGroup, tile_groups, tile_literals
from .greedy import Neighbours, best_fit, first_fit
from .search import place
from .validate import violations

NODE_BUDGET = 50_000  # per tile group, for the canonical search (deterministic)
CPSAT_FIRST = 0.5  # deterministic seconds of CP-SAT right after first fit: most tiles suit it
CPSAT_SECONDS = 2.0  # and after the canonical search
HARD_SECONDS = 8.0  # a longer CP-SAT run on each group the first round leaves undecided
EXACT_GROUPS = 32  # tile groups per plan the exact engines take on: more left after the sweep is undecided
SWEEP_SECONDS = 0.05  # deterministic CP-SAT seconds the sweep gives each group (most take under 0.02)
SWEEP_BUDGET = 2.0  # and in all, per plan
EXACT_BUDGET = 30.0  # deterministic CP-SAT seconds per plan for the exact engines (10-25 s of wall each on full tiles)
QUICK_NODES = 5_000  # the short canonical search every group first fit leaves gets


@dataclass
class PlanPlacement:
    groups: list[TileGroup]
    offsets: list[list[int] | None]
    methods: list[str]
    nodes: int = 0
    seconds: float = 0.0
    work: float = 0.0  # deterministic CP-SAT seconds the exact engines spent
    failed: int | None = None  # index of a group proven unplaceable
    unknown: int | None = None  # index of a group the node budget ran out on
    timed_out: bool = False  # the wall clock, not a budget, left it undecided
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
                "by_best_fit": sum(m.startswith("best fit") for m in self.methods),
                "by_replay": sum(m.startswith("replay") for m in self.methods),
                "by_search": sum(m == "canonical search" for m in self.methods),
                "by_cpsat": sum(m == "CP-SAT" for m in self.methods),
                "cpsat_deterministic_seconds": round(self.work, 3),
                "search_nodes": self.nodes, "highest_address": max(heights) if heights else 0}


def place_plan(p, chosen: set, node_budget: int = NODE_BUDGET, report=None,
               deadline: float | None = None) -> PlanPlacement:
    """First fit, then best fit, on every tile group; the groups placed replayed on the others (greedy.py); if more
    than EXACT_GROUPS groups are left, a sweep of short CP-SAT runs over them (`_sweep`); a short canonical search
    on those still open, and replays of what it places; then the exact engines on what is left (at most
    EXACT_GROUPS groups, else "undecided" and the planner keeps more bytes free instead): tightest group first,
    the first engines and then, if they leave it undecided, a longer CP-SAT run, all within EXACT_BUDGET
    deterministic CP-SAT seconds, each group they place replayed on the rest. A group proven unplaceable ends the
    placement (its literals become the planner's cut); one still undecided, or the budget spent, leaves the plan
    undecided. `deadline` (time.perf_counter()) is the job's wall clock: reached, the plan is undecided and
    `timed_out`, the only way the machine's speed changes the answer."""
    t0 = time.perf_counter()
    groups = tile_groups(p, chosen)
    pp = PlanPlacement(groups, [], [])
    final = [first_fit(g.inst) or best_fit(g.inst) for g in groups]
    near = Neighbours([g.inst for g in groups], [f"tile {int(g.tiles[0])}" for g in groups])
    near.spread(final)
    left = [k for k, r in enumerate(final) if r is None]
    swept = len(left) > EXACT_GROUPS and SWEEP_BUDGET > 0
    if swept:  # the work of its undecided runs; `final` keeps that of the others
        pp.work = _sweep(groups, left, final, near, deadline)
    if all(r is None or r.placed for r in final):
        for k, r in enumerate(final):  # a short canonical search places most of what is still open
            if r is None:
                r = place(groups[k].inst, node_budget=QUICK_NODES, heuristic=False, cpsat_seconds=0)
                if r.placed or r.proven:
                    final[k] = r
        near.spread(final)
    left = [k for k, r in enumerate(final) if r is None]
    proven = [k for k, r in enumerate(final) if r is not None and not r.placed]
    if proven:  # the short search searched a group's whole tree, or CP-SAT proved it: no engine need look further
        k = proven[0]
        pp.failed = k
        pp.reason = f"tile {int(groups[k].tiles[0])} (and {len(groups[k].tiles) - 1} like it): {final[k].reason}"
    elif len(left) > EXACT_GROUPS:
        k = left[0]
        pp.offsets, pp.methods = [None] * len(groups), [r.method if r else "" for r in final]
        pp.unknown = k
        pp.work += sum(r.work for r in final if r is not None)
        pp.timed_out = deadline is not None and time.perf_counter() >= deadline  # the sweep may have stopped early
        sweep = ", a sweep of short CP-SAT runs" if swept else ""
        pp.reason = (f"the cheap placements{sweep} and a short search left {len(left)} of {len(groups)} tile groups "
                     f"(tile {int(groups[k].tiles[0])} first); the exact engines take at most {EXACT_GROUPS} per plan"
                     + ("; the --time-limit ran out during the placement" if pp.timed_out else ""))
        pp.seconds = time.perf_counter() - t0
        if report:
            report(f"placement: {pp.reason} ({pp.seconds:.1f} s)")
        return pp
    else:
        _exact(groups, left, final, node_budget, pp, near, deadline)
    if pp.failed is not None:
        pp.cut = tile_literals(p, chosen, int(groups[pp.failed].tiles[0]))
    pp.nodes = sum(r.nodes for r in final if r is not None)
    pp.work += sum(r.work for r in final if r is not None)
    for k, (g, r) in enumerate(zip(groups, final)):
        placed = r is not None and r.placed
        if placed:
            bad = violations(g.inst, r.offsets)
            if bad:  # the validator is written apart from the engines: a disagreement is a bug, never a plan
                raise RuntimeError(f"placement of tiles {g.tiles[:4]}… failed validation: {bad[0]}")
        pp.offsets.append(r.offsets if placed else None)
        pp.methods.append(r.method if r is not None else "")
    pp.seconds = time.perf_counter() - t0
    if report:
        s = pp.summary()
        report(f"placement: {s['tile_groups']} tile groups, {s['by_first_fit']} by first fit, {s['by_best_fit']} by "
               f"best fit, {s['by_replay']} by replaying a neighbour, {s['by_search']} by "
               f"search ({s['search_nodes']:,} nodes), {s['by_cpsat']} by CP-SAT ({pp.work:.1f} deterministic s), "
               f"{pp.seconds:.1f} s" + ("" if pp.placed else f": {pp.reason}"))
    return pp


def slack(inst) -> int:
    """Bytes free at the instance's fullest step: how tight its packing is, before any address is chosen."""
    sized = [b for b in inst.buffers if b.size]
    if not sized:
        return inst.capacity
    steps = max(b.last for b in sized) + 2
    live = np.zeros(steps, np.int64)
    np.add.at(live, [b.first for b in sized], [b.size for b in sized])
    np.add.at(live, [b.last + 1 for b in sized], [-b.size for b in sized])
    return int(inst.capacity - np.cumsum(live).max())


def _tightest_first(groups: list[TileGroup], left: list[int]) -> list[int]:
    """The groups `left` by their bytes free at their fullest step, fewest first (ties by index: a fixed order)."""
    return sorted(left, key=lambda k: (slack(groups[k].inst), k))


def _sweep(groups: list[TileGroup], left: list[int], final: list, near: Neighbours,
           deadline: float | None = None) -> float:
    """SWEEP_SECONDS of CP-SAT on each group in `left`, tightest first, within SWEEP_BUDGET, each group placed
    replayed on those still open; fills `final` with what is placed or proven unplaceable (an undecided run leaves
    its group open; the work of those runs is returned). Many groups that the canonical search cannot place within
    its nodes CP-SAT places in a hundredth of a second, and its address order, replayed, places most of the rest
    (siglip-base-512's shaped b10 plans: 52 and 596 groups left by the cheap placements, all placed by 4 and 2
    CP-SAT runs and their replays, where 5,000 nodes a group placed 0 and 25)."""
    spent = lost = 0.0
    for k in _tightest_first(groups, left):
        if final[k] is not None:  # a replay placed it
            continue
        if spent >= SWEEP_BUDGET or (deadline is not None and time.perf_counter() >= deadline):
            break
        r = place_cpsat(groups[k].inst, min(SWEEP_SECONDS, SWEEP_BUDGET - spent), deadline)
        spent += r.work
        if not r.proven:
            lost += r.work
            continue
        final[k] = r
        if not r.placed:  # the cut: no engine need look further
            break
        near.spread(final)
    return lost


def _exact(groups: list[TileGroup], left: list[int], final: list, node_budget: int, pp: PlanPlacement,
           near: Neighbours, deadline: float | None = None) -> None:
    """The exact engines on the groups `left`, tightest first, within EXACT_BUDGET: each group the first
    engines, then at once the longer CP-SAT run if they leave it undecided; each group placed is replayed on
    those still open, which may then need no engine. Fills `final` and, on a proof or an undecided group,
    pp.failed or pp.unknown with the reason. Tightest first: those are the groups likeliest to stay undecided
    (which ends the placement soonest) and, placed, the likeliest to fit their looser neighbours by a replay.
    The wall clock (`deadline`, perf_counter) only stops the engines early."""
    for k in _tightest_first(groups, left):
        if final[k] is not None and final[k].placed:  # a replay placed it
            continue
        g = groups[k]
        what = f"tile {int(g.tiles[0])} (and {len(g.tiles) - 1} like it)"
        for rnd in (1, 2):
            budget = EXACT_BUDGET - sum(final[j].work for j in left if final[j] is not None)
            if budget <= 0 or (deadline is not None and time.perf_counter() >= deadline):
                still = sum(final[j] is None or not final[j].placed for j in left)
                pp.unknown, pp.timed_out = k, budget > 0
                pp.reason = (f"{what}: the --time-limit ran out during the placement with {still} groups open"
                             if budget > 0 else f"{what}: the exact engines' {EXACT_BUDGET:g} deterministic "
                             f"seconds per plan ran out with {still} groups open")
                return
            if rnd == 1:
                r = place(g.inst, node_budget=node_budget, heuristic=False, cpsat_seconds=min(CPSAT_SECONDS, budget),
                          cpsat_first=min(CPSAT_FIRST, budget), deadline=deadline)
            else:  # the group's record keeps what the first engines spent on it
                r = place_cpsat(g.inst, min(HARD_SECONDS, budget), deadline)
                r.nodes, r.work = final[k].nodes, final[k].work + r.work
            final[k] = r
            if r.placed:
                near.spread(final)
                break
            if r.proven:
                pp.failed, pp.reason = k, f"{what}: {r.reason}"
                return
            if rnd == 2:
                late = deadline is not None and time.perf_counter() >= deadline
                pp.unknown, pp.timed_out = k, late
                pp.reason = f"{what}: {r.reason}" + ("; the --time-limit ran out during it" if late else "")
                return


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
