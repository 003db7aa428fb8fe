"""The checker's own reading of a recorded choice: which buffers, in which layouts, each op needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil, prod

import numpy as np

from .. import codelets as cl
from ..ir.graph import OpKind
from .tiles import block_owners


@dataclass
class Derived:
    out: dict
    needs: dict = field(default_factory=dict)  # input index -> layout dict (None: written in place)
    params: list = field(default_factory=list)  # (param key, layout dict, mode)
    scratch: np.ndarray | None = None
    rope: dict | None = None
    out_from_exchange: bool = False


def L(rows, cols, elem, pr=1, pc=1, replicas=1, start=0, row_stride=0, col_stride=1, rep_stride=0, row_groups=1,
      mem="std", flat=False) -> dict:
    return {"rows": rows, "cols": cols, "elem": elem, "pr": pr, "pc": pc, "replicas": replicas, "start": start,
            "row_stride": row_stride, "col_stride": col_stride, "rep_stride": rep_stride, "row_groups": row_groups,
            "flat": flat, "mem": mem, "row_align": 1, "col_align": 1}


def matrix_of(shape) -> tuple[int, int]:
    return (prod(shape[:-1]) if len(shape) > 1 else 1), shape[-1]


def _groups(rows: int, pr: int, batch: int) -> int:
    return batch if pr % batch == 0 and rows % batch == 0 else 1


def _shape_of(kind, key, g, params, index):
    if kind == "param":
        return params[key][0]
    if kind == "input":
        return g.value(key)
    o = index[key]
    return o.graph.value(o.op.outputs[0])


def derive(o, choice: dict, g, params, consumers, index, target, batch) -> Derived:
    k = o.op.kind
    T = target.tiles
    out_v = o.graph.value(o.op.outputs[0])
    rec_out = choice["output"]
    if k is OpKind.MATMUL:
        return _matmul(o, choice, g, params, consumers, index, target, batch, out_v, rec_out)
    if k is OpKind.ATTENTION:
        return _attention(o, choice, target, batch, rec_out)
    lay = dict(rec_out)
    rows, cols = matrix_of(out_v.shape)
    if (lay["rows"], lay["cols"], lay["elem"]) != (rows, cols, out_v.dtype.itemsize) or lay["flat"]:
        raise ValueError(f"output layout {rows}x{cols}x{out_v.dtype.itemsize}B expected")
    if lay["pr"] * lay["pc"] * lay["replicas"] > T * max(1, lay["replicas"]) or lay["pr"] > rows or lay["pc"] > cols:
        raise ValueError("output layout has more blocks than items or tiles")
    if k in (OpKind.ADD, OpKind.LAYERNORM, OpKind.CONCAT) and lay["replicas"] > 1:
        raise ValueError(f"{k.value} cannot run on a replicated layout")
    if k is OpKind.LAYERNORM and lay["pc"] > 1 and rows > 64:
        raise ValueError("column-split LayerNorm is only for tensors of at most 64 rows")
    d = Derived(lay, out_from_exchange=k is OpKind.CONCAT)
    mode = choice.get("params")
    for i, kind, key, window in o.reads:
        if k is OpKind.CONCAT:
            d.needs[i] = None
            continue
        v = _shape_of(kind, key, g, params, index)
        sr, sc = matrix_of(v.shape)
        if window is not None:
            sc = window[1] - window[0]
        if (sr, sc) == (rows, cols):
            need = dict(lay, elem=v.dtype.itemsize, mem="std" if k is OpKind.CAST else lay["mem"])
        elif k is OpKind.BROADCAST or sr == 1 or len(v.shape) == 1:
            if lay["replicas"] > 1:
                raise ValueError("broadcast operand on a replicated layout")
            need = L(1, sc, 2, 1, lay["pc"], replicas=lay["pr"], start=lay["start"], col_stride=lay["col_stride"],
                     rep_stride=lay["row_stride"] or lay["pc"])
        elif kind == "param" and lay["row_groups"] > 1 and sr * lay["row_groups"] == rows:
            gr = lay["row_groups"]
            rs = lay["row_stride"] or lay["pc"]
            need = L(sr, sc, v.dtype.itemsize, lay["pr"] // gr, lay["pc"], replicas=gr, start=lay["start"],
                     row_stride=rs, col_stride=lay["col_stride"], rep_stride=lay["pr"] // gr * rs)
        else:
            raise ValueError(f"input {i} of shape {v.shape} cannot be combined with the output layout")
        if kind == "param":
            if mode not in ("resident", "staged"):
                raise ValueError("parameter mode must be resident or staged")
            d.params.append((key, need, mode))
        else:
            d.needs[i] = need
    if k is OpKind.LAYERNORM:
        d.scratch = block_owners(lay, T) * cl.layernorm_scratch(target)
    return d


def _matmul(o, choice, g, params, consumers, index, target, batch, out_v, rec_out) -> Derived:
    T = target.tiles
    pm, pn, pk, mode = choice["pm"], choice["pn"], choice["pk"], choice.get("params")
    _, xkind, xkey, _ = o.reads[0]
    xv = _shape_of(xkind, xkey, g, params, index)
    wkey = o.reads[1][2]
    wv = params[wkey][0]
    m, kk = matrix_of(xv.shape)
    n = wv.shape[1]
    if min(pm, pn, pk) < 1 or pm * pn * pk > T or pm > m or pn > n or pk > kk:
        raise ValueError(f"grid {pm}x{pn}x{pk} does not fit {m}x{kk}x{n} on {T} tiles")
    if mode not in ("resident", "staged"):
        raise ValueError("weights must be resident or staged")
    rs = pn * pk
    gm = _groups(m, pm, batch)
    out = L(m, n, 2, pm, pn, row_stride=rs, col_stride=pk, row_groups=gm)
    if rec_out != out:
        raise ValueError("recorded output layout is not the grid's output layout")
    d = Derived(out)
    d.needs[0] = L(m, kk, xv.dtype.itemsize, pm, pk, replicas=pn, row_stride=rs, col_stride=1, rep_stride=pk,
                   row_groups=gm, mem="il")
    d.params.append((wkey, L(kk, n, wv.dtype.itemsize, pk, pn, replicas=pm, row_stride=1, col_stride=pk,
                             rep_stride=rs, mem="il"), mode))
    if len(o.reads) > 2:
        d.params.append((o.reads[2][2], L(1, n, 2, 1, pn, replicas=pm, col_stride=pk, rep_stride=rs), mode))
    if pk > 1:
        from .tiles import tile_bytes
        d.scratch = tile_bytes(L(m, n, 4, pm, pn, replicas=pk, row_stride=rs, col_stride=pk, rep_stride=1,
                                 row_groups=gm), T)
    for c in consumers[o.key]:
        if c.op.kind is OpKind.ATTENTION and c.op.attrs.rope:
            cols = sum((w[1] - w[0]) if w else n for i, kind, key, w in c.reads if i in (0, 1) and key == o.key)
            d.rope = dict(out, elem=max(1, ceil(8 * cols / n)))
            break
    return d


def _attention(o, choice, target, batch, rec_out) -> Derived:
    T = target.tiles
    a = o.op.attrs
    qv = o.graph.value(o.op.inputs[0])
    kv = o.graph.value(o.op.inputs[1])
    sq, sk, H, D = qv.shape[1], kv.shape[1], a.heads, a.head_dim
    nq = choice["query_blocks"]
    streaming = choice["mode"] == "streaming"
    if nq < 1 or nq > sq or batch * H * nq > T:
        raise ValueError(f"{nq} query blocks of {sq} tokens for {batch}x{H} groups do not fit {T} tiles")
    out = L(batch * sq, H * D, 2, batch * nq, H, row_stride=H, row_groups=batch)
    if rec_out != out:
        raise ValueError("recorded output layout is not the attention split's layout")
    kvn = L(batch * sk, H * D, 2, batch, H, replicas=nq, row_stride=nq * H, rep_stride=H, row_groups=batch)
    d = Derived(out, needs={0: out, 1: kvn, 2: kvn})
    d.scratch = block_owners(out, T) * cl.attention_scratch(ceil(sq / nq), sk, D, streaming)
    return d
