"""Symbolic replay of a package against its model: every byte each codelet reads was written by the
right producer (tensor, element, iteration), nothing is read before it is written."""

from .run import replay
from .semantics import ReplayError

__all__ = ["ReplayError", "replay"]
