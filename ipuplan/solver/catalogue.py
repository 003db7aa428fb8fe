"""The implementation catalogue: per op kind, the candidate implementations the planner chooses from.

An implementation fixes the op's output layout, the layout each activation input must arrive in, how
each parameter is held (resident in the compute layout, or in a compact home and staged before use),
per-tile scratch and modeled cycles (from ipuplan.codelets). One generator per op kind in CATALOGUE.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from math import ceil
from typing import Callable

import numpy as np

from .. import codelets as cl
from ..ir.graph import OpKind
from ..layout import Layout, MemClass
from ..target import Target
from .schedule import Schedule, SOp, matrix

IL, STD = MemClass.INTERLEAVED, MemClass.STANDARD


class ParamMode(Enum):
    RESIDENT = "resident"  # every iteration's copy held in the compute layout for the whole program
    STAGED = "staged"  # compact balanced home; copied into the compute layout before each use


@dataclass(frozen=True)
class ParamUse:
    key: str
    layout: Layout  # one iteration, as the op consumes it
    mode: ParamMode


@dataclass(eq=False)
class Impl:
    """One way to run one op. `needs[i]` is the layout input i must arrive in (None: written in place)."""

    op: str
    label: str
    fields: dict
    out: Layout
    needs: dict[int, Layout | None]
    params: tuple[ParamUse, ...]
    scratch: np.ndarray
    cycles: int
    out_from_exchange: bool = False  # the output buffer is written by the op's exchange (concat)
    extra_exchange: int = 0  # intra-op exchange cycles (reductions, statistics)
    rope_tables: Layout | None = None  # resident F32 sin/cos tables applied in this op's epilogue


@dataclass
class Ctx:
    target: Target
    sched: Schedule
    batch: int
    impls: dict[str, list[Impl]] = field(default_factory=dict)

    @property
    def tiles(self) -> int:
        return self.target.tiles


def _pow2_upto(n: int) -> list[int]:
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


def _zero(ctx: Ctx) -> np.ndarray:
    return np.zeros(ctx.tiles, np.int64)


def _variants(ctx: Ctx, sop: SOp, base: dict, uses: list[tuple[str, Layout]], make: Callable) -> list[Impl]:
    """One implementation per parameter mode (all params of the op share the mode)."""
    if not uses:
        return [make(dict(base), ())]
    out = []
    for mode in ParamMode:
        f = dict(base, params=mode.value)
        out.append(make(f, tuple(ParamUse(k, lay, mode) for k, lay in uses)))
    return out


# --- matmul -----------------------------------------------------------------------------------------


def _grids(ctx: Ctx, m: int, k: int, n: int, fp8: bool, keep: int = 4) -> list[tuple[int, int, int]]:
    """Pareto-best (pm, pn, pk) grids by modeled compute+exchange cycles and per-tile operand bytes."""
    T, B = ctx.tiles, ctx.batch
    pms = set(_pow2_upto(m)) | {B * j for j in _pow2_upto(m // B)} | ({m} if m <= T else set())
    pms |= {B * (m // B // d) for d in (1, 2, 3, 4, 6, 8) if m // B // d >= 1}
    pns = set(_pow2_upto(n)) | {n // d for d in (1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 36, 48, 72) if n // d >= 1}
    pks = [p for p in (1, 2, 4, 8) if p <= k]
    xe, we = (1, 1) if fp8 else (2, 2)
    cands = []
    for pm in sorted(pms):
        for pn in sorted(pns):
            for pk in pks:
                used = pm * pn * pk
                if pm > m or pn > n or used > T or used < min(T // 3, m * n * pk // 4):
                    continue
                mb, kb, nb = ceil(m / pm), ceil(k / pk), ceil(n / pn)
                mem = mb * kb * xe + kb * nb * we + (mb * nb * 4 if pk > 1 else 0)
                cyc = cl.gemm_cycles(ctx.target, mb, kb, nb, fp8) + (mb * kb * xe + kb * nb * we) // 4
                if pk > 1:
                    cyc += cl.VECTOR["reduce"].cycles(ctx.target, mb * nb * 4 * pk) + (pk - 1) * mb * nb * 4 // 4
                cands.append((cyc, mem, pm, pn, pk))
    cands.sort()
    front, best_mem = [], None
    for c in cands:  # Pareto front: cycles ascending, memory strictly decreasing
        if best_mem is None or c[1] < best_mem:
            front.append(c)
            best_mem = c[1]
    if len(front) > keep:
        idx = np.unique(np.linspace(0, len(front) - 1, keep).round().astype(int))
        front = [front[i] for i in idx]
    return [(pm, pn, pk) for _, _, pm, pn, pk in front]


def _rope_consumer(ctx: Ctx, sop: SOp):
    """The RoPE attention reading this op's output, with the column windows of q and k it rotates."""
    for c in ctx.sched.buffers[sop.out_key].consumers:
        cop = ctx.sched.op(c)
        if cop.op.kind is OpKind.ATTENTION and cop.op.attrs.rope:
            wins = [r.window or (0, matrix(ctx.sched.buffers[r.key].value)[1])
                    for i, r in cop.reads if i in (0, 1) and r.key == sop.out_key]
            return cop, wins
    return None, []


