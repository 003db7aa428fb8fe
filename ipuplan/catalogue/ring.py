"""Ring attention: a (batch, head) group's keys and values rotate among its query tiles instead of being
replicated to every one of them.

The group's nq query blocks sit as in streaming attention with one key split (cell (b, q, h) on tile
b * nq * H + q * H + h); its keys and values are cut into r panels, r dividing nq (r in 2, 4, 8; the compact
catalogue also 16 and every query cell of the group), and query cell q holds panel
q mod r at first (the panels replicated over nq / r rings of r cells). At step t the cell runs the streaming
kernel over panel (q + t) mod r into a softmax state and, after the first step, merges it into its running
state (the flash-decoding merge); the last merge writes the F16 output. Between steps every cell sends its k
and v panels to the previous cell of its ring, one run each (one exchange superstep per shift). Panels are
stored at the largest panel's rows, so they alternate between the operands' own exchanged copies (free after
their first step) and one panel buffer each. In the compact catalogue the state is carried instead
(codelets.attention.CARRY): each step's streaming kernel continues the running state over its panel, as if the
panel's keys followed the previous ones in one stream; no step state, no merge.
"""

from __future__ import annotations

from math import ceil

import numpy as np

from ..codelets import attention as att
from ..codelets import MAX_ROTATION, MAX_STEPS_COMPACT, round_cycles
from ..layout import Layout
from ..layout.geometry import per_block
from ..layout.transfer import block_moves
from .common import IL, STD, descriptors, holder
from .impl import Buf, Ctx, Impl, Internal, Life, Move
from .schedule import SOp

RINGS = (2, 4, MAX_ROTATION, MAX_STEPS_COMPACT)  # panels per ring, up to the catalogue's Steps.panels


def panel_layout(B: int, sk: int, H: int, D: int, nq: int, r: int) -> Layout:
    """k or v as the ring's initial panels: panel s of image b, head h on query cell s (+ r per replica)."""
    return Layout(B * sk, H * D, 2, pr=B * r, pc=H, row_groups=B, row_stride=H, col_stride=1, group_stride=nq * H,
                  replicas=nq // r, rep_stride=r * H, mem=IL, row_align=att.padded(ceil(sk / r)), col_align=att.PAD)


def shifts(ctx: Ctx, op: str, ends: tuple[str, str], kv: Layout, cells: Layout, nq: int, r: int) -> tuple[Internal, ...]:
    """Before step t cell (b, q, h) receives k and v panel (q + t) mod r from cell q + 1 of its ring of r."""
    T = ctx.tiles
    B, H = cells.row_groups, cells.pc
    b, q, h = (v.ravel() for v in np.meshgrid(np.arange(B), np.arange(nq), np.arange(H), indexing="ij"))
    nxt = q - q % r + (q % r + 1) % r
    ct = cells.block_tiles(T)[0]
    dst, src = ct[b * nq + q, h], ct[b * nq + nxt, h]
    nb = kv.row_align * kv.pitches()[h]
    slot = per_block(cells, int(kv.block_bytes().max()), IL).block_offsets(T)[0, b * nq + q, h]
    off = kv.block_offsets(T)

    def offsets(t, qq):
        return slot if t % 2 else off[qq // r, b * r + qq % r, h]
    out = []
    for t in range(1, r):
        moves = tuple(Move(block_moves(T, src, offsets(t - 1, nxt), dst, offsets(t, q), nb, ctx.target.encoding),
                           holder(t - 1, end, f"{op} ({f} panels)"), holder(t, end, f"{op} ({f} panels)"))
                      for f, end in zip("kv", ends))
        out.append(Internal(f"shift {t}", moves))
    return tuple(out)


def ring(ctx: Ctx, sop: SOp) -> list[Impl]:
    """Ring implementations of an attention whose k and v are column windows of their buffer (always an
    exchanged copy of its own), one group per cell column, at most one cell per tile."""
    T, B, tg = ctx.tiles, ctx.batch, ctx.target
    a = sop.op.attrs
    reads = dict(sop.reads)
    if any(reads[i].kind != "act" or reads[i].window is None for i in (1, 2)):
        return []
    sq, sk = sop.graph.value(sop.op.inputs[0]).shape[1], sop.graph.value(sop.op.inputs[1]).shape[1]
    H, D = a.heads, a.head_dim
    top = min(sq, T // (B * H))
    ends = tuple(f"{reads[i].key} -> {sop.key}[{i}] (exchanged copy)" for i in (1, 2))
    impls = []
    # the compact catalogue also rings all of a group's query cells, one panel each, when they are fewer than
    # its most panels (11 query cells of a SigLIP group at b8)
    rings = sorted({r for r in RINGS if r <= ctx.steps.panels} | ({top} if ctx.compact and 2 <= top <= ctx.steps.panels
                                                                      else set()))
    for r in rings:
        if top < r or sk < r * att.PAD:
            continue
        for nq in sorted({top - top % r, r}):
            out = Layout(B * sq, H * D, 2, pr=B * nq, pc=H, row_groups=B, row_stride=H, col_stride=1, mem=STD)
            qn = Layout(B * sq, H * D, 2, pr=B * nq, pc=H, row_groups=B, row_stride=H, col_stride=1, mem=IL,
                        col_align=att.PAD)
            kv = panel_layout(B, sk, H, D, nq, r)
            qb, kb = ceil(sq / nq), ceil(sk / r)
            internal = shifts(ctx, sop.key, ends, kv, out, nq, r)
            il, std = att.scratch_bytes(qb, kb, D, True)
            panel = int(kv.block_bytes().max())
            carry = ctx.compact  # the streaming kernel continues the running state: no step state, no merge
            state = Buf("softmax state", per_block(out, att.state_bytes(qb, D)), Life.COMPUTE)
            bufs = (Buf("scratch (probabilities, accumulator)", per_block(out, il, IL), Life.COMPUTE),
                    Buf("scratch (scores, softmax state)", per_block(out, std, STD), Life.COMPUTE),
                    Buf("k panels", per_block(out, panel, IL), Life.COMPUTE),
                    Buf("v panels", per_block(out, panel, IL), Life.COMPUTE), state)
            if carry:
                bufs += (*[descriptors(ctx, out, att.CARRY)] * r,)
                codelets, sets = (att.CARRY.name,), r
            else:
                bufs += (Buf("step softmax state", per_block(out, att.state_bytes(qb, D)), Life.COMPUTE),
                         *[descriptors(ctx, out, att.STREAMING)] * r, *[descriptors(ctx, out, att.MERGE)] * (r - 1))
                codelets, sets = (att.STREAMING.name, att.MERGE.name), 2 * r - 1
            f = {"kind": "attention", "query_blocks": nq, "key_splits": 1, "mode": "streaming", "ring": r} | \
                ({"carry": True} if carry else {})
            # carrying the state costs what the merge it replaces costs (its load and store are not measured)
            cyc = r * att.cycles(tg, qb, kb, D) + (r - 1) * att.merge_cycles(tg, qb, D)
            impls.append(Impl(sop.key, f"ring {B}x{H} groups x {nq} query blocks, {r} key panels"
                              + (", state carried" if carry else ""), f, out,
                              {0: qn, 1: kv, 2: kv}, (), bufs, cyc, codelets, sets,
                              internal, sum(round_cycles(tg, s.transfers) for s in internal)))
    return impls
