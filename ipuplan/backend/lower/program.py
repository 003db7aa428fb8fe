"""The lowered program as data: buffers at tile addresses, compute sets of codelet vertices, exchange phases of
word runs, the Repeat body with per-iteration address strides, and the host bindings. Everything per tile is
a numpy column, so a package of 1,472 tiles is a few hundred arrays, not millions of objects.

Addresses are absolute tile-local addresses (the memory map's base included). A vertex field is a slab:
`rows` runs of `row_bytes` at `addr + i * pitch`; a field that points into a per-layer parameter sequence
advances by `stride` bytes every Repeat iteration (0: fixed). An exchange run moves `nbytes` (whole 32-bit
words, at most the transfer limit) from one source tile to one or more destination tiles (a multicast group;
-1 pads unused destinations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np


class Section(Enum):
    """Where a step runs: before the Repeat, in its body (`count` times), or after it."""

    PROLOGUE = "prologue"
    BODY = "body"
    EPILOGUE = "epilogue"


@dataclass(frozen=True)
class Vertices:
    """Every vertex of one codelet in one compute set (V vertices, F fields, P scalar parameters)."""

    codelet: str
    tile: np.ndarray  # [V]
    addr: np.ndarray  # [V, F], -1: field unused by this vertex
    rows: np.ndarray  # [V, F]
    row_bytes: np.ndarray  # [V, F]
    pitch: np.ndarray  # [V, F]
    stride: np.ndarray  # [V, F]
    params: np.ndarray  # [V, P]

    def __len__(self) -> int:
        return len(self.tile)


@dataclass(frozen=True)
class ComputeSet:
    step: int  # the plan step it runs at (buffer lifetimes are in these steps)
    section: Section
    op: str
    name: str
    vertices: tuple[Vertices, ...]

    kind = "compute"


@dataclass(frozen=True)
class Exchange:
    """One exchange phase: runs in the order the sender streams them."""

    step: int
    section: Section
    op: str
    name: str
    src: np.ndarray  # [N] source tile
    src_addr: np.ndarray  # [N]
    nbytes: np.ndarray  # [N]
    src_stride: np.ndarray  # [N] per-iteration advance of the source (a staged sequence's home)
    dst: np.ndarray  # [N, R] destination tiles, -1 unused
    dst_addr: np.ndarray  # [N, R]

    kind = "exchange"

    def __len__(self) -> int:
        return len(self.src)


Step = ComputeSet | Exchange


@dataclass(frozen=True)
class Slabs:
    """Where a tensor's elements sit: record i writes `rows` runs of `n` elements, run k taking the flat
    (row-major, one iteration) elements [e0 + k * estride, + n) to `addr[i, r] + k * pitch` on `tile[i, r]`
    for every replica r (-1: none), iteration j adding `stride[i, r] * j` to the address."""

    e0: np.ndarray  # [N]
    n: np.ndarray  # [N]
    rows: np.ndarray  # [N]
    estride: np.ndarray  # [N]
    pitch: np.ndarray  # [N]
    tile: np.ndarray  # [N, R]
    addr: np.ndarray  # [N, R]
    stride: np.ndarray  # [N, R]


@dataclass(frozen=True)
class Binding:
    """A host-visible tensor: a parameter or constant (`initialize` writes it), the input (`run` writes it)
    or the output (`run` reads it); stored as `dtype` at `scale` (stored = logical / 2^scale)."""

    name: str
    role: str  # "param", "const", "input", "output"
    dtype: str
    scale: int
    shape: tuple[int, ...]  # one iteration
    count: int  # iterations (a per-layer sequence) or 1
    slabs: Slabs


@dataclass(frozen=True)
class BufferTable:
    """Every tile's buffers: group g's buffers (name, address, size, first and last step) on its tiles."""

    names: tuple[str, ...]  # buffer names, indexed by `name` below
    group_of_tile: np.ndarray  # [T]
    name: np.ndarray  # [B] index into names
    group: np.ndarray  # [B]
    addr: np.ndarray  # [B]
    size: np.ndarray  # [B]
    first: np.ndarray  # [B]
    last: np.ndarray  # [B]


@dataclass(frozen=True)
class Program:
    """The whole device program: steps in order (the body's once), the Repeat, buffers and bindings."""

    tiles: int
    steps: tuple[Step, ...]
    step_names: tuple[str, ...]  # the plan's steps, by index
    count: int  # Repeat iterations (1: no Repeat)
    carry: ComputeSet | None  # copies run between two iterations (the body's result into its input)
    buffers: BufferTable
    bindings: tuple[Binding, ...]
    tables: np.ndarray  # [T] encoded exchange bytes per tile, from the runs
    info: dict = field(default_factory=dict)
