"""Memory families: per-tile liveness and the region (arena) split."""

from .liveness import add_liveness
from .regions import add_regions

__all__ = ["add_liveness", "add_regions"]
