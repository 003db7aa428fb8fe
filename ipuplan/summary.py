"""Graph facts for `ipuplan show`: ops by kind, parameters by precision, FLOPs, largest activation."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .ir.graph import Graph, OpKind, Role, Value
from .ir.ops import flops
from .model.spec import ModelSpec


@dataclass(frozen=True)
class Summary:
    model: str
    batch: int
    layers: int
    tokens: int
    width: int
    parameters: int
    parameter_bytes: dict[str, int]
    constant_bytes: int
    flops_per_image: int
    ops: dict[str, int]  # executed per batch (Repeat bodies x trip count)
    ops_static: dict[str, int]  # as written in the IR (bodies once)
    largest_activation: Value

    def to_json(self) -> dict:
        la = self.largest_activation
        return {
            "model": self.model, "batch": self.batch, "layers": self.layers, "tokens": self.tokens,
            "width": self.width, "parameters": self.parameters, "parameter_bytes": self.parameter_bytes,
            "constant_bytes": self.constant_bytes, "flops_per_image": self.flops_per_image, "ops": self.ops,
            "ops_static": self.ops_static,
            "largest_activation": {"name": la.name, "shape": list(la.shape), "dtype": la.dtype.short,
                                   "bytes": la.nbytes},
        }


def summarize(graph: Graph, spec: ModelSpec, batch: int) -> Summary:
    params = graph.by_role(Role.PARAM)
    pbytes: Counter = Counter()
    for v in params:
        pbytes[v.dtype.short] += v.nbytes
    ops: Counter = Counter()
    static: Counter = Counter()
    acts: list[Value] = []
    total_flops = 0
    for g in _graphs(graph):
        acts.extend(v for v in g.values if v.role is Role.ACT)
    for op, _, trips in graph.walk():
        ops[op.kind.value] += trips
        static[op.kind.value] += 1
    for op in graph.ops:
        total_flops += flops(op, graph)
    return Summary(
        model=spec.name, batch=batch, layers=spec.layers, tokens=spec.tokens, width=spec.width,
        parameters=sum(v.numel for v in params),
        parameter_bytes=dict(sorted(pbytes.items())) | {"total": sum(pbytes.values())},
        constant_bytes=sum(v.nbytes for v in graph.by_role(Role.CONST)),
        flops_per_image=total_flops // batch, ops=dict(sorted(ops.items())), ops_static=dict(sorted(static.items())),
        largest_activation=max(acts, key=lambda v: (v.nbytes, v.name)),
    )


def _graphs(g: Graph):
    yield g
    for op in g.ops:
        if op.kind is OpKind.REPEAT:
            yield from _graphs(op.attrs.body)