def matmul(ctx: Ctx, sop: SOp) -> list[Impl]:
    T, B, tg = ctx.tiles, ctx.batch, ctx.target
    xref, wref = sop.reads[0][1], sop.reads[1][1]
    xv = (ctx.sched.buffers[xref.key].value if xref.kind == "act" else ctx.sched.params[xref.key].value)
    wv = ctx.sched.params[wref.key].value
    m, k = matrix(xv)
    n = wv.shape[1]
    fp8 = xv.dtype.is_fp8
    xe, we = xv.dtype.itemsize, wv.dtype.itemsize
    rope_op, rope_wins = _rope_consumer(ctx, sop)
    impls = []
    for pm, pn, pk in _grids(ctx, m, k, n, fp8):
        rs = pn * pk
        xlay = row_layout(m, k, xe, B, pm, pk, IL, replicas=pn, row_stride=rs, col_stride=1, rep_stride=pk)
        wlay = Layout(k, n, we, pr=pk, pc=pn, replicas=pm, row_stride=1, col_stride=pk, rep_stride=rs, mem=IL)
        out = row_layout(m, n, 2, B, pm, pn, STD, row_stride=rs, col_stride=pk)
        uses = [(wref.key, wlay)]
        if len(sop.reads) > 2:
            uses.append((sop.reads[2][1].key,
                         Layout(1, n, 2, pr=1, pc=pn, replicas=pm, col_stride=pk, rep_stride=rs)))
        mb, kb, nb = ceil(m / pm), ceil(k / pk), ceil(n / pn)
        cyc = cl.gemm_cycles(tg, mb, kb, nb, fp8) + cl.VECTOR["add"].cycles(tg, mb * nb * 2)
        scratch = _zero(ctx)
        extra = 0
        if pk > 1:
            part = Layout(m, n, 4, pr=pm, pc=pn, replicas=pk, row_stride=rs, col_stride=pk, rep_stride=1,
                          row_groups=out.row_groups)
            scratch = part.tile_bytes(T)
            cyc += cl.VECTOR["reduce"].cycles(tg, mb * nb * 4 * pk)
            extra = cl.exchange_cycles(tg, mb * nb * 4, (pk - 1) * mb * nb * 4, (pk - 1) * mb)
        rope = None
        if rope_op is not None:
            # RoPE is applied in place in this GEMM's epilogue, to the q and k columns of its output;
            # sin/cos tables (F32, class-token rows as identity) are resident beside those columns.
            cols = sum(c1 - c0 for c0, c1 in rope_wins)
            rope = out_window_layout(out, rope_wins, 8)
            cyc += cl.VECTOR["rope"].cycles(tg, mb * ceil(nb * cols / n) * 2)
        base = {"kind": "matmul", "pm": pm, "pn": pn, "pk": pk}

        def make(f, ps, xlay=xlay, out=out, cyc=cyc, scratch=scratch, extra=extra, rope=rope, pm=pm, pn=pn,
                 pk=pk):
            lab = f"grid {pm}x{pn}x{pk} weights {f.get('params')}"
            return Impl(sop.key, lab, f, out, {0: xlay}, ps, scratch, cyc, extra_exchange=extra,
                        rope_tables=rope)
        impls += _variants(ctx, sop, base, uses, make)
    return impls


def out_window_layout(out: Layout, wins: list[tuple[int, int]], elem: int) -> Layout:
    """A layout holding `elem` bytes per element of the given column windows of `out` (same blocks).

    Modeled as the full-width layout scaled by the windows' share of the columns, rounded up per block:
    the windows of q and k cover whole column blocks except at their edges.
    """
    cols = sum(c1 - c0 for c0, c1 in wins)
    return dataclasses.replace(out, elem=max(1, ceil(elem * cols / out.cols)), mem=STD)


# --- attention --------------------------------------------------------------------------------------


