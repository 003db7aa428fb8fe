"""The fixed schedule: ops in IR order (Repeat body once), two steps each, buffers with live ranges.

Views (slice, reshape) own no bytes: a read of a view is a read of its root buffer, optionally through
a column window. A Repeat's carried input is the buffer that feeds it; its output is the body's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ..ir.graph import Graph, Op, OpKind, Role, Value

VIEW_KINDS = (OpKind.SLICE, OpKind.RESHAPE)


def matrix(v: Value) -> tuple[int, int]:
    """The [rows, cols] view planning uses: all leading axes are rows."""
    return (prod(v.shape[:-1]) if len(v.shape) > 1 else 1), v.shape[-1]


@dataclass(frozen=True)
class Ref:
    """An op input resolved to a buffer: an activation (`act`) or parameter/constant (`param`)."""

    kind: str
    key: str
    window: tuple[int, int] | None = None  # columns [c0, c1) of the root buffer


@dataclass
class SOp:
    """A scheduled op: its exchange step prepares operands, its compute step runs it."""

    key: str
    op: Op
    graph: Graph
    scope: str
    trips: int
    xstep: int
    cstep: int
    reads: list[tuple[int, Ref]] = field(default_factory=list)
    out_key: str = ""


@dataclass
class Buffer:
    """An activation buffer: written at `first` (its producer's compute step), read until `last`."""

    key: str
    value: Value
    producer: str
    first: int
    last: int
    consumers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ParamInfo:
    """A parameter or constant as stored: one iteration's value and how many iterations are resident."""

    key: str
    value: Value  # one iteration's shape
    count: int


@dataclass
class Schedule:
    graph: Graph
    ops: list[SOp]
    steps: list[str]
    buffers: dict[str, Buffer]
    params: dict[str, ParamInfo]
    body: tuple[int, int] | None  # first and last step of the Repeat body
    ties: list[tuple[str, str]]  # (outer buffer, body result) pairs that must share a layout

    def op(self, key: str) -> SOp:
        return self._index[key]

    def __post_init__(self):
        self._index = {s.key: s for s in self.ops}


def build_schedule(g: Graph) -> Schedule:
    ops: list[SOp] = []
    steps: list[str] = []
    buffers: dict[str, Buffer] = {}
    params: dict[str, ParamInfo] = {}
    ties: list[tuple[str, str]] = []
    body_range = None

    for v in g.values:
        if v.role in (Role.PARAM, Role.CONST):
            params[v.name] = ParamInfo(v.name, v, 1)

    def walk(graph: Graph, scope: str, trips: int, env: dict[str, Ref]) -> None:
        nonlocal body_range
        for op in graph.ops:
            if op.kind is OpKind.REPEAT:
                a = op.attrs
                nc, ns = len(a.carried), len(a.sequences)
                benv: dict[str, Ref] = {}
                for (bi, _), outer in zip(a.carried, op.inputs[:nc]):
                    benv[bi] = env[outer]
                for bi, outer in zip(a.sequences, op.inputs[nc:nc + ns]):
                    params[outer] = ParamInfo(outer, a.body.value(bi), a.count)
                    benv[bi] = Ref("param", outer)
                for bi, outer in zip(a.invariants, op.inputs[nc + ns:]):
                    benv[bi] = env[outer]
                first = len(steps)
                walk(a.body, f"{scope}{op.name}/", trips * a.count, benv)
                body_range = (first, len(steps) - 1)
                for (bi, bo), out in zip(a.carried, op.outputs):
                    env[out] = benv[bo]
                    ties.append((benv[bi].key, benv[bo].key))
                continue
            if op.kind in VIEW_KINDS:
                src = env[op.inputs[0]]
                if op.kind is OpKind.SLICE:
                    a = op.attrs
                    vin = graph.value(op.inputs[0])
                    if a.axis != len(vin.shape) - 1:
                        raise ValueError(f"slice `{op.name}` is not on the last axis")
                    base = src.window[0] if src.window else 0
                    env[op.outputs[0]] = Ref(src.kind, src.key, (base + a.start, base + a.stop))
                else:
                    if matrix(graph.value(op.inputs[0])) != matrix(graph.value(op.outputs[0])):
                        raise ValueError(f"reshape `{op.name}` changes the matrix view")
                    env[op.outputs[0]] = src
                continue
            key = scope + op.name
            s = SOp(key, op, graph, scope, trips, len(steps), len(steps) + 1)
            steps.extend([f"{key}:x", f"{key}:c"])
            for i, n in enumerate(op.inputs):
                s.reads.append((i, env[n]))
            out = op.outputs[0]
            s.out_key = key
            buffers[key] = Buffer(key, graph.value(out), key, s.cstep, s.cstep)
            env[out] = Ref("act", key)
            ops.append(s)

    top_env = {n: Ref("param", n) for n in params}
    for n in g.inputs:
        v = g.value(n)
        if v.role is Role.INPUT:
            buffers[n] = Buffer(n, v, "", 0, 0)
            top_env[n] = Ref("act", n)
    walk(g, "", 1, top_env)

    for s in ops:
        for _, r in s.reads:
            if r.kind == "act":
                b = buffers[r.key]
                b.last = max(b.last, s.cstep)
                b.consumers.append(s.key)
    sched = Schedule(g, ops, steps, buffers, params, body_range, ties)
    # a carried buffer read inside the body is live across the whole body (every iteration re-reads it
    # through the next iteration's copy), and the body result lives to the end of the body
    if body_range:
        for outer, res in ties:
            buffers[res].last = max(buffers[res].last, body_range[1])
    last = len(steps) - 1
    for b in buffers.values():
        if not b.consumers and b.producer:
            b.last = max(b.last, last)  # graph outputs are read by the host after the last step
    return sched
