"""Exact address placement: buffers with sizes, windows, alignment, lifetimes and element conflicts placed
(first fit, best fit, then an exact canonical search and CP-SAT), or proven unplaceable."""

from .problem import Buffer, Elements, Instance, Placement
from .search import place
from .validate import violations

__all__ = ["Buffer", "Elements", "Instance", "Placement", "place", "violations"]