def attention(ctx: Ctx, sop: SOp) -> list[Impl]:
    T, B, tg = ctx.tiles, ctx.batch, ctx.target
    a = sop.op.attrs
    qv = sop.graph.value(sop.op.inputs[0])
    kv = sop.graph.value(sop.op.inputs[1])
    sq, sk, H, D = qv.shape[1], kv.shape[1], a.heads, a.head_dim
    groups = B * H
    if groups > T:
        return []
    top = min(sq, T // groups)
    nqs = sorted({n for n in _pow2_upto(top)} | {top} | {ceil(sq / ceil(sq / top))})
    nqs = [n for n in nqs if n == top or n >= max(1, top // 8)]
    impls = []
    for nq in nqs:
        out = row_layout(B * sq, H * D, 2, B, B * nq, H, STD, row_stride=H)
        qn = out
        kvn = Layout(B * sk, H * D, 2, pr=B, pc=H, row_groups=B, replicas=nq, row_stride=nq * H, rep_stride=H)
        qb = ceil(sq / nq)
        for streaming in (True, False):
            if not streaming and sk <= cl.STREAM_PANEL:
                continue
            sc = cl.attention_scratch(qb, sk, D, streaming)
            scratch = np.bincount(out.block_tiles(T).ravel(), minlength=T).astype(np.int64) * sc
            cyc = cl.attention_cycles(tg, qb, sk, D) + cl.VECTOR["cast"].cycles(tg, qb * D * 4)
            f = {"kind": "attention", "query_blocks": nq, "mode": "streaming" if streaming else "materialized"}
            impls.append(Impl(sop.key, f"{f['mode']} {B}x{H} groups x {nq} query blocks", f, out,
                              {0: qn, 1: kvn, 2: kvn}, (), scratch, cyc))
    return impls


# --- element-wise and data movement -----------------------------------------------------------------


def _neighbour_layouts(ctx: Ctx, sop: SOp, elem: int) -> list[Layout]:
    """Candidate output layouts: the first activation input's producer layouts (compute where the data
    is), the layouts consumers want it in (compute after the exchange), and one canonical row layout."""
    rows, cols = matrix(sop.graph.value(sop.op.outputs[0]))
    seen: list[Layout] = []

    def add(lay: Layout | None, mem: MemClass | None = None):
        if lay is None or lay.rows != rows or lay.cols != cols or lay.flat:
            return
        lay = dataclasses.replace(lay, elem=elem, mem=mem or lay.mem, row_align=1, col_align=1)
        if lay not in seen:
            seen.append(lay)

    for _, r in sop.reads:
        if r.kind == "act" and r.window is None and r.key in ctx.sched.buffers:
            prod = ctx.sched.buffers[r.key].producer
            for im in ctx.impls.get(prod, []):
                add(im.out, STD)
            break
    for c in ctx.sched.buffers[sop.out_key].consumers:
        for im in ctx.impls.get(c, []):
            for i, r in ctx.sched.op(c).reads:
                if r.key == sop.out_key and r.window is None:
                    add(im.needs.get(i))
    pr = min(rows, ctx.tiles // ctx.batch * ctx.batch if rows >= ctx.batch else rows)
    add(row_layout(rows, cols, elem, ctx.batch, max(1, pr)))
    return seen


def _vector_need(lay: Layout, n: int) -> Layout:
    """A [n] vector broadcast over rows: every tile holding a block needs that block's columns."""
    return Layout(1, n, 2, pr=1, pc=lay.pc, replicas=lay.pr, start=lay.start, col_stride=lay.col_stride,
                  rep_stride=lay.rstride)


def _param_need(ctx: Ctx, lay: Layout, key: str) -> Layout | None:
    """How parameter `key` must be laid out to be combined element-wise with a tensor in `lay`."""
    v = ctx.sched.params[key].value
    r, c = matrix(v)
    if lay.replicas > 1:
        return None
    if len(v.shape) == 1 or r == 1 and lay.rows > 1:
        return _vector_need(lay, c)
    if r == lay.rows:
        return dataclasses.replace(lay, elem=v.dtype.itemsize, mem=STD)
    if lay.row_groups > 1 and r * lay.row_groups == lay.rows:  # e.g. positions [tokens, W] over [B*tokens, W]
        g = lay.row_groups
        return Layout(r, c, v.dtype.itemsize, pr=lay.pr // g, pc=lay.pc, replicas=g, start=lay.start,
                      row_stride=lay.rstride, col_stride=lay.col_stride, rep_stride=lay.pr // g * lay.rstride)
    return None


_VEC = {OpKind.ADD: "add", OpKind.GELU: "gelu", OpKind.CAST: "cast", OpKind.LAYERNORM: "layernorm",
        OpKind.BROADCAST: "copy", OpKind.CONCAT: "copy"}


def elementwise(ctx: Ctx, sop: SOp) -> list[Impl]:
    T, tg = ctx.tiles, ctx.target
    kind = sop.op.kind
    outv = sop.graph.value(sop.op.outputs[0])
    rows, cols = matrix(outv)
    impls = []
    for lay in _neighbour_layouts(ctx, sop, outv.dtype.itemsize)[:8]:
        if kind is OpKind.LAYERNORM and lay.pc > 1 and rows > 64:
            continue  # column-split LayerNorm (cross-tile statistics) only for few-row tensors
        if kind in (OpKind.ADD, OpKind.LAYERNORM, OpKind.CONCAT) and lay.replicas > 1:
            continue
        needs: dict[int, Layout | None] = {}
        uses: list[tuple[str, Layout]] = []
        ok = True
        for i, r in sop.reads:
            if kind is OpKind.CONCAT:
                needs[i] = None
                continue
            src_v = ctx.sched.buffers[r.key].value if r.kind == "act" else ctx.sched.params[r.key].value
            sr, sc = matrix(src_v) if r.window is None else (matrix(src_v)[0], r.window[1] - r.window[0])
            if (sr, sc) == (rows, cols):
                need = dataclasses.replace(lay, elem=src_v.dtype.itemsize,
                                           mem=lay.mem if kind is not OpKind.CAST else STD)
            elif kind is OpKind.BROADCAST or sr == 1 or len(src_v.shape) == 1:
                if lay.replicas > 1:
                    ok = False
                    break
                need = _vector_need(lay, sc)
            else:
                need = _param_need(ctx, lay, r.key) if r.kind == "param" else None
            if need is None:
                ok = False
                break
            if r.kind == "param":
                uses.append((r.key, need))
            else:
                needs[i] = need
        if not ok:
            continue
        mb, nb = lay.max_block_items()
        nbytes = mb * nb * max(2, outv.dtype.itemsize)
        cyc = cl.VECTOR[_VEC[kind]].cycles(tg, nbytes * (2 if kind is OpKind.CAST else 1))
        scratch = _zero(ctx)
        extra = 0
        fields = {"kind": kind.value, "layout": lay.describe()}
        if kind is OpKind.LAYERNORM:
            owners = np.bincount(lay.block_tiles(T).ravel(), minlength=T).astype(np.int64)
            scratch = owners * cl.layernorm_scratch(tg)
            if lay.pc > 1:  # cross-tile statistics: partial sums exchanged among a row's column owners
                extra = cl.exchange_cycles(tg, 8 * mb, 8 * mb * lay.pc, lay.pc)
                fields["statistics"] = "cross-tile"
        if kind is OpKind.CONCAT:
            extra = cl.exchange_cycles(tg, int(lay.tile_bytes(T).max()), int(lay.tile_bytes(T).max()), mb)

        def make(f, ps, lay=lay, needs=needs, cyc=cyc, scratch=scratch, extra=extra):
            lab = f"{lay.describe()}" + (f" params {f['params']}" if "params" in f else "")
            return Impl(sop.key, lab, f, lay, needs, ps, scratch, cyc, out_from_exchange=kind is OpKind.CONCAT,
                        extra_exchange=extra)
        impls += _variants(ctx, sop, fields, uses, make)
    return impls


CATALOGUE: dict[OpKind, Callable[[Ctx, SOp], list[Impl]]] = {
    OpKind.MATMUL: matmul,
    OpKind.ATTENTION: attention,
    OpKind.ADD: elementwise,
    OpKind.GELU: elementwise,
    OpKind.CAST: elementwise,
    OpKind.LAYERNORM: elementwise,
    OpKind.BROADCAST: elementwise,
    OpKind.CONCAT: elementwise,
}
# Anchors first: their layouts seed the element-wise ops around them.
ANCHORS = (OpKind.MATMUL, OpKind.ATTENTION)


def build_catalogue(ctx: Ctx) -> dict[str, list[Impl]]:
    for sop in ctx.sched.ops:
        if sop.op.kind in ANCHORS:
            ctx.impls[sop.key] = CATALOGUE[sop.op.kind](ctx, sop)
    for sop in ctx.sched.ops:
        if sop.op.kind not in ANCHORS:
            ctx.impls[sop.key] = CATALOGUE[sop.op.kind](ctx, sop)
    return ctx.impls
