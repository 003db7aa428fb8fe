"""A placement instance: buffers with size, alignment, address window, lifetime and optional fixed offset;
pairs that must not share a memory element; barriers no buffer may straddle. Offsets are bytes from the
start of the address space; lifetimes are inclusive step ranges."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Buffer:
    name: str
    size: int
    first: int  # first step live
    last: int  # last step live (inclusive)
    align: int = 1
    lo: int = 0  # lowest start address
    hi: int | None = None  # highest end address (None: the capacity)
    fixed: int | None = None  # a required offset

    def overlaps(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class Elements:
    """How addresses map to memory elements: [start, end) cut into `size`-byte elements from `start`."""

    start: int
    end: int
    size: int

    def index(self, offset: int) -> int:
        return (offset - self.start) // self.size

    def ceil(self, offset: int) -> int:
        """The first element boundary at or above `offset`."""
        return self.start + -(-(offset - self.start) // self.size) * self.size


@dataclass(frozen=True)
class Instance:
    capacity: int
    buffers: tuple[Buffer, ...]
    conflicts: frozenset[tuple[int, int]] = frozenset()  # (i, j), i < j: never in one element while both live
    barriers: tuple[int, ...] = ()  # addresses no buffer may straddle (region boundaries)
    elements: tuple[Elements, ...] = ()  # element grids (for conflicts); empty: one element per byte

    def hi(self, i: int) -> int:
        b = self.buffers[i]
        return self.capacity if b.hi is None else b.hi

    def elements_of(self, offset: int, size: int) -> tuple[int, int, int]:
        """(grid, first element, last element) of [offset, offset + size)."""
        for g, e in enumerate(self.elements):
            if e.start <= offset < e.end:
                return g, e.index(offset), e.index(offset + size - 1)
        return -1, offset, offset + size - 1

    def element_end(self, offset: int, size: int) -> int:
        """The first address past the last element [offset, offset + size) touches."""
        for e in self.elements:
            if e.start <= offset < e.end:
                return e.ceil(offset + size)
        return offset + size


@dataclass
class Placement:
    """The outcome: offsets (None where unplaced), and whether a proof of infeasibility was reached."""

    offsets: list[int | None]
    placed: bool
    proven: bool  # placed, or the search was exhaustive
    nodes: int = 0
    method: str = ""
    reason: str = ""
    stats: dict = field(default_factory=dict)
    work: float = 0.0  # CP-SAT's deterministic seconds spent reaching it (the plan-wide budget counts these)
