"""Matmul implementations: (pm, pn, pk) grids over tiles, weights resident or staged, k-split reduction.

Grid cell (i, j, r) runs on tile start + i * pn * pk + j * pk + r: x block (i, r) replicated over j,
w block (r, j) replicated over i, both AMP operands (interleaved, padded to the AMP's blocks). With pk = 1
the AMP writes the F16 output (bias and any RoPE rotation in its epilogue); with pk > 1 every cell writes
F32 partials, the cells r >= 1 send theirs to the cell r = 0 of their output block, which sums them.
"""

from __future__ import annotations

import dataclasses
from math import ceil

import numpy as np

from ..codelets import attention as att
from ..codelets import round_cycles, gemm, vector
from ..ir.graph import OpKind
from ..layout import Layout
from ..layout.geometry import grain, per_block
from ..layout.transfer import block_moves
from .common import IL, STD, descriptor_patching, descriptors, home_label, patched, pow2_upto, row_layout, variants
from .impl import Buf, Ctx, Impl, Internal, Life
from .schedule import SOp, matrix


def grid_cost(ctx: Ctx, m: int, k: int, n: int, fp8: bool, pm: int, pn: int, pk: int) -> tuple[int, int]:
    """The grid catalogue's screen: (modeled cycles, per-tile bytes) of one grid, with the operands' bytes at the
    exchange rate (no pieces); both operands padded as the AMP needs them, the output or, with pk > 1, the F32
    partial and one received partial."""
    xe = we = 1 if fp8 else 2
    km = gemm.k_multiple(fp8)
    mb, kb, nb = ceil(m / pm), ceil(k / pk), ceil(n / pn)
    kp, np_ = ceil(kb / km) * km, ceil(nb / gemm.N_MULTIPLE) * gemm.N_MULTIPLE
    mem = mb * kp * xe + kp * np_ * we + (mb * nb * 8 if pk > 1 else mb * nb * 2)
    cyc = gemm.cycles(ctx.target, mb, kb, nb, fp8) + (mb * kb * xe + kb * nb * we) // ctx.target.exchange_bytes_per_cycle
    if pk > 1:
        cyc += gemm.reduce_cycles(ctx.target, mb, nb, pk) + tree_rounds(pk) * mb * nb * 4 // 4
    return cyc, mem


