"""Helpers every generator uses: activation grids, parameter-mode variants, vertex descriptors."""

from __future__ import annotations

from typing import Callable

from ..codelets import Codelet, patch_cycles
from ..layout import Layout, MemClass
from ..layout.geometry import per_block
from .impl import Buf, Ctx, Impl, Life, ParamMode, ParamUse

IL, STD = MemClass.INTERLEAVED, MemClass.STANDARD


def pow2_upto(n: int) -> list[int]:
    out, k = [], 1
    while k <= n:
        out.append(k)
        k *= 2
    return out


def row_layout(rows: int, cols: int, elem: int, batch: int, pr: int, pc: int = 1, mem: MemClass = STD,
               **kw) -> Layout:
    """An activation grid; blocks never straddle images when the row blocks divide by the batch."""
    g = batch if (pr % batch == 0 and rows % batch == 0) else 1
    return Layout(rows, cols, elem, pr=pr, pc=pc, row_groups=g, mem=mem, **kw)


def descriptors(ctx: Ctx, grid: Layout, codelet: Codelet, patched_fields: int = 0) -> Buf:
    """Vertex descriptors of one compute set: one vertex per block of `grid`, each with its codelet's
    words and one patch-list word per field that moves with a Repeat iteration (a resident sequence)."""
    nbytes = codelet.descriptor_bytes(ctx.target) + 4 * patched_fields
    return Buf(f"descriptors {codelet.name}", per_block(grid, -(-nbytes // 8) * 8), Life.PROGRAM)


def descriptor_patching(ctx: Ctx, grid: Layout, patched_fields: int) -> int:
    """Cycles, before each iteration of the Repeat body, to rewrite the moving fields of one compute set's
    vertices on the busiest tile (one vertex per block of `grid`)."""
    if not patched_fields:
        return 0
    blocks = int(per_block(grid, 1).tile_bytes(ctx.tiles).max())
    return patch_cycles(ctx.target, blocks * patched_fields)


def sequence_count(ctx: Ctx, key: str) -> int:
    return ctx.sched.params[key].count


def variants(uses: list[tuple[str, Layout]], base: dict, make: Callable[[dict, tuple[ParamUse, ...]], Impl]
             ) -> list[Impl]:
    """One implementation per parameter mode (all parameters of the op share the mode)."""
    if not uses:
        return [make(dict(base), ())]
    return [make(dict(base, params=mode.value), tuple(ParamUse(k, lay, mode) for k, lay in uses))
            for mode in ParamMode]


def patched(ctx: Ctx, ps: tuple[ParamUse, ...]) -> int:
    """Vertex fields that point into a resident per-layer sequence (their address moves every iteration)."""
    return sum(1 for p in ps if p.mode is ParamMode.RESIDENT and sequence_count(ctx, p.key) > 1)
