"""Per-op-kind rules (arity, shape/dtype inference, FLOPs): adding an op kind touches this one table."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable, Sequence

import numpy as np

from ..errors import IRError
from .graph import (AttentionAttrs, CastAttrs, ConcatAttrs, DType, GeluAttrs, LayerNormAttrs, MatmulAttrs, NoAttrs,
                    Op, OpKind, RepeatAttrs, ShapeAttrs, SliceAttrs, Value)

Sig = tuple[tuple[int, ...], DType]


@dataclass(frozen=True)
class OpRule:
    arity: tuple[int, int]
    attrs: type
    infer: Callable[[Op, Sequence[Value]], list[Sig]]
    flops: Callable[[Op, Sequence[Value], Sequence[Value]], int]


def _fail(op: Op, msg: str) -> IRError:
    return IRError(f"{op.kind.value} `{op.name}`: {msg}")


def _infer_matmul(op: Op, ins: Sequence[Value]) -> list[Sig]:
    x, w = ins[0], ins[1]
    if len(w.shape) != 2 or x.shape[-1] != w.shape[0]:
        raise _fail(op, f"x {x.type_str()} does not contract with w {w.type_str()}")
    if x.dtype.is_fp8 != w.dtype.is_fp8:
        raise _fail(op, f"operand precisions differ ({x.dtype.short} vs {w.dtype.short})")
    if len(ins) == 3 and ins[2].shape != (w.shape[1],):
        raise _fail(op, f"bias {ins[2].type_str()} is not [{w.shape[1]}]")
    return [(x.shape[:-1] + (w.shape[1],), DType.F16)]


def _broadcast(op: Op, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise _fail(op, f"shapes {a} and {b} do not broadcast") from None


def _infer_add(op: Op, ins: Sequence[Value]) -> list[Sig]:
    return [(_broadcast(op, ins[0].shape, ins[1].shape), DType.F16)]


def _infer_layernorm(op: Op, ins: Sequence[Value]) -> list[Sig]:
    x, g, b = ins
    if g.shape != (x.shape[-1],) or b.shape != (x.shape[-1],):
        raise _fail(op, f"scale/shift {g.shape}/{b.shape} do not match last axis of {x.shape}")
    return [(x.shape, DType.F16)]


def _infer_same(op: Op, ins: Sequence[Value]) -> list[Sig]:
    return [(ins[0].shape, DType.F16)]


def _infer_attention(op: Op, ins: Sequence[Value]) -> list[Sig]:
    a: AttentionAttrs = op.attrs
    q, k, v = ins[:3]
    hd = a.heads * a.head_dim
    if len(q.shape) != 3 or q.shape[-1] != hd or k.shape[-1] != hd or v.shape != k.shape:
        raise _fail(op, f"q {q.shape}, k {k.shape}, v {v.shape} do not match {a.heads} heads of {a.head_dim}")
    if q.shape[0] != k.shape[0]:
        raise _fail(op, f"batch of q {q.shape[0]} differs from k {k.shape[0]}")
    if a.rope:
        if len(ins) != 5:
            raise _fail(op, "rope needs sin and cos tables")
        n = k.shape[1] - a.rope_prefix
        for t in ins[3:]:
            if t.shape != (n, a.head_dim):
                raise _fail(op, f"rope table {t.shape} is not [{n},{a.head_dim}]")
        if q.shape[1] != k.shape[1]:
            raise _fail(op, "rope needs self-attention (same query and key tokens)")
    elif len(ins) != 3:
        raise _fail(op, "rope tables given without rope")
    return [(q.shape, DType.F16)]


def _infer_cast(op: Op, ins: Sequence[Value]) -> list[Sig]:
    return [(ins[0].shape, op.attrs.to)]


def _infer_slice(op: Op, ins: Sequence[Value]) -> list[Sig]:
    a: SliceAttrs = op.attrs
    s = ins[0].shape
    if not (0 <= a.axis < len(s) and 0 <= a.start < a.stop <= s[a.axis]):
        raise _fail(op, f"slice axis {a.axis} [{a.start}:{a.stop}] out of range for {s}")
    return [(s[: a.axis] + (a.stop - a.start,) + s[a.axis + 1:], ins[0].dtype)]


def _infer_reshape(op: Op, ins: Sequence[Value]) -> list[Sig]:
    if prod(op.attrs.shape) != ins[0].numel:
        raise _fail(op, f"cannot reshape {ins[0].shape} to {op.attrs.shape}")
    return [(tuple(op.attrs.shape), ins[0].dtype)]


def _infer_broadcast(op: Op, ins: Sequence[Value]) -> list[Sig]:
    if _broadcast(op, ins[0].shape, op.attrs.shape) != tuple(op.attrs.shape):
        raise _fail(op, f"cannot broadcast {ins[0].shape} to {op.attrs.shape}")
    return [(tuple(op.attrs.shape), ins[0].dtype)]


def _infer_concat(op: Op, ins: Sequence[Value]) -> list[Sig]:
    ax = op.attrs.axis
    base = ins[0].shape
    for v in ins[1:]:
        if len(v.shape) != len(base) or any(a != b for i, (a, b) in enumerate(zip(v.shape, base)) if i != ax):
            raise _fail(op, f"{v.shape} does not concatenate with {base} on axis {ax}")
        if v.dtype is not ins[0].dtype:
            raise _fail(op, "dtypes differ")
    return [(base[:ax] + (sum(v.shape[ax] for v in ins),) + base[ax + 1:], ins[0].dtype)]


def _infer_repeat(op: Op, ins: Sequence[Value]) -> list[Sig]:
    a: RepeatAttrs = op.attrs
    body = a.body.value_map
    nc, ns = len(a.carried), len(a.sequences)
    if len(ins) != nc + ns + len(a.invariants):
        raise _fail(op, "input count does not match carried + sequences + invariants")
    outs = []
    for v, (bi, bo) in zip(ins[:nc], a.carried):
        if (body[bi].shape, body[bi].dtype) != (v.shape, v.dtype) or (body[bo].shape, body[bo].dtype) != (
                v.shape, v.dtype):
            raise _fail(op, f"carried `{bi}`/`{bo}` does not keep type {v.type_str()}")
        outs.append((v.shape, v.dtype))
    for v, bi in zip(ins[nc:nc + ns], a.sequences):
        if v.shape != (a.count,) + body[bi].shape or v.dtype is not body[bi].dtype:
            raise _fail(op, f"sequence {v.type_str()} is not {a.count} x {body[bi].type_str()}")
    for v, bi in zip(ins[nc + ns:], a.invariants):
        if (v.shape, v.dtype) != (body[bi].shape, body[bi].dtype):
            raise _fail(op, f"invariant {v.type_str()} does not match `{bi}`")
    return outs


def _zero(op, ins, outs) -> int:
    return 0


def _elementwise(op, ins, outs) -> int:
    return outs[0].numel


def _flops_matmul(op, ins, outs) -> int:
    return 2 * outs[0].numel * ins[1].shape[0] + (outs[0].numel if len(ins) == 3 else 0)


def _flops_attention(op, ins, outs) -> int:
    q, k = ins[0], ins[1]
    a: AttentionAttrs = op.attrs
    b, sq, sk = q.shape[0], q.shape[1], k.shape[1]
    return 4 * b * a.heads * sq * sk * a.head_dim + 5 * b * a.heads * sq * sk


def _flops_repeat(op, ins, outs) -> int:
    return op.attrs.count * sum(flops(o, op.attrs.body) for o in op.attrs.body.ops)


RULES: dict[OpKind, OpRule] = {
    OpKind.MATMUL: OpRule((2, 3), MatmulAttrs, _infer_matmul, _flops_matmul),
    OpKind.ADD: OpRule((2, 2), NoAttrs, _infer_add, _elementwise),
    OpKind.LAYERNORM: OpRule((3, 3), LayerNormAttrs, _infer_layernorm, lambda o, i, u: 8 * u[0].numel),
    OpKind.GELU: OpRule((1, 1), GeluAttrs, _infer_same, lambda o, i, u: 8 * u[0].numel),
    OpKind.ATTENTION: OpRule((3, 5), AttentionAttrs, _infer_attention, _flops_attention),
    OpKind.CAST: OpRule((1, 1), CastAttrs, _infer_cast, _elementwise),
    OpKind.SLICE: OpRule((1, 1), SliceAttrs, _infer_slice, _zero),
    OpKind.RESHAPE: OpRule((1, 1), ShapeAttrs, _infer_reshape, _zero),
    OpKind.CONCAT: OpRule((2, 64), ConcatAttrs, _infer_concat, _zero),
    OpKind.BROADCAST: OpRule((1, 1), ShapeAttrs, _infer_broadcast, _zero),
    OpKind.REPEAT: OpRule((0, 4096), RepeatAttrs, _infer_repeat, _flops_repeat),
}


def infer(op: Op, ins: Sequence[Value]) -> list[Sig]:
    """Output (shape, dtype) of `op` given its input values; raises IRError when ill-typed."""
    rule = RULES[op.kind]
    lo, hi = rule.arity
    if not lo <= len(ins) <= hi:
        raise _fail(op, f"takes {lo}..{hi} inputs, got {len(ins)}")
    if not isinstance(op.attrs, rule.attrs):
        raise _fail(op, f"attributes are {type(op.attrs).__name__}, expected {rule.attrs.__name__}")
    return rule.infer(op, ins)


def flops(op: Op, graph) -> int:
    """Floating-point operations of one execution of `op` (Repeat: all iterations)."""
    vm = graph.value_map
    return RULES[op.kind].flops(op, [vm[n] for n in op.inputs], [vm[n] for n in op.outputs])
