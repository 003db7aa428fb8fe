"""Family `memory/placement`: placement cuts. When the exact placement proves that the buffers a set of chosen
literals put on one tile cannot be given addresses there, that set of literals is never chosen together
again: OR(not x) over the set, one named guard per cut."""

from __future__ import annotations

from ..model import ModelCtx


def add_placement_cuts(ctx: ModelCtx, cuts) -> None:
    for k, (tile, lits) in enumerate(cuts):
        g = ctx.guard(f"placement[cut {k + 1}: tile {tile}, {len(lits)} choices]", "placement", ("cut", k, tile))
        ctx.m.AddBoolOr([ctx.x[lit].Not() for lit in lits]).OnlyEnforceIf(g)
        ctx.constraints += 1
