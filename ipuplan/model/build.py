"""Expansion of a ModelSpec into the IR: stem, one structured Repeat over the encoder block, pooling head."""

from __future__ import annotations

import dataclasses
from math import sqrt

from ..errors import IRError, ModelError
from ..ir.graph import (AttentionAttrs, CastAttrs, ConcatAttrs, DType, GeluAttrs, Graph, LayerNormAttrs,
                        MatmulAttrs, NoAttrs, Op, OpKind, RepeatAttrs, Role, ShapeAttrs, SliceAttrs, Value)
from ..ir.ops import infer
from ..ir.verify import verify
from .spec import Activation, ModelSpec, Precision
from .stage import Stage


class _Builder:
    """Appends ops in schedule order, inferring each output's type from the op rules."""

    def __init__(self, name: str, spec: ModelSpec, scales: dict | None = None, scope: str = ""):
        self.name = name
        self.spec = spec
        # GEMM key -> (x, w) scales not yet used (shared with the Repeat body's builder), and every GEMM key
        self.scales = {k: (x, w) for k, x, w in spec.fp8_scales} if scales is None else scales
        self.scope = scope
        self.gemms: list[str] = []
        self.values: dict[str, Value] = {}
        self.ops: list[Op] = []
        self.inputs: list[str] = []
        self.fp8 = spec.precision is Precision.FP8
        self.wdtype = DType.F143 if self.fp8 else DType.F16

    def value(self, name: str, shape, dtype: DType, role: Role, scale: int = 0) -> str:
        if name in self.values:
            raise IRError(f"{self.name}: value `{name}` declared twice")
        self.values[name] = Value(name, tuple(shape), dtype, role, scale)
        if role in (Role.INPUT, Role.PARAM, Role.CONST):
            self.inputs.append(name)
        return name

    def param(self, name: str, shape, dtype: DType = DType.F16, scale: int | None = None) -> str:
        v = self.value(name, shape, dtype, Role.PARAM)
        if dtype.is_fp8:
            s = self.spec.fp8_scale if scale is None else scale
            self.values[name] = Value(name, tuple(shape), dtype, Role.PARAM, s)
        return v

    def op(self, kind: OpKind, name: str, inputs, attrs=NoAttrs()) -> str:
        op = Op(kind, name, tuple(inputs), (name,), attrs)
        (shape, dtype), = infer(op, [self.values[n] for n in inputs])
        self.value(name, shape, dtype, Role.ACT, attrs.scale if isinstance(attrs, CastAttrs) else 0)
        self.ops.append(op)
        return name

    # composite helpers -----------------------------------------------------------------------------

    def linear(self, name: str, x: str, w: str, b: str | None) -> str:
        """A GEMM with the model's operand precision: FP8 inserts an explicit scaled cast of x; the scales are
        the GEMM's own (spec.fp8_scales, keyed by the GEMM's scoped name) or the model's fixed one."""
        xs = ws = 0
        self.gemms.append(self.scope + name)
        if self.fp8:
            xs, ws = self.scales.pop(self.scope + name, (self.spec.fp8_scale, self.spec.fp8_scale))
            x = self.op(OpKind.CAST, f"{name}.x8", [x], CastAttrs(DType.F143, xs))
            self.values[w] = dataclasses.replace(self.values[w], scale=ws)
        return self.op(OpKind.MATMUL, name, [x, w] + ([b] if b else []), MatmulAttrs(xs, ws))

    def layernorm(self, name: str, x: str, g: str, b: str) -> str:
        return self.op(OpKind.LAYERNORM, name, [x, g, b], LayerNormAttrs(self.spec.norm_eps))

    def split(self, name: str, x: str, parts: list[str]) -> list[str]:
        w = self.values[x].shape[-1] // len(parts)
        ax = len(self.values[x].shape) - 1
        return [self.op(OpKind.SLICE, f"{name}.{p}", [x], SliceAttrs(ax, i * w, (i + 1) * w))
                for i, p in enumerate(parts)]

    def graph(self, outputs: list[str], meta=()) -> Graph:
        return Graph(self.name, tuple(self.values.values()), tuple(self.ops), tuple(self.inputs), tuple(outputs),
                     tuple(meta))


