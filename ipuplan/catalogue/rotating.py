"""Rotating matmul implementations (compute-shift, Cannon's algorithm): x and w shards travel along rings of
tiles instead of being replicated over the whole grid.

A pm x pn grid of cells (cell (i, j) on tile start + i * pn + j, as the pk = 1 grid) splits k into r slices
of whole AMP micro-blocks, r dividing pm and pn. At step t cell (i, j) multiplies x shard (i, q) by w shard
(q, j), q = (i + j + t) mod r, and adds the product into its F32 accumulator (codelets.gemm.ACCUMULATE); the
last step writes the F16 output with the bias. The shards start skewed (x by a column skew, w by a row skew)
so that every cell's pair meets; x is replicated over its pn / r column groups, w over its pm / r row groups.
Between steps every cell sends its x shard to the previous cell of its row's ring of r and its w shard to the
previous cell of its column's ring, one run each (one exchange superstep per shift, r - 1 in all). Shards
alternate between the operands' own buffers (the exchanged x, the staged w: read once, then free) and one
shard buffer each; every shard is padded to the largest slice so that any of them fits either buffer.
Weights are staged into their skewed shards from spread or blocks homes. In the in-place catalogue an FP8
matmul keeps its running sum in its F16 output buffer (codelets.gemm.ACCUMULATE_OUT; the target accumulates
FP8 in F16) instead of an F32 accumulator beside it, and a matmul that feeds rotary attention (PE's QKV) rotates
too, RoPE applied to its output blocks in one more compute set after the last step (as the replicated grid
applies it), with r below the catalogue's most slices so that the op's steps stay within the program every
matmul reserves; the compact catalogue also offers 16 slices (MAX_STEPS_COMPACT), halving the shards again.
"""

from __future__ import annotations

from math import ceil

import numpy as np

from ..codelets import MAX_ROTATION, MAX_STEPS_COMPACT, gemm, round_cycles, vector
from ..layout import Layout
from ..layout.geometry import grain, per_block
from ..layout.transfer import block_moves
from .common import IL, descriptors, holder, home_label, row_layout, variants
from .impl import Buf, Ctx, Impl, Internal, Life, Move, ParamMode
from .matmul import grids, rope_codelet, rope_consumer, rope_fields, rope_tables
from .schedule import SOp, matrix

ROTATIONS = (2, 3, 4, MAX_ROTATION, MAX_STEPS_COMPACT)  # slices offered, up to the catalogue's Steps.slices
KEEP = 2  # rotating grids kept per r: the fastest and the leanest by `screen`


def screen(ctx: Ctx, m: int, k: int, n: int, fp8: bool, pm: int, pn: int, r: int) -> tuple[int, int]:
    """(modeled cycles, per-tile bytes) of a rotating grid on its busiest tile: r accumulating steps, r - 1 shifts
    of both shards (bytes at the exchange rate, with their sync); two buffers of each shard, the accumulator
    and the output."""
    t, e = ctx.target, 1 if fp8 else 2
    km = gemm.k_multiple(fp8)
    mb, nb, kq = ceil(m / pm), ceil(n / pn), ceil(ceil(k / km) / r) * km
    shard = mb * kq * e + kq * ceil(nb / gemm.N_MULTIPLE) * gemm.N_MULTIPLE * e
    cyc = sum(gemm.accumulate_cycles(t, mb, kq, nb, fp8, s == 0) for s in range(r))
    cyc += (r - 1) * (ceil(shard / t.exchange_bytes_per_cycle) + t.exchange_sync_cycles)
    return cyc, 2 * shard + mb * nb * 6


