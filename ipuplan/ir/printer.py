"""Deterministic text form of a Graph (golden-tested): values by role, then ops in schedule order."""

from __future__ import annotations

import dataclasses

from .graph import DType, Graph, OpKind, RepeatAttrs, Role


def _attr_str(attrs) -> str:
    if isinstance(attrs, RepeatAttrs) or not dataclasses.is_dataclass(attrs):
        return ""
    parts = []
    for f in dataclasses.fields(attrs):
        v = getattr(attrs, f.name)
        if isinstance(v, DType):
            v = v.short
        elif isinstance(v, float):
            v = f"{v:.6g}"
        elif isinstance(v, tuple):
            v = "x".join(map(str, v))
        elif isinstance(v, bool):
            v = str(v).lower()
        parts.append(f"{f.name}={v}")
    return " {" + " ".join(parts) + "}" if parts else ""


def print_graph(g: Graph, indent: str = "") -> str:
    """Render `g` as text; Repeat bodies are printed once, indented, with their trip count."""
    lines = []
    meta = " ".join(f"{k}={v}" for k, v in g.meta)
    lines.append(f"{indent}graph {g.name}" + (f" ({meta})" if meta else ""))
    tag = {Role.INPUT: "in", Role.PARAM: "param", Role.CONST: "const"}
    for n in g.inputs:
        v = g.value(n)
        lines.append(f"{indent}  {tag[v.role]:<5} {n}: {v.type_str()}")
    for op in g.ops:
        outs = ", ".join(f"%{n}" for n in op.outputs)
        ty = ", ".join(g.value(n).type_str() for n in op.outputs)
        if op.kind is OpKind.REPEAT:
            a: RepeatAttrs = op.attrs
            nc, ns = len(a.carried), len(a.sequences)
            carried = ", ".join(f"{bi}<-{o}" for (bi, _), o in zip(a.carried, op.inputs[:nc]))
            lines.append(f"{indent}  {outs} = repeat x{a.count} [carried {carried}; "
                         f"{ns} sequences; {len(a.invariants)} invariants] : {ty}")
            lines.append(print_graph(a.body, indent + "    "))
            continue
        args = ", ".join(op.inputs)
        lines.append(f"{indent}  {outs} = {op.kind.value} {args}{_attr_str(op.attrs)} : {ty}")
    lines.append(f"{indent}  out   {', '.join(g.outputs)}")
    return "\n".join(lines)