def _encoder_body(spec: ModelSpec, batch: int, scales: dict, gemms: list) -> Graph:
    s = spec
    W, T = s.width, s.tokens
    b = _Builder("block", s, scales, "encoder/")
    b.gemms = gemms
    h = b.value("h", (batch, T, W), DType.F16, Role.INPUT)
    for n in ("ln1", "ln2"):
        b.param(f"{n}.g", (W,))
        b.param(f"{n}.b", (W,))
    if s.fuse_qkv:
        b.param("qkv.w", (W, 3 * W), b.wdtype)
        b.param("qkv.b", (3 * W,))
    else:
        for p in "qkv":
            b.param(f"{p}.w", (W, W), b.wdtype)
            b.param(f"{p}.b", (W,))
    b.param("o.w", (W, W), b.wdtype)
    b.param("o.b", (W,))
    b.param("fc1.w", (W, s.mlp), b.wdtype)
    b.param("fc1.b", (s.mlp,))
    b.param("fc2.w", (s.mlp, W), b.wdtype)
    b.param("fc2.b", (W,))
    seq = [n for n in b.inputs if n != h]
    invariants = []
    if s.rope:
        invariants = [b.value("rope.sin", (s.patches, s.head_dim), DType.F32, Role.CONST),
                      b.value("rope.cos", (s.patches, s.head_dim), DType.F32, Role.CONST)]

    a = b.layernorm("ln1", h, "ln1.g", "ln1.b")
    if s.fuse_qkv:
        q, k, v = b.split("qkv", b.linear("qkv", a, "qkv.w", "qkv.b"), ["q", "k", "v"])
    else:
        q, k, v = (b.linear(p, a, f"{p}.w", f"{p}.b") for p in "qkv")
    att = b.op(OpKind.ATTENTION, "attn", [q, k, v] + invariants,
               AttentionAttrs(s.heads, s.head_dim, 1 / sqrt(s.head_dim), s.rope, 1 if s.class_token else 0))
    o = b.linear("o", att, "o.w", "o.b")
    h2 = b.op(OpKind.ADD, "res1", [h, o])
    n2 = b.layernorm("ln2", h2, "ln2.g", "ln2.b")
    f1 = b.linear("fc1", n2, "fc1.w", "fc1.b")
    g = b.op(OpKind.GELU, "gelu", [f1], GeluAttrs(s.activation is Activation.GELU_TANH))
    f2 = b.linear("fc2", g, "fc2.w", "fc2.b")
    out = b.op(OpKind.ADD, "res2", [h2, f2])
    body = b.graph([out])
    return body, h, out, seq, invariants


STAGE_INPUT = "stage.in"  # the residual stream a later pipeline stage receives over the link
STAGE_OUTPUT = "stage.send"  # the residual stream an earlier stage hands on


def build_graph(spec: ModelSpec, batch: int = 1, stage: Stage | None = None) -> Graph:
    """The whole model as a verified Graph for `batch` images (patches already packed on the host); with `stage`,
    that pipeline stage alone: a later stage's input is the residual stream (STAGE_INPUT), an earlier stage's
    output is the residual stream after its last layer."""
    if batch < 1:
        raise IRError(f"batch must be positive, got {batch}")
    s = spec
    st = (stage or Stage.whole(s.layers)).check(s.layers)
    W, T, L = s.width, s.tokens, st.count
    b = _Builder(s.name, s)
    if st.stem:
        x = _stem(b, s, batch)
    else:  # the link writes the stream where the host writes inputs; the Repeat's carried buffer is its own
        x = b.op(OpKind.BROADCAST, "stage.receive", [b.value(STAGE_INPUT, (batch, T, W), DType.F16, Role.INPUT)],
                 ShapeAttrs((batch, T, W)))
    if not st.stem:
        b.scales.pop("embed", None)  # its scales belong to the first stage
    if not st.head:
        for k in [k for k in b.scales if k.startswith("head.") or k == "proj"]:
            del b.scales[k]
    body, h_in, h_out, seq, inv = _encoder_body(s, batch, b.scales, b.gemms)
    outer_seq = [b.param(f"layers.{n}", (L,) + body.value(n).shape, body.value(n).dtype, body.value(n).scale)
                 for n in seq]
    outer_inv = [b.value(n, body.value(n).shape, body.value(n).dtype, Role.CONST) for n in inv]
    x = b.op(OpKind.REPEAT, "encoder", [x] + outer_seq + outer_inv,
             RepeatAttrs(L, body, ((h_in, h_out),), tuple(seq), tuple(inv)))
    if not st.head:  # the stream leaves from a buffer of its own, not the Repeat's carried result
        x = b.op(OpKind.BROADCAST, STAGE_OUTPUT, [x], ShapeAttrs((batch, T, W)))
    if st.head:
        if s.post_norm:
            b.param("ln_post.g", (W,))
            b.param("ln_post.b", (W,))
            x = b.layernorm("ln_post", x, "ln_post.g", "ln_post.b")
        x = _pool_head(b, s, x, batch)
    if b.scales:
        k = sorted(b.scales)[0]
        raise ModelError("--scales", None, f"{k} is not a GEMM of {s.name}" if b.fp8 else
                         f"FP8 scales given for an {s.precision.value} model ({k})",
                         f"valid: {', '.join(b.gemms)}" if b.fp8 else "scales apply to precision fp8")
    meta = (("batch", batch), ("layers", L)) + ((("first", st.first),) if stage is not None else ())
    return verify(b.graph([x], meta=meta))


