"""Element-wise and data-movement implementations: layernorm, add, GELU, cast, broadcast, concat.

The output layout is the choice: candidates come from the first input's producer (compute where the data
is), from the layouts consumers need (compute straight into them: e.g. cast into a GEMM's replicated,
padded operand layout), and one canonical row grid. Inputs of the output's shape are read in the same
grid from either memory class; vectors and positional tables follow the output's blocks, resident or
staged. With more images than tiles the row grid puts whole images on every tile, and a positional table sits
whole beside each block (the add reads it once per image). LayerNorm over few rows may split columns with
cross-tile statistics; concat's inputs are written into the output's rows by the exchange.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..codelets import call_cycles, round_cycles, vector
from ..ir.graph import OpKind
from ..layout import Layout, MemClass
from ..layout.geometry import per_block
from ..layout.transfer import block_moves
from .common import STD, descriptor_patching, descriptors, home_label, patched, row_layout, variants
from .impl import Buf, Ctx, Impl, Internal, Life, RowsInto
from .schedule import SOp, matrix

ANY = MemClass.ANY
CODELET = {OpKind.ADD: vector.ADD, OpKind.GELU: vector.GELU, OpKind.CAST: vector.CAST,
           OpKind.LAYERNORM: vector.LAYERNORM, OpKind.BROADCAST: vector.COPY}
COST = {OpKind.ADD: "add", OpKind.GELU: "gelu", OpKind.CAST: "cast", OpKind.LAYERNORM: "layernorm",
        OpKind.BROADCAST: "copy"}


PRODUCER_LAYOUTS = 6  # shaped catalogue: at most this many of the producer's layouts (then every consumer need)
GRID_CANDIDATES = 8  # grid catalogue: the first this many candidates, in the order below


def neighbour_layouts(ctx: Ctx, sop: SOp, elem: int) -> list[Layout]:
    """Output layout candidates: the first input's producer's layouts (compute where the data is), the layouts
    the consumers need (compute straight into them), the canonical row grid (one row block per tile). The grid
    catalogue keeps the first GRID_CANDIDATES of them; the shaped one PRODUCER_LAYOUTS of the producer's and
    every consumer need and the row grid, so a conversion between producer and consumer can always happen where
    it is cheapest."""
    rows, cols = matrix(sop.graph.value(sop.op.outputs[0]))
    groups: list[list[Layout]] = [[], [], []]

    def add(k: int, lay, mem: MemClass | None = None):
        if not isinstance(lay, Layout) or lay.rows != rows or lay.cols != cols or lay.flat or lay.col_skew or \
                lay.row_skew:
            return  # a rotating matmul's skewed shards are its own exchanged copy (it overwrites them)
        lay = dataclasses.replace(lay, elem=elem, mem=mem or lay.mem)
        if lay.mem is ANY:
            lay = lay.allocated()
        if lay not in groups[k]:
            groups[k].append(lay)

    for _, r in sop.reads:
        if r.kind == "act" and r.window is None and r.key in ctx.sched.buffers:
            prod = ctx.sched.buffers[r.key].producer
            for im in ctx.impls.get(prod, []):
                add(0, dataclasses.replace(im.out, row_align=1, col_align=1), STD)
            break
    for c in ctx.sched.buffers[sop.out_key].consumers:
        for im in ctx.impls.get(c, []):
            for i, r in ctx.sched.op(c).reads:
                if r.key == sop.out_key and r.window is None:
                    add(1, im.needs.get(i))
    B = ctx.batch
    if B > ctx.tiles and rows % B == 0:  # more images than tiles: whole images per tile, every tile holding some
        add(2, row_layout(rows, cols, elem, B, ctx.tiles, row_grain=rows // B))
    else:
        add(2, row_layout(rows, cols, elem, B, max(1, min(rows, ctx.tiles // B * B if rows >= B else rows))))
    if not ctx.shaped:
        return _unique(groups[0] + groups[1] + groups[2])[:GRID_CANDIDATES]
    return _unique(groups[0][:PRODUCER_LAYOUTS] + groups[1] + groups[2])


def _unique(lays: list[Layout]) -> list[Layout]:
    out: list[Layout] = []
    for lay in lays:
        if lay not in out:
            out.append(lay)
    return out


def vector_need(lay: Layout, n: int, rows: int = 1, elem: int = 2) -> Layout:
    """A [n] vector broadcast over rows (or a [rows, n] table repeated over them): every tile holding a block
    needs that block's columns, whole."""
    if lay.replicas > 1 or not lay.contiguous_groups:
        return None
    return Layout(rows, n, elem, pr=1, pc=lay.pc, replicas=lay.pr, start=lay.start, col_stride=lay.col_stride,
                  rep_stride=lay.rstride, col_grain=lay.cgrain)