def objective_cost(ctx: Ctx, m: int, k: int, n: int, fp8: bool, pm: int, pn: int, pk: int) -> tuple[int, int]:
    """The shaped catalogue's screen: the objective's own terms for one grid, on its busiest tile — the AMP and
    the epilogue; x arriving from one-row-per-tile blocks (a run per row: its bytes or 160 cycles per piece,
    whichever is longer); the weight block staged from a spread home (its bytes or a piece per home chunk it
    spans); each reduction round's partial, sync and add; the output leaving for one-row-per-tile consumers (a
    run per row). Per-tile bytes as the grid screen counts them."""
    t = ctx.target
    e = 1 if fp8 else 2
    km = gemm.k_multiple(fp8)
    mb, kb, nb = ceil(m / pm), ceil(k / pk), ceil(n / pn)
    kp, np_ = ceil(kb / km) * km, ceil(nb / gemm.N_MULTIPLE) * gemm.N_MULTIPLE
    mem = mb * kp * e + kp * np_ * e + (mb * nb * 8 if pk > 1 else mb * nb * 2)

    def moved(nbytes: int, pieces: int) -> int:
        return max(ceil(nbytes / t.exchange_bytes_per_cycle), pieces * t.exchange_fragment_cycles)

    chunk = max(1, k * n * e // ctx.tiles)
    cyc = gemm.cycles(t, mb, kb, nb, fp8) + gemm.epilogue_cycles(t, mb, nb)
    cyc += moved(mb * kp * e, mb) + moved(kp * np_ * e, ceil(kp * np_ * e / chunk) + 1) + moved(mb * nb * 2, mb)
    if pk > 1:
        cyc += gemm.reduce_cycles(t, mb, nb, pk) + tree_rounds(pk) * (moved(mb * nb * 4, 1) + t.exchange_sync_cycles)
    return cyc, mem


def grids(ctx: Ctx, m: int, k: int, n: int, fp8: bool, keep: int = 5, head: int = 0,
          record: list | None = None, fastest: int = 2) -> list[tuple[int, int, int]]:
    """(pm, pn, pk) grids on the Pareto front of modeled cycles and per-tile bytes, spread along it (the
    fastest and the leanest always kept). Rows take every distinct block height; columns the largest split
    that fits the tiles and the largest ones whose blocks are whole AMP column groups. The grid catalogue
    screens with `grid_cost`, the shaped one with `objective_cost`; with `head` (the output feeds attention
    with heads of `head` columns) the shaped catalogue also keeps head-aligned grids, whose column blocks are
    single heads, and the `fastest` grids by its screen (the screen cannot see which layouts the neighbours
    choose; the solver can). `record` receives each kept grid's figures and why it was kept."""
    T = ctx.tiles
    km = gemm.k_multiple(fp8)
    screen = objective_cost if ctx.shaped else grid_cost
    seen, cands = set(), []
    for pk in (1, 2, 4, 8):
        if pk > ceil(k / 4) or ceil(k / pk) < km and pk > 1:
            continue
        heights = sorted({ceil(m / pm) for pm in range(1, min(m, T // pk) + 1)})
        for mb in heights:
            pm = ceil(m / mb)
            top = min(T // (pm * pk), ceil(n / 4))
            if top < 1:
                continue
            pns = {top} | set(sorted((pn for pn in range(1, top + 1) if ceil(n / pn) % gemm.N_MULTIPLE == 0),
                                     reverse=True)[:2])
            for pn in pns:
                if (pm, pn, pk) in seen or pm * pn * pk < min(T // 3, m * n * pk // 4):
                    continue
                seen.add((pm, pn, pk))
                cyc, mem = screen(ctx, m, k, n, fp8, pm, pn, pk)
                cands.append((cyc, mem, pm, pn, pk))
    cands.sort()
    front, best_mem = [], None
    for c in cands:  # Pareto front: cycles ascending, memory strictly decreasing
        if best_mem is None or c[1] < best_mem:
            front.append(c)
            best_mem = c[1]
    kept = front
    if len(front) > keep:
        idx = np.unique(np.linspace(0, len(front) - 1, keep).round().astype(int))
        kept = [front[i] for i in idx]
    why = {id(c): "Pareto front of cycles and bytes" for c in kept}
    why[id(kept[0])], why[id(kept[-1])] = "fastest", "leanest" if len(kept) > 1 else "fastest and leanest"
    out = list(kept)
    if ctx.shaped:  # the screen cannot see the neighbours' layouts: the solver also gets the next fastest grids
        near = lambda a, b: abs(a - b) <= 0.2 * max(a, b)
        extra = 0
        for rank, c in enumerate(cands):
            if extra == fastest:
                break
            if any(c[4] == o[4] and near(c[2], o[2]) and near(c[3], o[3]) for o in out):
                continue  # a near twin of a kept grid
            why[id(c)] = f"{rank + 1}. fastest by the screen"
            out.append(c)
            extra += 1
    if head and ctx.shaped and n % head == 0 and head % grain(1 if fp8 else 2) == 0:
        pn = n // head
        for pk in (1, 2):
            pm = T // (pn * pk)
            if ctx.batch > 1 and m % ctx.batch == 0:
                pm -= pm % ctx.batch
            if pm < 1 or ceil(k / pk) < km and pk > 1 or any(c[2:] == (min(pm, m), pn, pk) for c in out):
                continue
            pm = min(pm, m)
            c = (*screen(ctx, m, k, n, fp8, pm, pn, pk), pm, pn, pk)
            why[id(c)] = f"head-aligned: {pn} column blocks of one {head}-column head each, written padded " \
                         f"for the attention that reads them"
            out.append(c)
    if record is not None:
        record += [{"grid": list(c[2:]), "modeled_cycles": int(c[0]), "bytes": int(c[1]), "why": why[id(c)]}
                   for c in out]
    return [c[2:] for c in out]


def tree_rounds(pk: int) -> int:
    return max(0, int(pk).bit_length() - 1)


def attention_head(ctx: Ctx, sop: SOp) -> int:
    """The head width of an attention that reads this op's output (0: none does)."""
    for c in ctx.sched.buffers[sop.out_key].consumers:
        cop = ctx.sched.op(c)
        if cop.op.kind is OpKind.ATTENTION:
            return cop.op.attrs.head_dim
    return 0


def rope_consumer(ctx: Ctx, sop: SOp):
    """The RoPE attention reading this op's output, with the column windows of q and k it rotates."""
    for c in ctx.sched.buffers[sop.out_key].consumers:
        cop = ctx.sched.op(c)
        if cop.op.kind is OpKind.ATTENTION and cop.op.attrs.rope:
            wins = [r.window or (0, matrix(ctx.sched.buffers[r.key].value)[1])
                    for i, r in cop.reads if i in (0, 1) and r.key == sop.out_key]
            return cop, wins
    return None, []


def rope_codelet(ctx: Ctx):
    """The RoPE epilogue a catalogue links: tables of unique angles in the compact catalogue, the full interleaved
    tables (every angle twice) elsewhere."""
    return vector.ROPE_UNIQUE if ctx.compact else vector.ROPE


def rope_fields(ctx: Ctx) -> dict:
    """The choice fields naming the RoPE tables' layout (absent: full tables)."""
    return {"rope": "unique"} if ctx.compact else {}


def rope_tables(ctx: Ctx, out: Layout, head_dim: int) -> Layout:
    """F32 sin and cos tables beside every output block: one [rows, head_dim] pair per block (head_dim / 2
    columns with unique angles), indexed by the row's token and the column's place in its head (the angles are the
    same for every head, q and k)."""
    cols = head_dim // 2 if ctx.compact else head_dim
    return per_block(out, out.max_block_items()[0] * cols * 8)


def partial_layouts(m: int, n: int, pm: int, pn: int, pk: int, groups: int, cg: int = 2) -> tuple[Layout, Layout]:
    """F32 partials of every cell (replica r on tile + r; interleaved: the AMP writes them) and, on the cells
    that receive in the reduction tree (r even), one received partial; columns split as the F16 output's."""
    rs = pn * pk
    part = Layout(m, n, 4, pr=pm, pc=pn, replicas=pk, row_stride=rs, col_stride=pk, rep_stride=1,
                  row_groups=groups, mem=IL, col_grain=cg)
    recv = Layout(m, n, 4, pr=pm, pc=pn, replicas=pk // 2, row_stride=rs, col_stride=pk, rep_stride=2,
                  row_groups=groups, mem=STD, col_grain=cg)
    return part, recv


def reduction(ctx: Ctx, op: str, part: Layout, recv: Layout, pk: int) -> tuple[Internal, ...]:
    """The k-slice partials summed by a binary tree: in round s the cell r (r mod 2^(s+1) = 2^s) sends its
    running partial, one run, to the cell r - 2^s, which adds it into its own; the cell r = 0 ends with the
    sum of all pk slices (in the order ((p0 + p1) + (p2 + p3)) + ...)."""
    T = ctx.tiles
    pt, po = part.block_tiles(T), part.block_offsets(T)
    rt, ro = recv.block_tiles(T), recv.block_offsets(T)
    nb = np.minimum(part.block_bytes(), recv.block_bytes()).ravel()  # the data, not the interleaved padding
    out = []
    for s in range(tree_rounds(pk)):
        step = 1 << s
        senders = [r for r in range(pk) if r % (2 * step) == step]
        src = np.concatenate([pt[r].ravel() for r in senders])
        soff = np.concatenate([po[r].ravel() for r in senders])
        dst = np.concatenate([rt[(r - step) // 2].ravel() for r in senders])
        doff = np.concatenate([ro[(r - step) // 2].ravel() for r in senders])
        tr = block_moves(T, src, soff, dst, doff, np.tile(nb, len(senders)), ctx.target.encoding)
        out.append(Internal.own(f"reduction round {s + 1}", tr, op, "partials", "received partial"))
    return tuple(out)


def matmul(ctx: Ctx, sop: SOp) -> list[Impl]:
    T, B, tg = ctx.tiles, ctx.batch, ctx.target
    xref, wref = sop.reads[0][1], sop.reads[1][1]
    xv = (ctx.sched.buffers[xref.key].value if xref.kind == "act" else ctx.sched.params[xref.key].value)
    wv = ctx.sched.params[wref.key].value
    m, k = matrix(xv)
    n = wv.shape[1]
    fp8 = xv.dtype.is_fp8
    xe, we = xv.dtype.itemsize, wv.dtype.itemsize
    km = gemm.k_multiple(fp8)
    amp = gemm.GEMM[fp8]
    rope_op, rope_wins = rope_consumer(ctx, sop)
    impls = []
    head = attention_head(ctx, sop)
    ctx.screened[sop.key] = record = []
    for pm, pn, pk in grids(ctx, m, k, n, fp8, keep=5, head=head, record=record):
        # a head-aligned grid writes its heads padded as attention reads them: each head leaves as whole rows
        out_align = att.PAD if ctx.shaped and head and pn * head == n and head % att.PAD else 1
        rs = pn * pk
        xlay = row_layout(m, k, xe, B, pm, pk, IL, replicas=pn, row_stride=rs, col_stride=1, rep_stride=pk,
                          col_align=km)
        wlay = Layout(k, n, we, pr=pk, pc=pn, replicas=pm, row_stride=1, col_stride=pk, rep_stride=rs, mem=IL,
                      row_align=km, col_align=gemm.N_MULTIPLE, row_grain=grain(xe))
        # w, the output, the bias and the partials split n at the same columns: whole words of w
        cg = grain(we)
        c16 = 0 if cg == grain(2) else cg
        out = row_layout(m, n, 2, B, pm, pn, IL if pk == 1 else STD, row_stride=rs, col_stride=pk, col_grain=c16,
                         col_align=out_align)
        uses = [(wref.key, wlay)]
        if len(sop.reads) > 2:
            uses.append((sop.reads[2][1].key, Layout(1, n, 2, pr=1, pc=pn, replicas=pm, col_stride=pk,
                                                     rep_stride=rs, col_grain=c16)))
        if xref.kind == "param":  # a learned left operand (a probe): held like the weights
            uses.append((xref.key, xlay))
        mb, kb, nb = ceil(m / pm), ceil(k / pk), ceil(n / pn)
        cyc = gemm.cycles(tg, mb, kb, nb, fp8) + gemm.epilogue_cycles(tg, mb, nb)
        bufs: list[Buf] = []
        internal: tuple[Internal, ...] = ()
        extra = 0
        codelets = [amp.name]
        sets = 1
        if pk > 1:
            part, recv = partial_layouts(m, n, pm, pn, pk, out.row_groups, cg)
            bufs += [Buf("partials", part, Life.COMPUTE), Buf("received partial", recv, Life.COMPUTE)]
            internal = reduction(ctx, sop.key, part, recv, pk)
            cyc += gemm.reduce_cycles(tg, mb, nb, pk)
            extra = sum(round_cycles(tg, r.transfers) for r in internal)
            codelets.append(gemm.REDUCE.name)
            sets = 1 + len(internal)
        if rope_op is not None:
            # RoPE is applied in place to the q and k columns of the output, in one more compute set
            cols = sum(c1 - c0 for c0, c1 in rope_wins)
            bufs.append(Buf("RoPE tables", rope_tables(ctx, out, rope_op.op.attrs.head_dim), Life.PROGRAM))
            cyc += vector.cycles(tg, "rope", mb * ceil(nb * cols / n) * 2)
            codelets.append(rope_codelet(ctx).name)
            sets += 1
        base = {"kind": "matmul", "pm": pm, "pn": pn, "pk": pk} | (rope_fields(ctx) if rope_op is not None else {})
        if out_align > 1:
            base["out_align"] = out_align

        def make(f, ps, xlay=xlay, out=out, cyc=cyc, bufs=tuple(bufs), internal=internal, extra=extra, pm=pm,
                 pn=pn, pk=pk, codelets=tuple(codelets), sets=sets):
            part, recv = partial_layouts(m, n, pm, pn, pk, out.row_groups, cg) if pk > 1 else (out, None)
            moving = patched(ctx, ps if pk == 1 else ps[:1])
            desc = [descriptors(ctx, part, amp, moving)]
            cyc += descriptor_patching(ctx, part, moving)
            if pk > 1:  # one add per round on the receiving cells; the last round adds the bias too
                moving = patched(ctx, ps[1:])
                desc += [descriptors(ctx, recv, gemm.REDUCE, moving)] * len(internal)
                cyc += len(internal) * descriptor_patching(ctx, recv, moving)
            if rope_op is not None:
                desc.append(descriptors(ctx, out, rope_codelet(ctx)))
            lab = f"grid {pm}x{pn}x{pk}" + (" heads padded" if "out_align" in f else "") + \
                f" weights {f.get('params')}" + home_label(f)
            return Impl(sop.key, lab, f, out, {} if xref.kind == "param" else {0: xlay}, ps, bufs + tuple(desc), cyc, codelets, sets, internal,
                        extra)
        impls += variants(ctx, uses, base, make)
    return impls