def _stem(b: _Builder, s: ModelSpec, batch: int) -> str:
    """Patch embedding, class token, positions and pre-norm: the residual stream entering layer 0."""
    W, P, T = s.width, s.patches, s.tokens
    pat = b.value("patches", (batch, P, s.patch_dim), DType.F16, Role.INPUT)
    b.param("embed.w", (s.patch_dim, W), b.wdtype)
    if s.patch_bias:
        b.param("embed.b", (W,))
    b.param("pos", (T, W))
    if s.class_token:
        b.param("cls", (1, 1, W))
    if s.pre_norm:
        b.param("ln_pre.g", (W,))
        b.param("ln_pre.b", (W,))

    x = b.linear("embed", pat, "embed.w", "embed.b" if "embed.b" in b.values else None)
    if s.class_token:
        cls = b.op(OpKind.BROADCAST, "cls.expand", ["cls"], ShapeAttrs((batch, 1, W)))
        x = b.op(OpKind.CONCAT, "tokens", [cls, x], ConcatAttrs(1))
    x = b.op(OpKind.ADD, "embed.pos", [x, "pos"])
    if s.pre_norm:
        x = b.layernorm("ln_pre", x, "ln_pre.g", "ln_pre.b")
    return x


def gemm_scales(graph: Graph) -> dict[str, tuple[int, int]]:
    """Every GEMM's (x, w) metadata scales by its scoped name, the keys of FP8 scales (a Repeat body's GEMMs as
    `REPEAT/NAME`), in schedule order."""
    out = {}

    def walk(g, scope):
        for op in g.ops:
            if op.kind is OpKind.MATMUL:
                out[scope + op.name] = (op.attrs.x_scale, op.attrs.w_scale)
            elif op.kind is OpKind.REPEAT:
                walk(op.attrs.body, f"{scope}{op.name}/")
    walk(graph, "")
    return out


def gemm_keys(graph: Graph) -> list[str]:
    return list(gemm_scales(graph))


def _pool_head(b: _Builder, s: ModelSpec, x: str, batch: int) -> str:
    W = s.width
    b.param("head.probe", (1, 1, W))
    b.param("head.q.w", (W, W), b.wdtype)
    b.param("head.q.b", (W,))
    if s.fuse_qkv:
        b.param("head.kv.w", (W, 2 * W), b.wdtype)
        b.param("head.kv.b", (2 * W,))
    else:
        for p in "kv":
            b.param(f"head.{p}.w", (W, W), b.wdtype)
            b.param(f"head.{p}.b", (W,))
    b.param("head.o.w", (W, W), b.wdtype)
    b.param("head.o.b", (W,))
    b.param("head.ln.g", (W,))
    b.param("head.ln.b", (W,))
    b.param("head.fc1.w", (W, s.head_mlp), b.wdtype)
    b.param("head.fc1.b", (s.head_mlp,))
    b.param("head.fc2.w", (s.head_mlp, W), b.wdtype)
    b.param("head.fc2.b", (W,))

    q1 = b.linear("head.q", "head.probe", "head.q.w", "head.q.b")
    q = b.op(OpKind.BROADCAST, "head.q.expand", [q1], ShapeAttrs((batch, 1, W)))
    if s.fuse_qkv:
        k, v = b.split("head.kv", b.linear("head.kv", x, "head.kv.w", "head.kv.b"), ["k", "v"])
    else:
        k, v = (b.linear(f"head.{p}", x, f"head.{p}.w", f"head.{p}.b") for p in "kv")
    att = b.op(OpKind.ATTENTION, "head.attn", [q, k, v],
               AttentionAttrs(s.head_heads, W // s.head_heads, 1 / sqrt(W // s.head_heads)))
    o = b.linear("head.o", att, "head.o.w", "head.o.b")
    n = b.layernorm("head.ln", o, "head.ln.g", "head.ln.b")
    f1 = b.linear("head.fc1", n, "head.fc1.w", "head.fc1.b")
    g = b.op(OpKind.GELU, "head.gelu", [f1], GeluAttrs(s.activation is Activation.GELU_TANH))
    f2 = b.linear("head.fc2", g, "head.fc2.w", "head.fc2.b")
    r = b.op(OpKind.ADD, "head.res", [o, f2])
    y = b.op(OpKind.RESHAPE, "pooled", [r], ShapeAttrs((batch, W)))
    if s.head_proj:
        b.param("proj.w", (W, s.head_proj), b.wdtype)
        b.param("proj.b", (s.head_proj,))
        y = b.linear("proj", y, "proj.w", "proj.b")
    return y