def param_need(ctx: Ctx, lay: Layout, key: str) -> Layout | None:
    """How parameter `key` must be laid out to be combined element-wise with a tensor in `lay`."""
    v = ctx.sched.params[key].value
    r, c = matrix(v)
    if lay.replicas > 1 or not lay.contiguous_groups:
        return None
    if len(v.shape) == 1 or r == 1 and lay.rows > 1:
        return vector_need(lay, c)
    if r == lay.rows:
        return dataclasses.replace(lay, elem=v.dtype.itemsize, mem=STD, row_align=1, col_align=1, col_grain=lay.cgrain)
    if lay.row_groups > 1 and r * lay.row_groups == lay.rows:  # positions [tokens, W] over [B*tokens, W]
        g = lay.row_groups
        return Layout(r, c, v.dtype.itemsize, pr=lay.pr // g, pc=lay.pc, replicas=g, start=lay.start,
                      row_stride=lay.rstride, col_stride=lay.col_stride, rep_stride=lay.pr // g * lay.rstride,
                      col_grain=lay.cgrain)
    if ctx.batch > ctx.tiles and lay.rows % r == 0 and not (lay.row_bounds() % r).any():  # whole images per block
        return vector_need(lay, c, r, v.dtype.itemsize)
    return None


def statistics_exchange(ctx: Ctx, op: str, lay: Layout) -> tuple[Buf, Buf, Internal]:
    """Cross-tile LayerNorm statistics: each column owner of a row block multicasts its F32 partial sums
    (2 per row) to the other pc - 1 owners, each of which keeps them in slot order."""
    T, pc = ctx.tiles, lay.pc
    rows = lay.row_sizes()
    st_bytes = int(8 * rows.max())
    stats = per_block(lay, st_bytes)
    recv = per_block(lay, st_bytes * (pc - 1))
    bt, so, ro = lay.block_tiles(T)[0], stats.block_offsets(T)[0], recv.block_offsets(T)[0]
    src, soff, dst, doff = [], [], [], []
    for j in range(pc):
        others = [jj for jj in range(pc) if jj != j]
        slot = np.array([j if j < jj else j - 1 for jj in others])
        src.append(bt[:, j])
        soff.append(so[:, j])
        dst.append(bt[:, others])
        doff.append(ro[:, others] + slot[None, :] * st_bytes)
    tr = block_moves(T, np.concatenate(src), np.concatenate(soff), np.concatenate(dst), np.concatenate(doff),
                     np.full(len(np.concatenate(src)), st_bytes), ctx.target.encoding)
    return Buf("statistics", stats, Life.COMPUTE), Buf("received statistics", recv, Life.COMPUTE), \
        Internal.own("statistics", tr, op, "statistics", "received statistics")


def concat_segments(ctx: Ctx, sop: SOp) -> list[tuple[tuple[int, int, int], ...]]:
    """Per input, (output row, input row, rows) segments of a concatenation on the token axis."""
    outv = sop.graph.value(sop.op.outputs[0])
    b, t = outv.shape[0], outv.shape[1]
    segs, off = [], 0
    for name in sop.op.inputs:
        n = sop.graph.value(name).shape[1]
        segs.append(tuple((i * t + off, i * n, n) for i in range(b)))
        off += n
    return segs


