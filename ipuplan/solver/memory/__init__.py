"""Memory families: per-tile liveness, the region (arena) split, placement cuts."""

from .liveness import add_liveness
from .placement import add_placement_cuts
from .regions import add_regions

__all__ = ["add_liveness", "add_placement_cuts", "add_regions"]
