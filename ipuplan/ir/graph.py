"""IR data: DType, Value, Op and Graph as frozen dataclasses; Repeat is an op holding a body Graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from math import prod
from typing import Any


class DType(Enum):
    """Storage types on the device. F143/F152 are Graphcore's FP8 formats (ml_dtypes *fnuz)."""

    F32 = ("f32", 4)
    F16 = ("f16", 2)
    F143 = ("f143", 1)  # float8_e4m3fnuz: bias 8, max 240, one NaN, no inf
    F152 = ("f152", 1)  # float8_e5m2fnuz

    def __init__(self, short: str, itemsize: int):
        self.short = short
        self.itemsize = itemsize

    @property
    def is_fp8(self) -> bool:
        return self.itemsize == 1


class Role(Enum):
    """Where a value's bytes come from: host input, learned parameter, fixed constant, or computed."""

    INPUT = "input"
    PARAM = "param"
    CONST = "const"  # deterministic tables derived from the spec (e.g. RoPE sin/cos)
    ACT = "act"


class OpKind(Enum):
    MATMUL = "matmul"
    ADD = "add"
    LAYERNORM = "layernorm"
    GELU = "gelu"
    ATTENTION = "attention"
    CAST = "cast"
    SLICE = "slice"
    RESHAPE = "reshape"
    CONCAT = "concat"
    BROADCAST = "broadcast"
    REPEAT = "repeat"


@dataclass(frozen=True)
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: DType
    role: Role = Role.ACT
    scale: int = 0  # scaled formats (FP8), Poplar metadata convention: logical = stored * 2^scale

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def type_str(self) -> str:
        sc = f"*2^{self.scale}" if self.scale else ""
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]{sc}"


# --- per-kind attributes -------------------------------------------------------------------------


@dataclass(frozen=True)
class MatmulAttrs:
    """y = (x_stored @ w_stored) * 2^(x_scale + w_scale) (+ b): operand scales are metadata (logical =
    stored * 2^scale); the output is F16."""

    x_scale: int = 0
    w_scale: int = 0


@dataclass(frozen=True)
class NoAttrs:
    pass


@dataclass(frozen=True)
class LayerNormAttrs:
    eps: float


@dataclass(frozen=True)
class GeluAttrs:
    approximate: bool  # tanh form


@dataclass(frozen=True)
class AttentionAttrs:
    """Multi-head softmax attention on [B, S, heads*head_dim]; optional 2-D RoPE on tokens >= rope_prefix."""

    heads: int
    head_dim: int
    scale: float
    rope: bool = False
    rope_prefix: int = 0


@dataclass(frozen=True)
class CastAttrs:
    to: DType
    scale: int = 0  # metadata: logical = stored * 2^scale, so stored = cast(x * 2^-scale); saturates


@dataclass(frozen=True)
class SliceAttrs:
    axis: int
    start: int
    stop: int


@dataclass(frozen=True)
class ShapeAttrs:
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ConcatAttrs:
    axis: int


@dataclass(frozen=True)
class RepeatAttrs:
    """Run `body` `count` times. Op inputs: carried initial values, then stacked parameter sequences
    ([count, ...]), then invariants; op outputs: final carried values.

    carried: (body input, body output) per carried value; sequences/invariants: body input names.
    """

    count: int
    body: "Graph"
    carried: tuple[tuple[str, str], ...]
    sequences: tuple[str, ...]
    invariants: tuple[str, ...] = ()


@dataclass(frozen=True)
class Op:
    kind: OpKind
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Any = NoAttrs()


@dataclass(frozen=True)
class Graph:
    """Values and ops in a fixed topological order (the schedule the planner uses)."""

    name: str
    values: tuple[Value, ...]
    ops: tuple[Op, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    meta: tuple[tuple[str, Any], ...] = field(default=())

    @cached_property
    def value_map(self) -> dict[str, Value]:
        return {v.name: v for v in self.values}

    def value(self, name: str) -> Value:
        return self.value_map[name]

    def by_role(self, role: Role) -> tuple[Value, ...]:
        return tuple(v for v in self.values if v.role is role)

    def walk(self):
        """Yield (op, depth, trip count) for every op, descending into Repeat bodies."""
        yield from _walk(self, 0, 1)


def _walk(g: Graph, depth: int, trips: int):
    for op in g.ops:
        yield op, depth, trips
        if op.kind is OpKind.REPEAT:
            yield from _walk(op.attrs.body, depth + 1, trips * op.attrs.count)
