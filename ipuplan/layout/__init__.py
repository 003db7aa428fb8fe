"""Tile layouts: geometry over a matrix view, exact per-tile bytes, transfers between two layouts."""

from .geometry import Layout, MemClass, balanced
from .transfer import Transfer, transfers

__all__ = ["Layout", "MemClass", "balanced", "Transfer", "transfers"]
