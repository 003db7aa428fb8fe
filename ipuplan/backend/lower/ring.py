"""Lowering of ring attention: per key panel a compute set of streaming attention vertices writing softmax
states and, after the first, a compute set of merges into the running state (the last writes the output) —
or, carrying the state, one compute set per panel continuing the running state (the last writes the output) —
with the shift exchanges between steps (catalogue/ring.py: which panel every cell holds at every step, and where)."""

from __future__ import annotations

import struct

import numpy as np

from ...codelets import attention as att
from .context import Ctx, VertexBuilder


def ring_attention(cx: Ctx, sop, im) -> list:
    T, op = cx.T, sop.key
    a = sop.op.attrs
    B, H, D = cx.p.batch, a.heads, a.head_dim
    nq, r = im.fields["query_blocks"], im.fields["ring"]
    q, k, v = (cx.operand(op, i).blocks(T) for i in (0, 1, 2))
    panels = {"k": cx.own(op, "k panels").blocks(T), "v": cx.own(op, "v panels").blocks(T)}
    carry = bool(im.fields.get("carry"))  # each step continues the running state: no step state, no merge
    state = cx.own(op, "softmax state").blocks(T)
    step_state = None if carry else cx.own(op, "step softmax state").blocks(T)
    out = cx.own(op, "output").blocks(T)
    b, qq, h = (x.ravel() for x in np.meshgrid(np.arange(B), np.arange(nq), np.arange(H), indexing="ij"))
    i = b * nq + qq
    rows = q.rows[0, i, h]
    sb = np.full_like(rows, (D + 2) * 4)
    st = dict(rows=rows, row_bytes=sb, pitch=sb)
    held = (qq // r, b * r + qq % r, h)  # the operand block a cell holds from the start
    items = []
    for t in range(r):
        s = (qq + t) % r
        last = t == r - 1
        at = VertexBuilder(att.CARRY if carry else att.STREAMING, len(b))
        at.bind("q", q, (0, i, h))
        for f, blocks in (("k", k), ("v", v)):
            block = (0, b * r + s, h)
            geometry = dict(rows=blocks.rows[block], row_bytes=blocks.row_bytes[block], pitch=blocks.pitch[block])
            at.bind(f, panels[f] if t % 2 else blocks, (0, i, h) if t % 2 else held, **geometry)
        at.bind("scratch", cx.own(op, "scratch (probabilities, accumulator)").blocks(T), (0, i, h))
        at.bind("state", cx.own(op, "scratch (scores, softmax state)").blocks(T), (0, i, h))
        at.params[:, 0] = struct.unpack("<i", struct.pack("<f", a.scale))[0]
        if carry:
            at.bind("carry", state, (0, i, h), **st)
            if last:
                at.bind("out", out, (0, i, h))
            at.params[:, 1], at.params[:, 2], at.params[:, 3], at.params[:, 4] = 1, int(t == 0), att.STREAM_PANEL, \
                int(last)
        else:
            at.bind("out", step_state if t else state, (0, i, h), **st)
            at.params[:, 1], at.params[:, 2], at.params[:, 3] = 1, 1, att.STREAM_PANEL
        if t:
            items.append(("internal", t - 1))
        items.append(("compute", f"attention step {t + 1} of {r}", [at.build()]))
        if not t or carry:
            continue
        m = VertexBuilder(att.MERGE, len(b))
        m.bind("state", state, (0, i, h), **st)
        m.bind("received", step_state, (0, i, h), **st)
        m.bind("out", out if last else state, (0, i, h), **({} if last else st))
        m.params[:, 0], m.params[:, 1] = int(last), D
        items.append(("compute", f"merge step {t + 1} of {r}", [m.build()]))
    return items
