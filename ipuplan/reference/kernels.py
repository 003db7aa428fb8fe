"""Reference semantics per op kind: one numpy function each, parameterized by the numerics policy."""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import erf as _erf

from ..ir.graph import DType, Op, OpKind, Value
from ..numerics import gemm, round_to


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def matmul(op: Op, ins, vals: list[Value], out: Value, pol) -> np.ndarray:
    x, w = ins[0], ins[1]
    a = op.attrs
    if pol.exact:
        y = _f32(np.matmul(x, w))
    else:
        operand = "f8" if vals[0].dtype.is_fp8 else "f16"
        y = gemm(x, w, pol.accumulation[operand], pol.chunk)
    if a.x_scale or a.w_scale:
        y = np.ldexp(y, a.x_scale + a.w_scale).astype(np.float32)
    if len(ins) == 3:
        y = y + ins[2]
    return y


def add(op, ins, vals, out, pol):
    return _f32(ins[0] + ins[1])


def layernorm(op, ins, vals, out, pol):
    x = _f32(ins[0])
    mean = x.mean(-1, keepdims=True, dtype=np.float32)
    c = x - mean  # centered variance, as the tile codelet computes it
    var = (c * c).mean(-1, keepdims=True, dtype=np.float32)
    return c / np.sqrt(var + np.float32(op.attrs.eps)) * ins[1] + ins[2]


def gelu(op, ins, vals, out, pol):
    x = _f32(ins[0])
    if op.attrs.approximate:
        k = np.float32(np.sqrt(2.0 / np.pi))
        return 0.5 * x * (1.0 + np.tanh(k * (x + np.float32(0.044715) * x * x * x)))
    return _f32(0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0)))))


def _rope(x: np.ndarray, sin: np.ndarray, cos: np.ndarray, prefix: int) -> np.ndarray:
    """Interleaved 2-D RoPE on tokens >= prefix: pairs (x0, x1) -> (x0 cos - x1 sin, x1 cos + x0 sin)."""
    body = x[:, :, prefix:]
    rot = np.stack([-body[..., 1::2], body[..., 0::2]], -1).reshape(body.shape)
    return np.concatenate([x[:, :, :prefix], body * cos + rot * sin], axis=2)


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
    s = np.matmul(qh, kh.transpose(0, 1, 3, 2)) * np.float32(a.scale)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(-1, keepdims=True)
    o = np.matmul(p, vh)
    return o.transpose(0, 2, 1, 3).reshape(b, sq, a.heads * a.head_dim)


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
