"""The checker's own reading of a recorded choice: from the IR op and the choice's identifying fields alone,
every buffer the op allocates, the layout each input must arrive in, its parameters and its internal
exchanges. Identifying fields: matmul (pm, pn, pk, out_align, params, homes, rope; a rotating one `rotate`:
checker/rotating.py), attention (query_blocks, key_splits, mode; ring attention `ring`: checker/ring.py),
element-wise (the output layout's geometry, params, homes); everything else is derived here and compared. A staged parameter's home is "spread" (its staged blocks end to end over every tile) or "blocks"
/ "blocks/<c>" (one replica of the staged layout, each block on a tile of its own, a one-row block in c
column chunks)."""

from __future__ import annotations

from math import ceil

import numpy as np

from ..codelets import attention as att
from ..codelets import gemm, vector
from ..ir.graph import OpKind
from .derived import Ctx, Derived, gemm_shape, groups as _groups, homes, matrix_of, rope_epilogue, shape_of as _shape_of
from .exchange import block_moves
from .geometry import L, block_bytes, block_tiles, per_block, row_sizes
from .ring import ring
from .rotating import rotating
from .validate import Invalid, canonical, get, integer, one_of, optional_equal, output_layout

MODES = ("resident", "staged")


def derive(cx: Ctx, o, choice: dict, path: str) -> Derived:
    """Every buffer of op `o` under `choice` (raises Invalid naming the bad field)."""
    k = o.op.kind
    optional_equal(choice, "kind", path, k.value)
    if k is OpKind.MATMUL:
        return _matmul(cx, o, choice, path)
    if k is OpKind.ATTENTION:
        return _attention(cx, o, choice, path)
    return _elementwise(cx, o, choice, path)


