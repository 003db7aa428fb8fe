"""Helpers every generator uses: activation grids, parameter-mode variants, vertex descriptors."""

from __future__ import annotations

from typing import Callable

from ..codelets import Codelet, patch_cycles
from ..layout import Layout, MemClass
from ..layout.geometry import per_block
from .impl import SPREAD, Buf, Ctx, Impl, Life, ParamMode, ParamUse
from .transport import block_homes

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


def variants(ctx: Ctx, uses: list[tuple[str, Layout]], base: dict,
             make: Callable[[dict, tuple[ParamUse, ...]], Impl]) -> list[Impl]:
    """One implementation per way of holding the op's parameters (all of them resident, or all staged): staged
    from spread homes, and in the shaped catalogue also from blocks homes wherever one is offered (whole blocks;
    then the most chunked), the rest spread. plan.json records the staged variants' homes by parameter."""
    if not uses:
        return [make(dict(base), ())]
    out = [make(dict(base, params=ParamMode.RESIDENT.value),
                tuple(ParamUse(k, lay, ParamMode.RESIDENT) for k, lay in uses))]
    homesets = [tuple(SPREAD for _ in uses)]
    if ctx.shaped:
        offers = [block_homes(ctx.tiles, k, lay, sequence_count(ctx, k)) for k, lay in uses]
        for pick in (0, -1):
            hs = tuple(o[pick] if o else SPREAD for o in offers)
            if hs not in homesets:
                homesets.append(hs)
    for hs in homesets:
        f = dict(base, params=ParamMode.STAGED.value)
        if ctx.shaped:
            f["homes"] = {k: h.record for (k, _), h in zip(uses, hs)}
        out.append(make(f, tuple(ParamUse(k, lay, ParamMode.STAGED, h) for (k, lay), h in zip(uses, hs))))
    return out


def patched(ctx: Ctx, ps: tuple[ParamUse, ...]) -> int:
    """Vertex fields that point into a resident per-layer sequence (their address moves every iteration)."""
    return sum(1 for p in ps if p.mode is ParamMode.RESIDENT and sequence_count(ctx, p.key) > 1)


def holder(t: int, operand: str, own: str) -> str:
    """Where a rotating operand's shard for step t sits: the operand's own buffer (its exchanged or staged copy,
    read once, then free) at even steps, the op's shard buffer at odd ones."""
    return operand if t % 2 == 0 else own


def home_label(fields: dict) -> str:
    """The non-spread homes of a staged variant, for its label."""
    homes = sorted({h for h in fields.get("homes", {}).values() if h != "spread"})
    return f" (homes {', '.join(homes)})" if homes else ""
