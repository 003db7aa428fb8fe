"""Attention implementations: (batch x heads) groups x query blocks x key splits, streaming or materialized.

Group (b, h), query block q and key split s run on tile b * G + q * Q + h * ns + s (Q = heads * ns,
G = nq * Q). The cell's q block (replicated over the splits) and its split of the group's k and v
(replicated over the query blocks) arrive as AMP operands: interleaved, head width and keys padded to the
AMP's 16. With one split the cell writes its F16 output block; with ns splits every cell leaves its
softmax state and a binary tree of exchanges and merges (flash-decoding) brings the group's state to the
split s = 0, which writes the output. Few-query attention (MAP probe, latent query) thus spreads a group's
keys over many tiles instead of gathering them on one. With more groups than tiles the cells wrap around the
tiles: a tile holds the operands, scratch and output of each of its groups and runs them one after another.
"""

from __future__ import annotations

from math import ceil

import numpy as np

from ..codelets import attention as att
from ..codelets import round_cycles
from ..layout import Layout
from ..layout.geometry import per_block
from ..layout.transfer import block_moves
from .common import IL, STD, descriptors, pow2_upto
from .impl import Buf, Ctx, Impl, Internal, Life
from .schedule import SOp


def cell_layouts(B: int, sq: int, sk: int, H: int, D: int, nq: int, ns: int) -> tuple[Layout, Layout, Layout]:
    """(output, q need, k/v need) of the (nq query blocks, ns key splits) implementation."""
    Q = H * ns
    G = nq * Q
    out = Layout(B * sq, H * D, 2, pr=B * nq, pc=H, row_groups=B, row_stride=Q, col_stride=ns,
                 group_stride=G if ns > 1 else 0, mem=STD)
    qn = Layout(B * sq, H * D, 2, pr=B * nq, pc=H, row_groups=B, row_stride=Q, col_stride=ns,
                group_stride=G if ns > 1 else 0, replicas=ns, rep_stride=1, mem=IL, col_align=att.PAD)
    kvn = Layout(B * sk, H * D, 2, pr=B * ns, pc=H, row_groups=B, row_stride=1, col_stride=ns, group_stride=G,
                 replicas=nq, rep_stride=Q, mem=IL, row_align=att.PAD, col_align=att.PAD)
    return out, qn, kvn


def splits(groups: int, sq: int, sk: int, tiles: int) -> list[tuple[int, int]]:
    """(query blocks, key splits) candidates: query blocks as before for one split; for each power-of-two
    split count the most query blocks that fit, balanced. More groups than tiles: one cell per group, several
    groups per tile."""
    if groups > tiles:
        return [(1, 1)]
    out = []
    top = min(sq, tiles // groups)
    nqs = sorted({n for n in pow2_upto(top)} | {top} | {ceil(sq / ceil(sq / top))})
    out += [(n, 1) for n in nqs if n == top or n >= max(1, top // 8)]
    ns = 2
    while ns <= min(att.MAX_SPLITS, sk // att.PAD) and groups * ns <= tiles:
        t = min(sq, tiles // (groups * ns))
        out += sorted({(t, ns), (ceil(sq / ceil(sq / t)), ns)})
        ns *= 2
    return out


def merge_tree(ctx: Ctx, op: str, state: Layout, recv: Layout, ns: int) -> tuple[Internal, ...]:
    """Round t: split s (s mod 2^(t+1) = 2^t) sends its state, one run, to split s - 2^t, which merges it."""
    T = ctx.tiles
    st, so = state.block_tiles(T), state.block_offsets(T)
    rt, ro = recv.block_tiles(T), recv.block_offsets(T)
    nb = state.block_bytes().ravel()
    out = []
    t = 0
    while (1 << t) < ns:
        step = 1 << t
        senders = [s for s in range(ns) if s % (2 * step) == step]
        tr = block_moves(T, np.concatenate([st[s].ravel() for s in senders]),
                         np.concatenate([so[s].ravel() for s in senders]),
                         np.concatenate([rt[(s - step) // 2].ravel() for s in senders]),
                         np.concatenate([ro[(s - step) // 2].ravel() for s in senders]),
                         np.tile(nb, len(senders)), ctx.target.encoding)
        out.append(Internal.own(f"merge round {t + 1}", tr, op, "softmax state", "received softmax state"))
        t += 1
    return tuple(out)


def attention(ctx: Ctx, sop: SOp) -> list[Impl]:
    T, B, tg = ctx.tiles, ctx.batch, ctx.target
    a = sop.op.attrs
    qv = sop.graph.value(sop.op.inputs[0])
    kv = sop.graph.value(sop.op.inputs[1])
    sq, sk, H, D = qv.shape[1], kv.shape[1], a.heads, a.head_dim
    groups = B * H
    impls = []
    for nq, ns in splits(groups, sq, sk, T):
        out, qn, kvn = cell_layouts(B, sq, sk, H, D, nq, ns)
        qb, kb = ceil(sq / nq), ceil(sk / ns)
        per_tile = ceil(groups * nq * ns / T)  # cells a tile runs one after another (> 1: more groups than tiles)
        cells = Layout(out.rows, out.cols, 2, pr=out.pr, pc=H, row_groups=B, row_stride=out.rstride,
                       col_stride=ns, group_stride=out.group_stride, replicas=ns, rep_stride=1)
        internal: tuple[Internal, ...] = ()
        state_bufs: tuple[Buf, ...] = ()
        merge_cyc = 0
        if ns > 1:
            state = per_block(cells, att.state_bytes(qb, D))
            recv = per_block(Layout(out.rows, out.cols, 2, pr=out.pr, pc=H, row_groups=B, row_stride=out.rstride,
                                    col_stride=ns, group_stride=out.group_stride, replicas=ns // 2,
                                    rep_stride=2), att.state_bytes(qb, D))
            internal = merge_tree(ctx, sop.key, state, recv, ns)
            state_bufs = (Buf("softmax state", state, Life.COMPUTE), Buf("received softmax state", recv, Life.COMPUTE),
                          *([descriptors(ctx, recv, att.MERGE)] * len(internal)))
            merge_cyc = sum(round_cycles(tg, r.transfers) for r in internal)
        for streaming in (True, False):
            if not streaming and kb <= att.STREAM_PANEL:
                continue
            il, std = att.scratch_bytes(qb, kb, D, streaming)
            codelet = att.STREAMING if streaming else att.MATERIALIZED
            bufs = (Buf("scratch (probabilities, accumulator)", per_block(cells, il, IL), Life.COMPUTE),
                    Buf("scratch (scores, softmax state)", per_block(cells, std, STD), Life.COMPUTE),
                    descriptors(ctx, cells, codelet), *state_bufs)
            f = {"kind": "attention", "query_blocks": nq, "key_splits": ns,
                 "mode": "streaming" if streaming else "materialized"}
            names = (codelet.name,) + ((att.MERGE.name,) if ns > 1 else ())
            impls.append(Impl(sop.key, f"{f['mode']} {B}x{H} groups x {nq} query blocks x {ns} key splits", f, out,
                              {0: qn, 1: kvn, 2: kvn}, (), bufs,
                              per_tile * att.cycles(tg, qb, kb, D) + len(internal) * att.merge_cycles(tg, qb, D), names,
                              1 + len(internal), internal, merge_cyc))
    return impls