def _tree(cx: Ctx, src: dict, recv: dict, n: int) -> list:
    """Pairwise rounds: in round s cell r (r mod 2^(s+1) = 2^s) sends its block to cell r - 2^s."""
    st, rt = block_tiles(src, cx.T), block_tiles(recv, cx.T)
    nb = np.minimum(block_bytes(src), block_bytes(recv)).ravel()  # what the receiving block holds
    out, step = [], 1
    while step < n:
        senders = [r for r in range(n) if r % (2 * step) == step]
        out.append(block_moves(cx.T, cx.target, np.concatenate([st[r].ravel() for r in senders]),
                               np.concatenate([rt[(r - step) // 2].ravel() for r in senders]),
                               np.tile(nb, len(senders))))
        step *= 2
    return out


def _matmul(cx: Ctx, o, ch: dict, path: str) -> Derived:
    if isinstance(ch, dict) and "rotate" in ch:
        return rotating(cx, o, ch, path)
    T, B = cx.T, cx.batch
    s = gemm_shape(cx, o)
    xkind, xkey, wkey, m, k, n, fp8, xe, we = s.xkind, s.xkey, s.wkey, s.m, s.k, s.n, s.fp8, s.xe, s.we
    pk = one_of(ch, "pk", path, (1, 2, 4, 8))
    pm = integer(ch, "pm", path, 1, m)
    pn = integer(ch, "pn", path, 1, -(-n // 4))
    if pk > -(-k // 4) or pm * pn * pk > T:
        raise Invalid(f"{path}: grid {pm}x{pn}x{pk} does not fit {m}x{k}x{n} on {T} tiles")
    mode = one_of(ch, "params", path, MODES)
    km = gemm.K_MULTIPLE[fp8]
    rs, g = pn * pk, _groups(m, pm, B)
    cg = max(1, 4 // we)  # w, output, bias and partials split n at whole words of w
    c16 = 0 if cg == 2 else cg
    out_align = one_of(ch, "out_align", path, (1, gemm.N_MULTIPLE)) if "out_align" in ch else 1
    out = canonical(L(m, n, 2, pm, pn, row_stride=rs, col_stride=pk, row_groups=g, mem="il" if pk == 1 else "std",
                      col_grain=c16, col_align=out_align))
    d = Derived(out)
    d.needs[0] = canonical(L(m, k, xe, pm, pk, replicas=pn, row_stride=rs, col_stride=1, rep_stride=pk,
                             row_groups=g, mem="il", col_align=km))
    d.params.append((wkey, canonical(L(k, n, we, pk, pn, replicas=pm, row_stride=1, col_stride=pk, rep_stride=rs,
                                       mem="il", row_align=km, col_align=gemm.N_MULTIPLE, row_grain=max(1, 4 // xe))), mode,
                     None))
    if len(o.reads) > 2:
        d.params.append((o.reads[2][2], canonical(L(1, n, 2, 1, pn, replicas=pm, col_stride=pk, rep_stride=rs,
                                                   col_grain=c16)), mode, None))
    if xkind == "param":
        d.params.append((xkey, d.needs.pop(0), mode, None))
    homes(ch, path, d)
    grid = out
    if pk > 1:
        part = canonical(L(m, n, 4, pm, pn, replicas=pk, row_stride=rs, col_stride=pk, rep_stride=1, row_groups=g,
                           mem="il", col_grain=cg))  # split like w and the output
        recv = canonical(L(m, n, 4, pm, pn, replicas=pk // 2, row_stride=rs, col_stride=pk, rep_stride=2,
                           row_groups=g, col_grain=cg))
        d.bufs += [("partials", part, "compute"), ("received partial", recv, "compute")]
        d.internal = _tree(cx, part, recv, pk)
        d.internal_ends = ("partials", "received partial")
        grid = part
        d.bufs += [cx.descriptors(recv, gemm.REDUCE, cx.patched(d.params[1:]))] * len(d.internal)
    d.bufs.append(cx.descriptors(grid, gemm.GEMM[fp8], cx.patched(d.params if pk == 1 else d.params[:1])))
    d.apart = [tuple("partials" if f == "out" and pk > 1 else f for f in pair) for pair in gemm.GEMM[fp8].apart]
    rope_epilogue(cx, o, out, d, ch, path)
    return d


def _attention(cx: Ctx, o, ch: dict, path: str) -> Derived:
    if isinstance(ch, dict) and "ring" in ch:
        return ring(cx, o, ch, path)
    T, B = cx.T, cx.batch
    a = o.op.attrs
    qv, kv = o.graph.value(o.op.inputs[0]), o.graph.value(o.op.inputs[1])
    sq, sk, H, D = qv.shape[1], kv.shape[1], a.heads, a.head_dim
    nq = integer(ch, "query_blocks", path, 1, sq)
    ns = one_of(ch, "key_splits", path, tuple(1 << i for i in range(7)))
    mode = one_of(ch, "mode", path, ("streaming", "materialized"))
    if (B * H * nq * ns > T and (nq, ns) != (1, 1)) or (ns > 1 and ns > sk // att.PAD):
        raise Invalid(f"{path}: {nq} query blocks x {ns} key splits of {B}x{H} groups do not fit {T} tiles")
    qb, kb = ceil(sq / nq), ceil(sk / ns)
    if mode == "materialized" and kb <= att.STREAM_PANEL:
        raise Invalid(f"{path}.mode: materialized is invalid for {kb} keys per split; valid: streaming")
    Q = H * ns
    gs = nq * Q if ns > 1 else 0
    out = canonical(L(B * sq, H * D, 2, B * nq, H, row_stride=Q, col_stride=ns, row_groups=B, group_stride=gs))
    d = Derived(out)
    d.needs[0] = canonical(L(B * sq, H * D, 2, B * nq, H, replicas=ns, row_stride=Q, col_stride=ns, rep_stride=1,
                             row_groups=B, group_stride=gs, mem="il", col_align=att.PAD))
    kvn = canonical(L(B * sk, H * D, 2, B * ns, H, replicas=nq, row_stride=1, col_stride=ns, rep_stride=Q,
                      row_groups=B, group_stride=nq * Q, mem="il", row_align=att.PAD, col_align=att.PAD))
    d.needs[1] = d.needs[2] = kvn
    cells = canonical(L(B * sq, H * D, 2, B * nq, H, replicas=ns, row_stride=Q, col_stride=ns, rep_stride=1,
                        row_groups=B, group_stride=out["group_stride"]))
    il, std = att.scratch_bytes(qb, kb, D, mode == "streaming")
    d.bufs += [("scratch (probabilities, accumulator)", per_block(cells, il, "il"), "compute"),
               ("scratch (scores, softmax state)", per_block(cells, std), "compute"),
               cx.descriptors(cells, att.STREAMING if mode == "streaming" else att.MATERIALIZED, 0)]
    if ns > 1:
        state = per_block(cells, att.state_bytes(qb, D))
        recv = per_block(canonical(dict(cells, replicas=ns // 2, rep_stride=2)), att.state_bytes(qb, D))
        d.bufs += [("softmax state", state, "compute"), ("received softmax state", recv, "compute")]
        d.internal = _tree(cx, state, recv, ns)
        d.internal_ends = ("softmax state", "received softmax state")
        d.bufs += [cx.descriptors(recv, att.MERGE, 0)] * len(d.internal)
    return d


_CODELET = {OpKind.ADD: vector.ADD, OpKind.GELU: vector.GELU, OpKind.CAST: vector.CAST,
            OpKind.LAYERNORM: vector.LAYERNORM, OpKind.BROADCAST: vector.COPY}


def _contiguous(lay: dict) -> bool:
    return lay["group_stride"] == (lay["pr"] // lay["row_groups"]) * lay["row_stride"]


def _beside_each_block(lay: dict, rows: int, cols: int, elem: int, cg: int) -> dict:
    """A [rows, cols] operand whole (its columns split as the output's) beside every row block of `lay`."""
    return canonical(L(rows, cols, elem, 1, lay["pc"], replicas=lay["pr"], start=lay["start"],
                       col_stride=lay["col_stride"], rep_stride=lay["row_stride"], col_grain=cg))


def _elementwise(cx: Ctx, o, ch: dict, path: str) -> Derived:
    k = o.op.kind
    out_v = o.graph.value(o.op.outputs[0])
    rows, cols = matrix_of(out_v.shape)
    lay = output_layout(ch, path, cx.T, rows, cols, out_v.dtype.itemsize)
    if k in (OpKind.ADD, OpKind.LAYERNORM, OpKind.CONCAT) and lay["replicas"] > 1:
        raise Invalid(f"{path}.output.replicas: {lay['replicas']} is invalid for {k.value}; valid: 1")
    if k is OpKind.LAYERNORM and lay["pc"] > 1 and rows > 64:
        raise Invalid(f"{path}.output.pc: {lay['pc']} is invalid: column-split LayerNorm only for at most 64 rows")
    d = Derived(lay, out_from_exchange=k is OpKind.CONCAT)
    if k is OpKind.CONCAT:
        b, t = out_v.shape[0], out_v.shape[1]
        off = 0
        for i, name in enumerate(o.op.inputs):
            n = o.graph.value(name).shape[1]
            d.needs[i] = ("rows", lay, tuple((j * t + off, j * n, n) for j in range(b)))
            off += n
        return d
    has_params = any(kind == "param" for _, kind, _, _ in o.reads)
    mode = one_of(ch, "params", path, MODES) if has_params else None
    for i, kind, key, window in o.reads:
        v = _shape_of(kind, key, cx.g, cx.prog.params, cx.index)
        sr, sc = matrix_of(v.shape)
        if window is not None:
            sc = window[1] - window[0]
        cg = lay.get("col_grain") or max(1, 4 // lay["elem"])  # inputs split columns where the output does
        if (sr, sc) == (rows, cols):
            need = canonical(dict(lay, elem=v.dtype.itemsize, mem="any", col_grain=cg))
        elif k is OpKind.BROADCAST or sr == 1 or len(v.shape) == 1:
            if lay["replicas"] > 1 or not _contiguous(lay):
                raise Invalid(f"{path}.output: a broadcast operand needs an unreplicated layout with contiguous groups")
            need = _beside_each_block(lay, 1, sc, 2, cg)
        elif kind == "param" and lay["row_groups"] > 1 and sr * lay["row_groups"] == rows and lay["replicas"] == 1 \
                and _contiguous(lay):
            gr, rs = lay["row_groups"], lay["row_stride"]
            need = canonical(L(sr, sc, v.dtype.itemsize, lay["pr"] // gr, lay["pc"], replicas=gr, start=lay["start"],
                               row_stride=rs, col_stride=lay["col_stride"], rep_stride=lay["pr"] // gr * rs,
                               col_grain=cg))
        elif kind == "param" and 1 < sr < rows and rows % sr == 0 and lay["replicas"] == 1 and _contiguous(lay) \
                and not (np.cumsum(row_sizes(lay)) % sr).any():  # a table whole beside each block of whole images
            need = _beside_each_block(lay, sr, sc, v.dtype.itemsize, cg)
        elif kind == "param" and sr == rows and lay["replicas"] == 1 and _contiguous(lay):
            need = canonical(dict(lay, elem=v.dtype.itemsize, mem="std", row_align=1, col_align=1, col_grain=cg))
        else:
            raise Invalid(f"{path}: input {i} of shape {tuple(v.shape)} cannot be combined with the output layout")
        if kind == "param":
            d.params.append((key, dict(need, mem="std") if need["mem"] == "any" else need, mode, None))
        else:
            d.needs[i] = need
    homes(ch, path, d)
    codelet = _CODELET[k]
    d.bufs.append(cx.descriptors(lay, codelet, cx.patched(d.params)))
    if k is OpKind.LAYERNORM:
        d.bufs.append(("scratch (statistics)", per_block(lay, vector.layernorm_scratch(cx.target)), "compute"))
        if lay["pc"] > 1:
            st_bytes = int(8 * row_sizes(lay).max())
            stats, recv = per_block(lay, st_bytes), per_block(lay, st_bytes * (lay["pc"] - 1))
            d.bufs += [("statistics", stats, "compute"), ("received statistics", recv, "compute"),
                       cx.descriptors(lay, vector.LAYERNORM_STATS, 0)]
            bt = block_tiles(lay, cx.T)[0]
            pc = lay["pc"]
            src = np.concatenate([bt[:, j] for j in range(pc)])
            dst = np.concatenate([bt[:, [jj for jj in range(pc) if jj != j]] for j in range(pc)])
            d.internal = [block_moves(cx.T, cx.target, src, dst, np.full(len(src), -(-st_bytes // 8) * 8))]
            d.internal_ends = ("statistics", "received statistics")
    get(ch, "output", path)
    return d
