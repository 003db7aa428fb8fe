"""Reference semantics per op kind: one numpy function each, parameterized by the numerics policy."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..codelets import attention as att
from ..codelets import gemm, vector
from ..ir.graph import DType, Op, OpKind, Value
from ..layout import Layout, MemClass
from ..layout.geometry import balanced, balanced_grains, grain
from ..numerics import round_to


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def matmul(op: Op, ins, vals: list[Value], out: Value, pol) -> np.ndarray:
    x, w = ins[0], ins[1]
    a = op.attrs
    bias = ins[2] if len(ins) == 3 else None
    if pol.exact:
        y = _f32(np.matmul(x, w))
        if a.x_scale or a.w_scale:
            y = np.ldexp(y, a.x_scale + a.w_scale).astype(np.float32)
        return y + bias if bias is not None else y
    acc = pol.accumulation["f8" if vals[0].dtype.is_fp8 else "f16"]
    pk = pol.choice["pk"] if pol.choice else 1
    if pol.choice and pol.choice.get("rotate"):
        y = _rotated(x, w, vals[0], pol.choice, acc, pol.chunk)
    elif pk == 1:
        y = gemm.amp(x, w, acc, pol.chunk)
    else:  # plan-faithful: each k-slice of the plan on its own, partials summed by the plan's tree
        kb = np.concatenate([[0], np.cumsum(balanced_grains(x.shape[-1], pk, grain(vals[0].dtype.itemsize)))])
        parts = [gemm.amp(x[..., kb[r]:kb[r + 1]], w[kb[r]:kb[r + 1]], acc, pol.chunk) for r in range(pk)]
        y = _tree(parts, gemm.add_partials)
    return gemm.finish(y, a.x_scale + a.w_scale, bias)


def _rotated(x, w, xv: Value, ch: dict, acc: DType, chunk: int) -> np.ndarray:
    """Plan-faithful rotating matmul: k in r slices of whole AMP micro-blocks; output block (i, j) starts with
    slice (i + j) mod r and adds the next slice of its ring at every step: each slice's product added in F32,
    or (accumulating in the output) the AMP's own accumulation continued from one slice into the next."""
    r = ch["rotate"]
    fp8 = xv.dtype.is_fp8
    kb = np.concatenate([[0], np.cumsum(balanced_grains(x.shape[-1], r, gemm.k_multiple(fp8)))])
    out = Layout(**{**ch["output"], "mem": MemClass(ch["output"]["mem"])})
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    rb = np.searchsorted(out.row_bounds(), np.arange(x2.shape[0]), side="right") - 1
    cb = np.searchsorted(out.col_bounds(), np.arange(w.shape[1]), side="right") - 1
    if ch.get("accumulate") == "out":
        # rows of row blocks i and columns of column blocks j with (i + j) = s (mod r) start at slice s:
        # per row class and start, one chain of r slice products
        y = np.empty((x2.shape[0], w.shape[1]), np.float32)
        for ri in range(r):
            rows = np.flatnonzero(rb % r == ri)
            for s in range(r):
                cols = np.flatnonzero(cb % r == (s - ri) % r)
                if not len(rows) or not len(cols):
                    continue
                part = None
                for t in range(r):
                    q = (s + t) % r
                    part = gemm.amp(x2[rows, kb[q]:kb[q + 1]], w[kb[q]:kb[q + 1]][:, cols], acc, chunk, part)
                y[np.ix_(rows, cols)] = part
        return y.reshape(*lead, -1)
    parts = np.stack([gemm.amp(x2[:, kb[q]:kb[q + 1]], w[kb[q]:kb[q + 1]], acc, chunk) for q in range(r)])
    start = (rb[:, None] + cb[None, :]) % r
    rows, cols = np.arange(parts.shape[1])[:, None], np.arange(parts.shape[2])[None, :]
    y = parts[start, rows, cols]
    for t in range(1, r):
        y = gemm.add_partials(y, parts[(start + t) % r, rows, cols])
    return y.reshape(*lead, -1)


def _tree(parts: list, combine):
    """Pairwise rounds: in round t slot r takes slot r + 2^t (((p0 + p1) + (p2 + p3)) + ...)."""
    parts = list(parts)
    step = 1
    while step < len(parts):
        for r in range(0, len(parts), 2 * step):
            if r + step < len(parts):
                parts[r] = combine(parts[r], parts[r + step])
        step *= 2
    return parts[0]


def add(op, ins, vals, out, pol):
    return _f32(ins[0] + ins[1])


def layernorm(op, ins, vals, out, pol):
    x = _f32(ins[0])
    ch = pol.choice
    if ch and ch["output"]["pc"] > 1:  # plan-faithful: statistics summed per column block, then combined
        lay = Layout(**{**ch["output"], "mem": MemClass(ch["output"]["mem"])})
        cb = lay.col_bounds()
        parts = [vector.layernorm_partial(x[..., cb[j]:cb[j + 1]]) for j in range(lay.pc)]
        return vector.layernorm_split(x, parts, x.shape[-1], ins[1], ins[2], op.attrs.eps)
    return vector.layernorm(x, ins[1], ins[2], op.attrs.eps)


def gelu(op, ins, vals, out, pol):
    return vector.gelu(ins[0], op.attrs.approximate)


