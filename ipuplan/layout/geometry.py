"""Layout geometry: a [rows, cols] matrix view split into a grid (or flat chunks), replicated, offset."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

ALIGN = 8  # every per-tile block starts 8-byte aligned (64-bit loads); its size rounds up to 8


class MemClass(Enum):
    """Standard data may live in either region; interleaved data (AMP operands) only in region 1.
    (Exchange code and tables, region 0 only, are counted by the exchange family, not by layouts.)"""

    STANDARD = "std"
    INTERLEAVED = "il"


def balanced(n: int, parts: int) -> np.ndarray:
    """Sizes of `parts` contiguous blocks of n items: the first n % parts blocks get one more."""
    base, extra = divmod(n, parts)
    return np.full(parts, base, np.int64) + (np.arange(parts) < extra)


def _pad(x: np.ndarray, a: int) -> np.ndarray:
    return -(-x // a) * a


@dataclass(frozen=True)
class Layout:
    """Where a [rows, cols] matrix of `elem`-byte items lives.

    grid: rows split into `pr` blocks, cols into `pc` balanced blocks; block (i, j) of replica r sits on
    tile (start + r * rep_stride + i * row_stride + j * col_stride) mod tiles. With `row_groups` g the
    rows form g equal groups (batch images) each split into pr / g balanced blocks, so no block spans two
    images. flat: the row-major bytes split into `pr` balanced chunks of 8-byte grains (parameter homes).
    Padding rounds each block's rows/cols up to `row_align`/`col_align` (codelet panel orders).
    """

    rows: int
    cols: int
    elem: int
    pr: int = 1
    pc: int = 1
    replicas: int = 1
    start: int = 0
    row_stride: int = 0  # 0 = pc
    col_stride: int = 1
    rep_stride: int = 0  # 0 = pr * pc (replicas side by side)
    row_groups: int = 1
    flat: bool = False
    mem: MemClass = MemClass.STANDARD
    row_align: int = 1
    col_align: int = 1

    def __post_init__(self):
        if min(self.rows, self.cols, self.elem, self.pr, self.pc, self.replicas) < 1:
            raise ValueError(f"degenerate layout {self}")
        if not self.flat and (self.pr > self.rows or self.pc > self.cols):
            raise ValueError(f"more blocks than items in {self}")
        if self.flat and self.pc != 1:
            raise ValueError("a flat layout has one column of chunks")
        if self.rows % self.row_groups or self.pr % self.row_groups:
            raise ValueError(f"row groups do not divide rows and row blocks in {self}")

    @property
    def owners(self) -> int:
        return self.pr * self.pc

    @property
    def rstride(self) -> int:
        return self.row_stride or self.pc

    @property
    def repstride(self) -> int:
        return self.rep_stride or self.owners

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.elem

    def describe(self) -> str:
        if self.flat:
            g = f"flat/{self.pr}"
        else:
            g = f"grid {self.pr}x{self.pc}"
        rep = f" x{self.replicas}/{self.repstride}" if self.replicas > 1 else ""
        st = f" s{self.rstride},{self.col_stride}" if (self.rstride, self.col_stride) != (self.pc, 1) else ""
        grp = f" g{self.row_groups}" if self.row_groups > 1 else ""
        pad = f" pad {self.row_align}x{self.col_align}" if (self.row_align, self.col_align) != (1, 1) else ""
        return f"[{self.rows}x{self.cols}]*{self.elem}B {g}{grp}{st}{rep} @{self.start} {self.mem.value}{pad}"

    # --- blocks ----------------------------------------------------------------------------------

    def row_sizes(self) -> np.ndarray:
        g = self.row_groups
        return np.tile(balanced(self.rows // g, self.pr // g), g)

    def col_sizes(self) -> np.ndarray:
        return balanced(self.cols, self.pc)

    def block_tiles(self, tiles: int) -> np.ndarray:
        """[replicas, pr, pc] tile index of every block."""
        r = np.arange(self.replicas)[:, None, None] * self.repstride
        i = np.arange(self.pr)[None, :, None] * self.rstride
        j = np.arange(self.pc)[None, None, :] * self.col_stride
        return (self.start + r + i + j) % tiles

    def block_bytes(self) -> np.ndarray:
        """[pr, pc] allocated bytes of each block (padding and 8-byte rounding included)."""
        if self.flat:
            grains = -(-self.nbytes // ALIGN)
            return (balanced(grains, self.pr) * ALIGN)[:, None]
        rb = _pad(self.row_sizes(), self.row_align)
        cb = _pad(self.col_sizes(), self.col_align)
        return _pad(rb[:, None] * cb[None, :] * self.elem, ALIGN)

    def tile_bytes(self, tiles: int) -> np.ndarray:
        """Exact bytes this layout allocates on each of `tiles` tiles (int64 vector)."""
        t = self.block_tiles(tiles)
        b = np.broadcast_to(self.block_bytes()[None], t.shape)
        return np.bincount(t.ravel(), weights=b.ravel(), minlength=tiles).astype(np.int64)

    def max_block_items(self) -> tuple[int, int]:
        """(rows, cols) of the largest block, the work of the slowest tile."""
        if self.flat:
            return int(balanced(self.rows * self.cols, self.pr).max()), 1
        return int(self.row_sizes().max()), int(self.col_sizes().max())


@dataclass(frozen=True)
class ColumnWindow:
    """Columns [c0, c1) of a layout's matrix: a view (slice) that owns no bytes of its own."""

    base: Layout
    c0: int
    c1: int
