"""The implementation catalogue: the schedule, and per op kind the candidate implementations the planner
chooses from (pure numpy: the solver, the backend and the certificate checker's scope check all read it)."""

from __future__ import annotations

from typing import Callable

from ..ir.graph import OpKind
from .attention import attention
from .elementwise import elementwise
from .impl import Buf, Catalogue, Ctx, Home, HomeKind, Impl, Internal, Life, Move, ParamMode, ParamUse, RowsInto
from .matmul import matmul
from .ring import ring
from .rotating import rotating
from .schedule import Schedule, SOp, build_schedule, matrix


def matmuls(ctx: Ctx, sop: SOp) -> list[Impl]:
    """Replicated grids, and in the rotating catalogue also rotating ones."""
    return matmul(ctx, sop) + (rotating(ctx, sop) if ctx.rotating else [])


def attentions(ctx: Ctx, sop: SOp) -> list[Impl]:
    """Replicated keys and values, and in the rotating catalogue also ring attention."""
    return attention(ctx, sop) + (ring(ctx, sop) if ctx.rotating else [])


CATALOGUE: dict[OpKind, Callable[[Ctx, SOp], list[Impl]]] = {
    OpKind.MATMUL: matmuls,
    OpKind.ATTENTION: attentions,
    OpKind.ADD: elementwise,
    OpKind.GELU: elementwise,
    OpKind.CAST: elementwise,
    OpKind.LAYERNORM: elementwise,
    OpKind.BROADCAST: elementwise,
    OpKind.CONCAT: elementwise,
}
# Anchors first: their layouts seed the element-wise ops around them.
ANCHORS = (OpKind.MATMUL, OpKind.ATTENTION)


def build_catalogue(ctx: Ctx) -> dict[str, list[Impl]]:
    for sop in ctx.sched.ops:
        if sop.op.kind in ANCHORS:
            ctx.impls[sop.key] = CATALOGUE[sop.op.kind](ctx, sop)
    for sop in ctx.sched.ops:
        if sop.op.kind not in ANCHORS:
            ctx.impls[sop.key] = CATALOGUE[sop.op.kind](ctx, sop)
    return ctx.impls


__all__ = ["Buf", "CATALOGUE", "Catalogue", "Ctx", "Home", "HomeKind", "Impl", "Internal", "Life", "Move", "ParamMode", "ParamUse", "RowsInto", "SOp",
           "Schedule", "build_catalogue", "build_schedule", "matrix"]
