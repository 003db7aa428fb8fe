"""Layout geometry: a [rows, cols] matrix view split into a grid (or flat chunks), replicated, offset.

Every block is stored row-major with a row pitch rounded up to a 32-bit word, so that every exchange run
starts and ends on a word (the exchange moves 32-bit words, IPU21.md); column blocks split at multiples
of a word's worth of elements for the same reason. A block's allocation is rounded up to the alignment
of its memory class (8 B standard, 32 B interleaved: AMP operands).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

WORD = 4


class MemClass(Enum):
    """Standard data may live in either region; interleaved data (AMP operands and outputs) only in
    region 1. (Exchange tables and code, region 0 only, are counted by the exchange and support terms.)"""

    STANDARD = "std"
    INTERLEAVED = "il"
    ANY = "any"  # an input need only: the codelet reads either class (a converted copy goes to standard)

    @property
    def align(self) -> int:
        return 32 if self is MemClass.INTERLEAVED else 8


ALIGN = 8  # the smallest block alignment (standard memory, 64-bit loads)


def balanced(n: int, parts: int) -> np.ndarray:
    """Sizes of `parts` contiguous blocks of n items: the first n % parts blocks get one more."""
    base, extra = divmod(n, parts)
    return np.full(parts, base, np.int64) + (np.arange(parts) < extra)


def grain(elem: int) -> int:
    """Elements per 32-bit word: column blocks split at multiples of it."""
    return max(1, WORD // elem)


def balanced_grains(n: int, parts: int, g: int) -> np.ndarray:
    """`balanced` over whole grains of g items; the last block ends at n (a partial grain only there)."""
    sizes = balanced(-(-n // g), parts) * g
    sizes[-1] -= sizes.sum() - n
    return sizes


def _pad(x, a: int):
    return -(-np.asarray(x, np.int64) // a) * a


@dataclass(frozen=True)
class Layout:
    """Where a [rows, cols] matrix of `elem`-byte items lives.

    grid: rows split into `pr` blocks, cols into `pc` blocks (word grains); block (i, j) of replica r sits on
    tile (start + r * rep_stride + i * row_stride + j * col_stride) mod tiles. With `row_groups` g the rows
    form g equal groups (batch images) each split into pr / g balanced blocks, so no block spans two
    images; block i of group b then sits at b * group_stride + i * row_stride (group_stride 0: the groups'
    blocks follow each other, b * (pr / g) * row_stride). flat: the row-major bytes split into `pr` balanced chunks of 8-byte grains (parameter homes).
    Padding rounds each block's rows/cols up to `row_align`/`col_align` (codelet operand blocks); padded
    storage is never read as data. Skews place a rotating operand's shards as Cannon's algorithm starts them:
    with `col_skew` s, column block j of row block i sits where column block (j + s * i) mod pc would; with
    `row_skew` s, row block i of column block j where row block (i + s * j) mod pr would.
    """

    rows: int
    cols: int
    elem: int
    pr: int = 1
    pc: int = 1
    replicas: int = 1
    start: int = 0
    row_stride: int = 0  # 0 = pc (resolved at construction)
    col_stride: int = 1
    rep_stride: int = 0  # 0 = pr * pc, replicas side by side (resolved at construction)
    row_groups: int = 1
    group_stride: int = 0  # 0 = (pr / row_groups) * row_stride (resolved at construction)
    flat: bool = False
    mem: MemClass = MemClass.STANDARD
    row_align: int = 1
    col_align: int = 1
    row_grain: int = 1  # row blocks split at multiples of it (a GEMM's w rows follow x's word-grain k split)
    col_grain: int = 0  # column blocks split at multiples of it; 0: a word's worth of elements (F32 partials
    #                     follow their F16 output's split)
    col_skew: int = 0  # 0..pc-1 (see above)
    row_skew: int = 0  # 0..pr-1, one row group only

    def __post_init__(self):
        if min(self.rows, self.cols, self.elem, self.pr, self.pc, self.replicas, self.row_groups,
               self.row_align, self.col_align, self.row_grain) < 1:
            raise ValueError(f"degenerate layout {self}")
        if not self.flat and (self.pr > -(-self.rows // self.row_grain) or self.pc > -(-self.cols // self.cgrain)):
            raise ValueError(f"more blocks than items in {self}")
        if self.flat and self.pc != 1:
            raise ValueError("a flat layout has one column of chunks")
        if self.rows % self.row_groups or self.pr % self.row_groups:
            raise ValueError(f"row groups do not divide rows and row blocks in {self}")
        if (self.col_skew or self.row_skew) and (self.flat or self.row_skew and self.row_groups > 1):
            raise ValueError(f"a skew needs a grid layout (a row skew one row group) in {self}")
        object.__setattr__(self, "col_skew", self.col_skew % self.pc)
        object.__setattr__(self, "row_skew", self.row_skew % self.pr)
        if self.col_grain == grain(self.elem):
            object.__setattr__(self, "col_grain", 0)  # the default grain, spelled one way
        # canonical strides: a default (0) is resolved, so equal geometry means equal layouts
        if not self.row_stride:
            object.__setattr__(self, "row_stride", self.pc)
        if not self.rep_stride:
            object.__setattr__(self, "rep_stride", self.pr * self.pc)
        if not self.group_stride:
            object.__setattr__(self, "group_stride", (self.pr // self.row_groups) * self.row_stride)
    @property
    def owners(self) -> int:
        return self.pr * self.pc

    @property
    def rstride(self) -> int:
        return self.row_stride

    @property
    def repstride(self) -> int:
        return self.rep_stride

    @property
    def gstride(self) -> int:
        return self.group_stride

    @property
    def contiguous_groups(self) -> bool:
        """Row groups follow each other (block i of every group at i * row_stride)."""
        return self.group_stride == (self.pr // self.row_groups) * self.row_stride

    def row_block_tiles(self) -> np.ndarray:
        """[pr] tile offset of every row block (its group's offset plus its place in the group)."""
        per = self.pr // self.row_groups
        i = np.arange(self.pr)
        return (i // per) * self.gstride + (i % per) * self.rstride

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.elem

    def allocated(self) -> "Layout":
        """The layout a buffer is allocated in: an input need of either class becomes standard memory."""
        return replace(self, mem=MemClass.STANDARD) if self.mem is MemClass.ANY else self

    def accepts(self, src: "Layout") -> bool:
        """Whether a buffer in `src` can be read where this layout is needed, without a copy."""
        return src == self or (self.mem is MemClass.ANY and replace(src, mem=MemClass.ANY) == self)

    def describe(self) -> str:
        g = f"flat/{self.pr}" if self.flat else f"grid {self.pr}x{self.pc}"
        rep = f" x{self.replicas}/{self.repstride}" if self.replicas > 1 else ""
        st = f" s{self.rstride},{self.col_stride}" if (self.rstride, self.col_stride) != (self.pc, 1) else ""
        grp = f" g{self.row_groups}" if self.row_groups > 1 else ""
        grp += f"/{self.gstride}" if self.gstride != (self.pr // self.row_groups) * self.rstride else ""
        pad = f" pad {self.row_align}x{self.col_align}" if (self.row_align, self.col_align) != (1, 1) else ""
        sk = (f" skew c{self.col_skew}" if self.col_skew else "") + (f" skew r{self.row_skew}" if self.row_skew else "")
        return f"[{self.rows}x{self.cols}]*{self.elem}B {g}{grp}{st}{rep}{sk} @{self.start} {self.mem.value}{pad}"

    # --- blocks ----------------------------------------------------------------------------------

    def row_sizes(self) -> np.ndarray:
        g = self.row_groups
        return np.tile(balanced_grains(self.rows // g, self.pr // g, self.row_grain), g)

    @property
    def cgrain(self) -> int:
        return self.col_grain or grain(self.elem)

    def col_sizes(self) -> np.ndarray:
        return balanced_grains(self.cols, self.pc, self.cgrain)

    def row_bounds(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.row_sizes())])

    def col_bounds(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.col_sizes())])

    def pitches(self) -> np.ndarray:
        """[pc] bytes per stored row of each column block (padded columns, whole words)."""
        return _pad(_pad(self.col_sizes(), self.col_align) * self.elem, WORD)

    def block_tiles(self, tiles: int) -> np.ndarray:
        """[replicas, pr, pc] tile index of every block."""
        r = np.arange(self.replicas)[:, None, None] * self.repstride
        i, j = np.arange(self.pr)[:, None], np.arange(self.pc)[None, :]
        rpos = (i + self.row_skew * j) % self.pr
        cpos = (j + self.col_skew * i) % self.pc
        return (self.start + r + (self.row_block_tiles()[rpos] + cpos * self.col_stride)[None]) % tiles

    def block_bytes(self) -> np.ndarray:
        """[pr, pc] allocated bytes of each block (padding and alignment included)."""
        a = self.mem.align
        if self.flat:
            grains = -(-self.nbytes // ALIGN)
            return _pad(balanced(grains, self.pr) * ALIGN, a)[:, None]
        rb = _pad(self.row_sizes(), self.row_align)
        return _pad(rb[:, None] * self.pitches()[None, :], a)

    def tile_bytes(self, tiles: int) -> np.ndarray:
        """Exact bytes this layout allocates on each of `tiles` tiles (int64 vector)."""
        t = self.block_tiles(tiles)
        b = np.broadcast_to(self.block_bytes()[None], t.shape)
        return np.bincount(t.ravel(), weights=b.ravel(), minlength=tiles).astype(np.int64)

    def block_offsets(self, tiles: int) -> np.ndarray:
        """[replicas, pr, pc] byte offset of every block inside its tile's allocation: a tile's blocks are
        stored one after another in (replica, row block, column block) order."""
        t = self.block_tiles(tiles).ravel()
        b = np.broadcast_to(self.block_bytes()[None], (self.replicas, self.pr, self.pc)).ravel()
        order = np.argsort(t, kind="stable")
        cum = np.cumsum(b[order]) - b[order]
        ts = t[order]
        first = np.searchsorted(ts, ts, side="left")
        off = np.empty_like(cum)
        off[order] = cum - cum[first]
        return off.reshape(self.replicas, self.pr, self.pc)

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


def per_block(lay: Layout, nbytes: int, mem: MemClass = MemClass.STANDARD) -> Layout:
    """A layout with one `nbytes` item per block of `lay`, on the same tiles (per-vertex scratch)."""
    return Layout(lay.pr, lay.pc, -(-max(1, nbytes) // 8) * 8, pr=lay.pr, pc=lay.pc, replicas=lay.replicas,
                  start=lay.start, row_stride=lay.rstride, col_stride=lay.col_stride, rep_stride=lay.repstride,
                  row_groups=lay.row_groups, group_stride=lay.gstride, mem=mem, col_skew=lay.col_skew,
                  row_skew=lay.row_skew)
