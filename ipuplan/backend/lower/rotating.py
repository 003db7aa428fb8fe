"""Lowering of a rotating matmul: r compute sets of accumulating AMP vertices, one per cell and step (in the
in-place variant each step's vertex reads and writes the running sum in the output), with the r - 1 shift
exchanges between them (catalogue/rotating.py: which shard every cell holds at every step, and where)."""

from __future__ import annotations

import numpy as np

from ...codelets import gemm
from ...codelets.base import DTYPE_CODE
from .context import Ctx, VertexBuilder


def rotating_matmul(cx: Ctx, sop, im) -> list:
    T, op = cx.T, sop.key
    pm, pn, r = im.fields["pm"], im.fields["pn"], im.fields["rotate"]
    a = sop.op.attrs
    xv, wv = (sop.graph.value(sop.op.inputs[i]) for i in (0, 1))
    x, w = cx.operand(op, 0).blocks(T), cx.operand(op, 1).blocks(T)
    shards = {"x": cx.own(op, "x shards").blocks(T), "w": cx.own(op, "w shards").blocks(T)}
    in_place = im.fields.get("accumulate") == "out"  # the running F16 sum kept in the output buffer
    acc = None if in_place else cx.own(op, "accumulator").blocks(T)
    out = cx.own(op, "output").blocks(T)
    codelet = gemm.ACCUMULATE_OUT if in_place else gemm.ACCUMULATE[xv.dtype.is_fp8]
    bias = cx.operand(op, 2).blocks(T) if len(sop.reads) > 2 else None
    i, j = (v.ravel() for v in np.meshgrid(np.arange(pm), np.arange(pn), indexing="ij"))
    q0 = (i + j) % r
    held = {"x": (j // r, i, q0), "w": (i // r, q0, j)}  # the operand block a cell holds from the start
    items = []
    for t in range(r):
        q = (i + j + t) % r
        v = VertexBuilder(codelet, len(i))
        for f, blocks, block in (("x", x, (0, i, q)), ("w", w, (0, q, j))):
            geometry = dict(rows=blocks.rows[block], row_bytes=blocks.row_bytes[block], pitch=blocks.pitch[block])
            if t % 2:
                v.bind(f, shards[f], (0, i, j), **geometry)
            else:
                v.bind(f, blocks, held[f], **geometry)
        last = t == r - 1
        v.bind("out" if in_place else "acc", out if in_place else acc, (0, i, j))
        if last and not in_place:
            v.bind("out", out, (0, i, j))
        if last and bias is not None:
            v.bind("bias", bias, (i, 0, j))
        v.params[:, 0] = a.x_scale + a.w_scale
        v.params[:, 1], v.params[:, 2] = int(t == 0), int(last)
        v.params[:, 3], v.params[:, 4] = DTYPE_CODE[xv.dtype.short], DTYPE_CODE[wv.dtype.short]
        if t:
            items.append(("internal", t - 1))
        items.append(("compute", f"gemm step {t + 1} of {r}", [v.build()]))
    return items
