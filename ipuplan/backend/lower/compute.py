"""Per-op-kind lowering rules: an op's chosen implementation becomes its compute sets (codelet vertices with
fields bound to block addresses) interleaved with the exchanges inside its compute step (reduction rounds,
statistics, softmax merges). One entry per op kind in RULES.

A rule returns a list of items in execution order: ("compute", name, [Vertices]) or ("internal", k), the
k-th of the implementation's internal exchanges."""

from __future__ import annotations

import struct

import numpy as np

import ipuplan.codelets as cl
from ...codelets import attention as att
from ...codelets import gemm, vector
from ...codelets.base import DTYPE_CODE
from ...ir.graph import OpKind
from .buffers import Blocks
from .context import Ctx, VertexBuilder
from .ring import ring_attention
from .rotating import rotating_matmul


def _f32_bits(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", x))[0]


def _grid(*sizes):
    return [a.ravel() for a in np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij")]


def _match(inp, out_lay, I, J):
    """Index of the block of input layout `inp` that an output block (I, J) combines with."""
    if inp.pr == 1 and inp.replicas == out_lay.pr and inp.rows < out_lay.rows:
        return (I, 0, J)  # a vector or a positional table, whole beside each row block
    if inp.replicas > 1 and inp.rows * inp.replicas == out_lay.rows:  # positions, per image
        per = out_lay.pr // inp.replicas
        return (I // per, I % per, J)
    return (0, I, J)


def _tree(n: int):
    """(round, receivers, step) of a binary reduction over n slots: slot r receives from r + step."""
    t = 0
    while (1 << t) < n:
        step = 1 << t
        yield t, [r for r in range(0, n, 2 * step) if r + step < n], step
        t += 1


def matmul(cx: Ctx, sop, im) -> list:
    items = rotating_matmul(cx, sop, im) if "rotate" in im.fields else _grid_matmul(cx, sop, im)
    if any(b.role == "RoPE tables" for b in im.bufs):
        items.append(("compute", "rope", [_rope(cx, sop, im, cx.own(sop.key, "output").blocks(cx.T))]))
    return items


def _grid_matmul(cx: Ctx, sop, im) -> list:
    T, op = cx.T, sop.key
    pm, pn, pk = im.fields["pm"], im.fields["pn"], im.fields["pk"]
    a = sop.op.attrs
    fp8 = sop.graph.value(sop.op.inputs[0]).dtype.is_fp8
    x, w = cx.operand(op, 0).blocks(T), cx.operand(op, 1).blocks(T)
    bias = cx.operand(op, 2).blocks(T) if len(sop.reads) > 2 else None
    out = cx.own(op, "output").blocks(T)
    I, J, R = _grid(pm, pn, pk)
    g = VertexBuilder(gemm.GEMM[fp8], len(I))
    g.bind("x", x, (J, I, R))
    g.bind("w", w, (I, R, J))
    g.params[:, 0] = a.x_scale + a.w_scale
    g.params[:, 2] = DTYPE_CODE[sop.graph.value(sop.op.inputs[0]).dtype.short]
    g.params[:, 3] = DTYPE_CODE[sop.graph.value(sop.op.inputs[1]).dtype.short]
    items = []
    if pk == 1:
        g.bind("out", out, (0, I, J))
        if bias is not None:
            g.bind("bias", bias, (I, 0, J))
        items.append(("compute", "gemm", [g.build()]))
    else:
        part, recv = cx.own(op, "partials").blocks(T), cx.own(op, "received partial").blocks(T)
        g.bind("out", part, (R, I, J))
        g.params[:, 1] = 1  # writes F32 partials
        items.append(("compute", "gemm", [g.build()]))
        for t, recvs, step in _tree(pk):
            i, j, r = [v.ravel() for v in np.meshgrid(np.arange(pm), np.arange(pn), np.array(recvs), indexing="ij")]
            v = VertexBuilder(gemm.REDUCE, len(i))
            v.bind("partials", part, (r, i, j))
            v.bind("received", recv, (r // 2, i, j))
            last = step * 2 >= pk
            if last:
                v.bind("out", out, (0, i, j))
                if bias is not None:
                    v.bind("bias", bias, (i, 0, j))
            else:
                v.bind("out", part, (r, i, j))
            v.params[:, 0] = int(last)
            v.params[:, 1] = a.x_scale + a.w_scale
            items += [("internal", t), ("compute", f"reduce round {t + 1}", [v.build()])]
    return items


def _rope(cx: Ctx, sop, im, out: Blocks):
    """RoPE on the q and k columns of every output block; the block's sin table [rows, head_dim] F32 (head_dim / 2
    columns of unique angles when the choice says so) is followed by its cos table."""
    from ...catalogue.impl import Ctx as CatalogueCtx
    from ...catalogue.matmul import rope_consumer
    T, lay = cx.T, im.out
    cop, wins = rope_consumer(CatalogueCtx(cx.p.target, cx.p.sched, cx.p.batch), sop)
    unique = im.fields.get("rope") == "unique"
    D = cop.op.attrs.head_dim // 2 if unique else cop.op.attrs.head_dim
    tab = cx.own(sop.key, "RoPE tables").blocks(T)
    I, J = _grid(lay.pr, lay.pc)
    rows = out.rows[0, I, J]
    v = VertexBuilder(vector.ROPE_UNIQUE if unique else vector.ROPE, len(I))
    v.bind("x", out, (0, I, J))
    kw = dict(rows=rows, row_bytes=np.full_like(rows, D * 4), pitch=np.full_like(rows, D * 4))
    v.bind("sin", tab, (0, I, J), **kw)
    cos = Blocks(tab.tile, tab.addr + out.rows * D * 4, tab.rows, tab.pitch, tab.row_bytes, tab.stride)
    v.bind("cos", cos, (0, I, J), **kw)
    v.params[:, 0] = lay.row_bounds()[I]
    v.params[:, 1] = sop.graph.value(cop.op.inputs[1]).shape[1]
    v.params[:, 2] = cop.op.attrs.rope_prefix
    v.params[:, 3] = lay.col_bounds()[J]
    for k, (c0, c1) in enumerate(wins[:2]):
        v.params[:, 4 + 2 * k], v.params[:, 5 + 2 * k] = c0, c1
    return v.build()


def layernorm(cx: Ctx, sop, im) -> list:
    T, op, lay = cx.T, sop.key, im.out
    I, J = _grid(lay.pr, lay.pc)
    x = cx.operand(op, 0)
    out = cx.own(op, "output").blocks(T)
    items = []
    v = VertexBuilder(vector.LAYERNORM, len(I))
    v.bind("x", x.blocks(T), _match(x.buf.layout, lay, I, J))
    for f, idx in (("gamma", 1), ("beta", 2)):
        o = cx.operand(op, idx)
        v.bind(f, o.blocks(T), _match(o.buf.layout, lay, I, J))
    v.bind("out", out, (0, I, J))
    v.bind("scratch", cx.own(op, "scratch (statistics)").blocks(T), (0, I, J))
    v.params[:, 0] = _f32_bits(sop.op.attrs.eps)
    v.params[:, 1] = lay.cols
    v.params[:, 2] = lay.pc
    v.params[:, 3] = J
    if lay.pc > 1:
        part = cx.own(op, "statistics").blocks(T)
        s = VertexBuilder(vector.LAYERNORM_STATS, len(I))
        s.bind("x", x.blocks(T), _match(x.buf.layout, lay, I, J))
        s.bind("partial", part, (0, I, J))
        items += [("compute", "statistics", [s.build()]), ("internal", 0)]
        v.bind("partial", part, (0, I, J))
        v.bind("received", cx.own(op, "received statistics").blocks(T), (0, I, J))
    items.append(("compute", "layernorm", [v.build()]))
    return items


def unary(cx: Ctx, sop, im) -> list:
    """GELU, casts and broadcasts: one vertex per output block, reading the matching input block."""
    T, op, lay = cx.T, sop.key, im.out
    codelet = {OpKind.GELU: vector.GELU, OpKind.CAST: vector.CAST, OpKind.BROADCAST: vector.COPY}[sop.op.kind]
    I, J = _grid(lay.pr, lay.pc)
    x = cx.operand(op, 0)
    v = VertexBuilder(codelet, len(I) * lay.replicas)
    rep = np.repeat(np.arange(lay.replicas), len(I))
    I, J = np.tile(I, lay.replicas), np.tile(J, lay.replicas)
    src, dst = codelet.fields
    v.bind(src, x.blocks(T), _match(x.buf.layout, lay, I, J) if lay.replicas == 1 else (rep, I, J))
    v.bind(dst, cx.own(op, "output").blocks(T), (rep, I, J))
    if sop.op.kind is OpKind.CAST:
        ov, iv = sop.graph.value(sop.op.outputs[0]), sop.graph.value(sop.op.inputs[0])
        v.params[:, 0] = sop.op.attrs.scale
        v.params[:, 1], v.params[:, 2] = DTYPE_CODE[ov.dtype.short], DTYPE_CODE[iv.dtype.short]
    if sop.op.kind is OpKind.BROADCAST:  # Copy params: bytes per row, the block's first output row
        v.params[:, 0] = (lay.col_sizes() * lay.elem)[J]
        v.params[:, 1] = lay.row_bounds()[I]
    if sop.op.kind is OpKind.GELU:
        v.params[:, 0] = int(sop.op.attrs.approximate)
    return [("compute", sop.op.kind.value, [v.build()])]


def add(cx: Ctx, sop, im) -> list:
    T, op, lay = cx.T, sop.key, im.out
    I, J = _grid(lay.pr, lay.pc)
    v = VertexBuilder(vector.ADD, len(I))
    for f, idx in (("a", 0), ("b", 1)):
        o = cx.operand(op, idx)
        v.bind(f, o.blocks(T), _match(o.buf.layout, lay, I, J))
    v.bind("out", cx.own(op, "output").blocks(T), (0, I, J))
    return [("compute", "add", [v.build()])]


def attention(cx: Ctx, sop, im) -> list:
    if "ring" in im.fields:
        return ring_attention(cx, sop, im)
    T, op = cx.T, sop.key
    a = sop.op.attrs
    B, H = cx.p.batch, a.heads
    nq, ns = im.fields["query_blocks"], im.fields["key_splits"]
    streaming = im.fields["mode"] == "streaming"
    codelet = att.STREAMING if streaming else att.MATERIALIZED
    b, q, h, s = _grid(B, nq, H, ns)
    i = b * nq + q
    v = VertexBuilder(codelet, len(b))
    v.bind("q", cx.operand(op, 0).blocks(T), (s, i, h))
    v.bind("k", cx.operand(op, 1).blocks(T), (q, b * ns + s, h))
    v.bind("v", cx.operand(op, 2).blocks(T), (q, b * ns + s, h))
    v.bind("scratch", cx.own(op, "scratch (probabilities, accumulator)").blocks(T), (s, i, h))
    v.bind("state", cx.own(op, "scratch (scores, softmax state)").blocks(T), (s, i, h))
    out = cx.own(op, "output").blocks(T)
    v.params[:, 0] = _f32_bits(a.scale)
    v.params[:, 1] = int(streaming)
    v.params[:, 2] = int(ns > 1)
    v.params[:, 3] = att.STREAM_PANEL
    if ns == 1:
        v.bind("out", out, (0, i, h))
        return [("compute", "attention", [v.build()])]
    state = cx.own(op, "softmax state").blocks(T)
    recv = cx.own(op, "received softmax state").blocks(T)
    D = a.head_dim
    qrows = cx.operand(op, 0).blocks(T).rows[s, i, h]
    sb = np.full_like(qrows, (D + 2) * 4)
    v.bind("out", state, (s, i, h), rows=qrows, row_bytes=sb, pitch=sb)
    items = [("compute", "attention", [v.build()])]
    for t, recvs, step in _tree(ns):
        bb, qq, hh, ss = _grid(B, nq, H, len(recvs))
        ss = np.asarray(recvs)[ss]
        ii = bb * nq + qq
        m = VertexBuilder(att.MERGE, len(bb))
        rows = out.rows[0, ii, hh]
        sb = np.full_like(rows, (D + 2) * 4)
        m.bind("state", state, (ss, ii, hh), rows=rows, row_bytes=sb, pitch=sb)
        m.bind("received", recv, (ss // 2, ii, hh), rows=rows, row_bytes=sb, pitch=sb)
        last = step * 2 >= ns
        if last:
            m.bind("out", out, (0, ii, hh))
        else:
            m.bind("out", state, (ss, ii, hh), rows=rows, row_bytes=sb, pitch=sb)
        m.params[:, 0] = int(last)
        m.params[:, 1] = D
        items += [("internal", t), ("compute", f"merge round {t + 1}", [m.build()])]
    return items


def concat(cx: Ctx, sop, im) -> list:
    return []  # the exchange writes the inputs straight into the output's rows


RULES = {OpKind.MATMUL: matmul, OpKind.LAYERNORM: layernorm, OpKind.ADD: add, OpKind.GELU: unary,
         OpKind.CAST: unary, OpKind.BROADCAST: unary, OpKind.ATTENTION: attention, OpKind.CONCAT: concat}
assert set(RULES) == set(cl.PROGRAM), "every op kind the program budgets has a lowering rule"
