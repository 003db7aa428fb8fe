"""Lowering: a placed plan becomes the device program — compute sets, exchange phases, the Repeat, the host
bindings — with every address bound (ipuplan.backend.lower.program)."""

from .lower import lower
from .program import Binding, BufferTable, ComputeSet, Exchange, Program, Section, Slabs, Vertices

__all__ = ["Binding", "BufferTable", "ComputeSet", "Exchange", "Program", "Section", "Slabs", "Vertices", "lower"]