def elementwise(ctx: Ctx, sop: SOp) -> list[Impl]:
    T, tg = ctx.tiles, ctx.target
    kind = sop.op.kind
    outv = sop.graph.value(sop.op.outputs[0])
    rows, cols = matrix(outv)
    impls = []
    for lay in neighbour_layouts(ctx, sop, outv.dtype.itemsize):
        if kind is OpKind.LAYERNORM and lay.pc > 1 and rows > 64:
            continue  # column-split LayerNorm (cross-tile statistics) only for few-row tensors
        if kind in (OpKind.ADD, OpKind.LAYERNORM, OpKind.CONCAT) and lay.replicas > 1:
            continue
        if kind is OpKind.CONCAT:
            needs = {i: RowsInto(lay, seg) for i, seg in enumerate(concat_segments(ctx, sop))}
            f = {"kind": "concat"}
            impls.append(Impl(sop.key, lay.describe(), f, lay, needs, (), (), 0, (), 0, out_from_exchange=True))
            continue
        needs: dict[int, Layout | RowsInto | None] = {}
        uses: list[tuple[str, Layout]] = []
        ok = True
        for i, r in sop.reads:
            src_v = ctx.sched.buffers[r.key].value if r.kind == "act" else ctx.sched.params[r.key].value
            sr, sc = matrix(src_v) if r.window is None else (matrix(src_v)[0], r.window[1] - r.window[0])
            if (sr, sc) == (rows, cols):
                need = dataclasses.replace(lay, elem=src_v.dtype.itemsize, mem=ANY, col_grain=lay.cgrain)
            elif kind is OpKind.BROADCAST or sr == 1 or len(src_v.shape) == 1:
                need = vector_need(lay, sc)
            else:
                need = param_need(ctx, lay, r.key) if r.kind == "param" else None
            if need is None:
                ok = False
                break
            if r.kind == "param":
                uses.append((r.key, need.allocated()))
            else:
                needs[i] = need
        if not ok:
            continue
        mb, nb = lay.max_block_items()
        nbytes = mb * nb * max(2, outv.dtype.itemsize)
        cyc = vector.cycles(tg, COST[kind], nbytes)
        codelet = CODELET[kind]
        fields = {"kind": kind.value}
        bufs: list[Buf] = []
        internal: tuple[Internal, ...] = ()
        extra, sets = 0, 1
        if kind is OpKind.LAYERNORM:
            bufs.append(Buf("scratch (statistics)", per_block(lay, vector.layernorm_scratch(tg)), Life.COMPUTE))
            if lay.pc > 1:
                stats, recv, inter = statistics_exchange(ctx, sop.key, lay)
                bufs += [stats, recv]
                internal = (inter,)
                extra = round_cycles(tg, inter.transfers)
                sets = 2
                cyc += call_cycles(tg)  # the statistics codelet's own call

        def make(f, ps, lay=lay, needs=needs, cyc=cyc, bufs=tuple(bufs), internal=internal, extra=extra, sets=sets,
                 codelet=codelet):
            moving = patched(ctx, ps)
            desc = [descriptors(ctx, lay, codelet, moving)]
            names = (codelet.name,)
            if sets == 2:
                desc.append(descriptors(ctx, lay, vector.LAYERNORM_STATS))
                names += (vector.LAYERNORM_STATS.name,)
            lab = f"{lay.describe()}" + (f" params {f['params']}" if "params" in f else "") + home_label(f)
            cyc += descriptor_patching(ctx, lay, moving)
            return Impl(sop.key, lab, f, lay, needs, ps, bufs + tuple(desc), cyc, names, sets, internal, extra)
        impls += variants(ctx, uses, fields, make)
    return impls
