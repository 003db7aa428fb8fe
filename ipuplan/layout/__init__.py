"""Tile layouts: geometry over a matrix view, exact per-tile bytes, transfers between two layouts."""

from .geometry import ColumnWindow, Layout, MemClass, balanced, per_block
from .transfer import Encoding, Transfer, transfers

__all__ = ["ColumnWindow", "Layout", "MemClass", "balanced", "per_block", "Encoding", "Transfer", "transfers"]