def _rope(x: np.ndarray, sin: np.ndarray, cos: np.ndarray, prefix: int) -> np.ndarray:
    """2-D RoPE on tokens >= prefix of [b, heads, tokens, head_dim]."""
    return np.concatenate([x[:, :, :prefix], vector.rope(x[:, :, prefix:], sin, cos)], axis=2)


def attention(op, ins, vals, out, pol):
    a = op.attrs
    q, k, v = (_f32(t) for t in ins[:3])
    b, sq, _ = q.shape
    sk = k.shape[1]

    def heads(t, s):
        return t.reshape(b, s, a.heads, a.head_dim).transpose(0, 2, 1, 3)

    qh, kh, vh = heads(q, sq), heads(k, sk), heads(v, sk)
    if a.rope:
        qh = pol.store(_rope(qh, ins[3], ins[4], a.rope_prefix), DType.F16)
        kh = pol.store(_rope(kh, ins[3], ins[4], a.rope_prefix), DType.F16)
    if pol.choice:  # plan-faithful: the codelet's arithmetic over the plan's key splits, merged by its tree
        ns, streaming = pol.choice["key_splits"], pol.choice["mode"] == "streaming"
        g = lambda t: np.ascontiguousarray(t.reshape(b * a.heads, t.shape[2], a.head_dim))
        qg, kg, vg = g(qh), g(kh), g(vh)
        if pol.choice.get("ring"):
            o = att.finish(_ring(qg, kg, vg, a.scale, pol.choice, pol.chunk)).reshape(b, a.heads, sq, a.head_dim)
            return o.transpose(0, 2, 1, 3).reshape(b, sq, a.heads * a.head_dim)
        kb = np.concatenate([[0], np.cumsum(balanced(sk, ns))])
        states = [att.block(qg, kg[:, kb[s]:kb[s + 1]], vg[:, kb[s]:kb[s + 1]], a.scale, streaming, pol.chunk)
                  for s in range(ns)]
        o = att.finish(_tree(states, att.merge)).reshape(b, a.heads, sq, a.head_dim)
        return o.transpose(0, 2, 1, 3).reshape(b, sq, a.heads * a.head_dim)
    s = np.matmul(qh, kh.transpose(0, 1, 3, 2)) * np.float32(a.scale)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(-1, keepdims=True)
    o = np.matmul(p, vh)
    return o.transpose(0, 2, 1, 3).reshape(b, sq, a.heads * a.head_dim)


def _ring(qg, kg, vg, scale: float, ch: dict, chunk: int):
    """Plan-faithful ring attention: keys in r balanced panels; query block q starts with panel q mod r and merges
    the next panel of its ring at every step into its running state, or (carrying it) continues the running
    state's online softmax over the next panel."""
    r, nq = ch["ring"], ch["query_blocks"]
    sq, sk = qg.shape[1], kg.shape[1]
    kb = np.concatenate([[0], np.cumsum(balanced(sk, r))])
    qblock = np.repeat(np.arange(nq), balanced(sq, nq))  # the query block of every row
    if ch.get("carry"):  # rows whose block is c mod r take panels c, c + 1, ... in one stream
        acc = np.empty(qg.shape[:2] + (vg.shape[2],), np.float32)
        m, den = np.empty(qg.shape[:2], np.float32), np.empty(qg.shape[:2], np.float32)
        for c in range(r):
            rows = np.flatnonzero(qblock % r == c)
            st = None
            for t in range(r):
                s = (c + t) % r
                st = att.block(np.ascontiguousarray(qg[:, rows]), kg[:, kb[s]:kb[s + 1]], vg[:, kb[s]:kb[s + 1]], scale,
                               True, chunk, init=st)
            acc[:, rows], m[:, rows], den[:, rows] = st
        return acc, m, den
    states = [att.block(qg, kg[:, kb[s]:kb[s + 1]], vg[:, kb[s]:kb[s + 1]], scale, True, chunk) for s in range(r)]

    def at(t):
        pick = (qblock + t) % r
        return tuple(np.choose(pick[None, :, None] if x.ndim == 3 else pick[None, :], [s[j] for s in states])
                     for j, x in enumerate(states[0]))
    run = at(0)
    for t in range(1, r):
        run = att.merge(run, at(t))
    return run


def cast(op, ins, vals, out, pol):
    if pol.exact:
        return np.ldexp(_f32(ins[0]), -op.attrs.scale).astype(np.float32)
    return round_to(ins[0], op.attrs.to, op.attrs.scale)


def slice_(op, ins, vals, out, pol):
    a = op.attrs
    idx = [slice(None)] * ins[0].ndim
    idx[a.axis] = slice(a.start, a.stop)
    return ins[0][tuple(idx)]


def reshape(op, ins, vals, out, pol):
    return ins[0].reshape(op.attrs.shape)


def concat(op, ins, vals, out, pol):
    return np.concatenate(ins, axis=op.attrs.axis)


def broadcast(op, ins, vals, out, pol):
    return np.broadcast_to(ins[0], op.attrs.shape).copy()


KERNELS: dict[OpKind, Callable] = {
    OpKind.MATMUL: matmul,
    OpKind.ADD: add,
    OpKind.LAYERNORM: layernorm,
    OpKind.GELU: gelu,
    OpKind.ATTENTION: attention,
    OpKind.CAST: cast,
    OpKind.SLICE: slice_,
    OpKind.RESHAPE: reshape,
    OpKind.CONCAT: concat,
    OpKind.BROADCAST: broadcast,
    # OpKind.REPEAT is structural: run.py executes the body
}
