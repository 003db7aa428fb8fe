"""The checker's reading of a ring attention choice (fields query_blocks, key_splits 1, mode streaming, ring):
the q blocks, the k and v panels they arrive in, the running and step softmax states, the panel buffers and
the r - 1 shift exchanges, derived here from the op and the fields alone.

Query cell (b, q, h) sits on tile b * nq * H + q * H + h; keys and values are cut into r balanced panels stored
at the largest panel's rows padded to 16, panel s of (b, h) first on cell s of every ring of r query cells. A
shift sends every cell's k and v panels to the previous cell of its ring, one run of the stored rows each; the
panel for step t sits in the operand's exchanged copy when t is even, else in the op's panel buffer. `carry: true`
(compact catalogue): every step continues the running state, no step state and no merges."""

from __future__ import annotations

from math import ceil

import numpy as np

from ..codelets import attention as att
from .derived import Ctx, Derived
from .exchange import block_moves
from .geometry import L, block_bytes, block_tiles, per_block, pitches
from .validate import Invalid, canonical, integer, one_of



def ring(cx: Ctx, o, ch: dict, path: str) -> Derived:
    """Derived buffers of the ring choice `ch` of attention `o` (raises Invalid naming the bad field)."""
    T, B = cx.T, cx.batch
    a = o.op.attrs
    qv, kv = o.graph.value(o.op.inputs[0]), o.graph.value(o.op.inputs[1])
    sq, sk, H, D = qv.shape[1], kv.shape[1], a.heads, a.head_dim
    if any(o.reads[i][1] != "act" or o.reads[i][3] is None for i in (1, 2)):
        raise Invalid(f"{path}.ring: ring attention needs k and v read as column windows of an activation")
    if not cx.steps.panels:
        raise Invalid(f"{path}.ring: the plan's catalogue offers no ring attention (rotating, compact do)")
    r = one_of(ch, "ring", path, tuple(range(2, cx.steps.panels + 1)))
    nq = integer(ch, "query_blocks", path, r, sq)
    one_of(ch, "key_splits", path, (1,))
    one_of(ch, "mode", path, ("streaming",))
    if nq % r or B * H * nq > T or sk < r * att.PAD:
        raise Invalid(f"{path}: {nq} query blocks in rings of {r} panels of {B}x{H} groups do not fit {T} tiles "
                      f"and {sk} keys (r must divide the query blocks)")
    out = canonical(L(B * sq, H * D, 2, B * nq, H, row_stride=H, col_stride=1, row_groups=B))
    d = Derived(out)
    d.needs[0] = canonical(L(B * sq, H * D, 2, B * nq, H, row_stride=H, col_stride=1, row_groups=B, mem="il",
                             col_align=att.PAD))
    rows = ceil(ceil(sk / r) / att.PAD) * att.PAD
    kvl = canonical(L(B * sk, H * D, 2, B * r, H, replicas=nq // r, row_stride=H, col_stride=1, rep_stride=r * H,
                      row_groups=B, group_stride=nq * H, mem="il", row_align=rows, col_align=att.PAD))
    d.needs[1] = d.needs[2] = kvl
    qb, kb = ceil(sq / nq), ceil(sk / r)
    il, std = att.scratch_bytes(qb, kb, D, True)
    panel = int(block_bytes(kvl).max())
    d.bufs += [("scratch (probabilities, accumulator)", per_block(out, il, "il"), "compute"),
               ("scratch (scores, softmax state)", per_block(out, std), "compute"),
               ("k panels", per_block(out, panel, "il"), "compute"), ("v panels", per_block(out, panel, "il"), "compute"),
               ("softmax state", per_block(out, att.state_bytes(qb, D)), "compute")]
    carry = "carry" in ch and one_of(ch, "carry", path, (True,))
    if carry and not cx.compact:
        raise Invalid(f"{path}.carry: a ring carrying its softmax state needs the compact catalogue (its code links "
                      f"{att.CARRY.name})")
    if carry:
        d.bufs += [cx.descriptors(out, att.CARRY, 0)] * r
    else:
        d.bufs.append(("step softmax state", per_block(out, att.state_bytes(qb, D)), "compute"))
        d.bufs += [cx.descriptors(out, att.STREAMING, 0)] * r + [cx.descriptors(out, att.MERGE, 0)] * (r - 1)
    tiles = block_tiles(out, T)[0]  # [B * nq, H]
    cell = np.arange(B * nq)
    q = cell % nq
    prev = cell - q + (q - q % r + (q % r + 1) % r)  # the next cell of the ring: it sends to this one
    run = np.broadcast_to((kvl["row_align"] * pitches(kvl))[None, :], tiles.shape)
    own = {f: f"{o.reads[i][2]} -> {o.key}[{i}] (exchanged copy)" for f, i in (("k", 1), ("v", 2))}
    for t in range(1, r):
        d.rounds.append([(block_moves(T, cx.target, tiles[prev].ravel(), tiles.ravel(), run.ravel()),
                          own[f] if (t - 1) % 2 == 0 else f"{o.key} ({f} panels)",
                          own[f] if t % 2 == 0 else f"{o.key} ({f} panels)") for f in "kv"])
    return d