def rotations(ctx: Ctx, m: int, k: int, n: int, fp8: bool, rope: bool = False) -> list[tuple[int, int, int]]:
    """(pm, pn, r) of the rotating grids offered. Candidates: the replicated catalogue's kept grids, their
    column blocks times their k-slices when they split k, rounded down to multiples of r; per r with at least
    one micro-block per slice, at most the catalogue's steps (fewer when RoPE takes a compute set after them),
    the fastest and the leanest by `screen`."""
    micro = ceil(k / gemm.k_multiple(fp8))
    base = grids(ctx, m, k, n, fp8, keep=5, head=0)
    out = []
    for r in ROTATIONS:
        if micro < r or r > ctx.steps.slices or (rope and r >= ctx.steps.slices):
            continue
        cands = set()
        for pm0, pn0, pk in base:
            for pn1 in {pn0, min(pn0 * pk, ceil(n / 4), ctx.tiles // max(1, pm0))}:
                pm, pn = pm0 - pm0 % r, pn1 - pn1 % r
                if pm >= r and pn >= r and pm * pn <= ctx.tiles:
                    cands.add((pm, pn))
        scored = sorted((*screen(ctx, m, k, n, fp8, pm, pn, r), pm, pn) for pm, pn in cands)
        for c in (scored[:1] + sorted(scored, key=lambda c: (c[1], c[0]))[:1])[:KEEP]:
            if (c[2], c[3], r) not in out:
                out.append((c[2], c[3], r))
    return out


def shard_layouts(m: int, k: int, n: int, xe: int, we: int, fp8: bool, batch: int, pm: int, pn: int,
                  r: int) -> tuple[Layout, Layout]:
    """x as the cells' initial shards (column skew) and w likewise (row skew), every shard padded to the
    largest slice: ceil(micro-blocks / r) of them."""
    km = gemm.k_multiple(fp8)
    width = ceil(ceil(k / km) / r) * km
    x = row_layout(m, k, xe, batch, pm, r, IL, replicas=pn // r, row_stride=pn, col_stride=1, rep_stride=r,
                   col_align=width, col_grain=km, col_skew=-1)
    w = Layout(k, n, we, pr=r, pc=pn, replicas=pm // r, row_stride=pn, col_stride=1, rep_stride=r * pn, mem=IL,
               row_align=width, col_align=gemm.N_MULTIPLE, row_grain=km, row_skew=-1, col_grain=grain(we))
    return x, w


def shifts(ctx: Ctx, op: str, ends: tuple[str, str], xlay: Layout, wlay: Layout, cells: Layout,
           r: int) -> tuple[Internal, ...]:
    """The r - 1 shift supersteps. Before step t each cell (i, j) receives x shard (i, (i + j + t) mod r) from
    cell (i, j + 1) of its ring of r columns and w shard ((i + j + t) mod r, j) from cell (i + 1, j) of its ring
    of r rows, each a single run of the shard's stored rows, into the buffer the shard is read from at step t."""
    T, pm, pn = ctx.tiles, cells.pr, cells.pc
    i, j = (v.ravel() for v in np.meshgrid(np.arange(pm), np.arange(pn), indexing="ij"))
    tiles = cells.block_tiles(T)[0]
    q0 = (i + j) % r  # the slice a cell holds from the start, in the operand's own buffer
    nxt = lambda a: a - a % r + (a % r + 1) % r  # the next cell of a ring of r: it sends to this one
    out = []
    sides = []
    for name, lay, block, src, nb, own in (
            ("x", xlay, (j // r, i, q0), (i, nxt(j)), xlay.row_sizes()[i] * xlay.pitches()[0], ends[0]),
            ("w", wlay, (i // r, q0, j), (nxt(i), j), wlay.row_align * wlay.pitches()[j], ends[1])):
        # every slice is stored at the widest slice's width (x) or rows (w): one run of nb bytes
        shard = per_block(cells, int(lay.block_bytes().max()), IL)
        at = (lay.block_offsets(T)[block].reshape(pm, pn), shard.block_offsets(T)[0])  # [even, odd] holder offsets
        sides.append((f"{op} ({name} shards)", own, src, nb, at))
    for t in range(1, r):
        moves = []
        for held, own, (si, sj), nb, at in sides:
            tr = block_moves(T, tiles[si, sj], at[(t - 1) % 2][si, sj], tiles[i, j], at[t % 2][i, j], nb,
                             ctx.target.encoding)
            moves.append(Move(tr, holder(t - 1, own, held), holder(t, own, held)))
        out.append(Internal(f"shift {t}", tuple(moves)))
    return tuple(out)


def rotating(ctx: Ctx, sop: SOp) -> list[Impl]:
    """The rotating implementations of a matmul whose x is an exchanged activation (not a host input or a
    learned parameter) and, outside the compact catalogue, that feeds no rotary attention."""
    xref, wref = sop.reads[0][1], sop.reads[1][1]
    rope_op, rope_wins = rope_consumer(ctx, sop)
    if xref.kind != "act" or xref.window or not ctx.sched.buffers[xref.key].producer or \
            (rope_op is not None and not ctx.compact):
        return []
    T, B, tg = ctx.tiles, ctx.batch, ctx.target
    xv, wv = ctx.sched.buffers[xref.key].value, ctx.sched.params[wref.key].value
    m, k = matrix(xv)
    n = wv.shape[1]
    fp8 = xv.dtype.is_fp8
    xe, we = xv.dtype.itemsize, wv.dtype.itemsize
    in_place = fp8 and ctx.in_place
    amp = gemm.ACCUMULATE_OUT if in_place else gemm.ACCUMULATE[fp8]
    cg = grain(we)
    c16 = 0 if cg == grain(2) else cg
    impls = []
    for pm, pn, r in rotations(ctx, m, k, n, fp8, rope_op is not None):
        xlay, wlay = shard_layouts(m, k, n, xe, we, fp8, B, pm, pn, r)
        out = row_layout(m, n, 2, B, pm, pn, IL, row_stride=pn, col_stride=1, col_grain=c16)
        uses = [(wref.key, wlay)]
        if len(sop.reads) > 2:
            uses.append((sop.reads[2][1].key, Layout(1, n, 2, pr=1, pc=pn, replicas=pm, col_stride=1, rep_stride=pn,
                                                     col_grain=c16)))
        mb, nb = int(out.row_sizes().max()), int(out.col_sizes().max())
        kq = int(xlay.col_sizes().max())
        cyc = sum(gemm.accumulate_cycles(tg, mb, kq, nb, fp8, t == 0) for t in range(r))
        ends = (f"{xref.key} -> {sop.key}[0] (exchanged copy)", f"{wref.key} (staged)")
        internal = shifts(ctx, sop.key, ends, xlay, wlay, out, r)
        extra = sum(round_cycles(tg, s.transfers) for s in internal)
        acc = () if in_place else (Buf("accumulator", Layout(m, n, 4, pr=pm, pc=pn, row_stride=pn, col_stride=1,
                                                             row_groups=out.row_groups, mem=IL, col_grain=cg),
                                        Life.COMPUTE),)
        bufs = acc + (
            Buf("x shards", per_block(out, int(xlay.block_bytes().max()), IL), Life.COMPUTE),
            Buf("w shards", per_block(out, int(wlay.block_bytes().max()), IL), Life.COMPUTE))
        codelets, sets = (amp.name,), r
        if rope_op is not None:  # in place on the q and k columns of the output, after the last step
            cols = sum(c1 - c0 for c0, c1 in rope_wins)
            bufs += (Buf("RoPE tables", rope_tables(ctx, out, rope_op.op.attrs.head_dim), Life.PROGRAM),)
            cyc += vector.cycles(tg, "rope", mb * ceil(nb * cols / n) * 2)
            codelets, sets = codelets + (rope_codelet(ctx).name,), sets + 1
        base = {"kind": "matmul", "pm": pm, "pn": pn, "pk": 1, "rotate": r} | ({"accumulate": "out"} if in_place else {}) | \
            (rope_fields(ctx) if rope_op is not None else {})

        def make(f, ps, xlay=xlay, out=out, cyc=cyc, bufs=bufs, internal=internal, extra=extra, pm=pm, pn=pn, r=r,
                 codelets=codelets, sets=sets):
            desc = tuple(descriptors(ctx, out, amp) for _ in range(r))
            if rope_op is not None:
                desc += (descriptors(ctx, out, rope_codelet(ctx)),)
            lab = f"rotating {pm}x{pn} r{r}{' in place' if in_place else ''} weights staged" + home_label(f)
            return Impl(sop.key, lab, f, out, {0: xlay}, ps, bufs + desc, cyc, codelets, sets, internal, extra)
        # weights rotate out of their staged shards (the staged copy is overwritten as a shard buffer)
        impls += [im for im in variants(ctx, uses, base, make) if im.fields["params"] == ParamMode.STAGED.value]
    return impls
