"""The IR verifier: SSA, schedule order, per-kind typing and Repeat structure, with context in errors."""

from __future__ import annotations

from ..errors import IRError
from .graph import Graph, OpKind, Role
from .ops import infer


def verify(g: Graph, _where: str = "") -> Graph:
    """Check `g` (and Repeat bodies) and return it; raise IRError naming the op and the problem."""
    where = f"{_where}{g.name}"
    vm = g.value_map
    if len(vm) != len(g.values):
        raise IRError(f"{where}: duplicate value names")
    defined: set[str] = set()
    for v in g.values:
        if any(d <= 0 for d in v.shape):
            raise IRError(f"{where}: value `{v.name}` has non-positive shape {v.shape}")
        if v.role is not Role.ACT:
            defined.add(v.name)
    for n in g.inputs:
        if n not in vm or vm[n].role is Role.ACT:
            raise IRError(f"{where}: graph input `{n}` is not a declared input/param value")
    producer: dict[str, str] = {}
    for op in g.ops:
        for n in op.inputs:
            if n not in vm:
                raise IRError(f"{where}: op `{op.name}` reads undeclared value `{n}`")
            if n not in defined:
                raise IRError(f"{where}: op `{op.name}` reads `{n}` before it is produced (schedule order)")
        sigs = infer(op, [vm[n] for n in op.inputs])
        if len(sigs) != len(op.outputs):
            raise IRError(f"{where}: op `{op.name}` has {len(op.outputs)} outputs, its kind gives {len(sigs)}")
        for n, (shape, dtype) in zip(op.outputs, sigs):
            if n not in vm:
                raise IRError(f"{where}: op `{op.name}` writes undeclared value `{n}`")
            if n in producer or vm[n].role is not Role.ACT:
                raise IRError(f"{where}: value `{n}` is written twice or is not an activation")
            v = vm[n]
            if (v.shape, v.dtype) != (tuple(shape), dtype):
                raise IRError(f"{where}: op `{op.name}` declares `{n}` as {v.type_str()}, "
                              f"its inputs give {dtype.short}[{','.join(map(str, shape))}]")
            producer[n] = op.name
            defined.add(n)
        if op.kind is OpKind.REPEAT:
            body = op.attrs.body
            verify(body, f"{where}/{op.name}/")
            expected = {bi for bi, _ in op.attrs.carried} | set(op.attrs.sequences) | set(op.attrs.invariants)
            if set(body.inputs) != expected:
                raise IRError(f"{where}: repeat `{op.name}` body inputs {sorted(body.inputs)} "
                              f"differ from carried/sequence/invariant names")
    for n in g.outputs:
        if n not in defined:
            raise IRError(f"{where}: graph output `{n}` is never produced")
    acts = {v.name for v in g.values if v.role is Role.ACT}
    if acts - set(producer):
        raise IRError(f"{where}: activations never produced: {sorted(acts - set(producer))[:5]}")
    return g
