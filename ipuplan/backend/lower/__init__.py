"""Lowering: a placed plan becomes the device program — compute sets, exchange phases, the Repeat, the host
bindings — with every address bound. `program` is the format (what the package stores and the checker and the
runner read); `lower.lower` builds it."""

from .program import Binding, BufferTable, ComputeSet, Exchange, Program, Section, Slabs, Vertices

__all__ = ["Binding", "BufferTable", "ComputeSet", "Exchange", "Program", "Section", "Slabs", "Vertices"]
