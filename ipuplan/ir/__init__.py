"""The IR: typed values, ops with per-kind attributes, structured Repeat; verifier and printer."""

from .graph import DType, Graph, Op, OpKind, Role, Value
from .ops import RULES, flops, infer
from .verify import verify
from .printer import print_graph

__all__ = ["DType", "Graph", "Op", "OpKind", "Role", "Value", "RULES", "flops", "infer", "verify", "print_graph"]
