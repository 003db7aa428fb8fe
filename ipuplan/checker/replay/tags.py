"""Symbolic tile memory: one 64-bit tag per 32-bit word saying which element of which tensor the word
holds (the element of its first byte), at which iteration, written or not. Slabs are gathered and
scattered for whole groups of equally shaped vertices at once.

tag = valid << 63 | tensor << 48 | generation << 40 | code << 32 | element
code: a k-slice, key-split or column interval (partial sums, softmax states, statistics) or 1 for RoPE-rotated
values; element: the flat index in the tensor's [rows, cols] matrix (one iteration)."""

from __future__ import annotations

import sys
from functools import cached_property

import numba
import numpy as np

VALID = np.uint64(1 << 63)
_LITTLE = sys.byteorder == "little"
WORD = 4


def pack(tensor, gen, code, elem) -> np.ndarray:
    t = np.asarray(tensor, np.uint64) << np.uint64(48)
    g = np.asarray(gen, np.uint64) << np.uint64(40)
    c = np.asarray(code, np.uint64) << np.uint64(32)
    return VALID | t | g | c | np.asarray(elem, np.uint64)


class Decoded:
    """The fields of a tag array, each derived when first asked for. numpy's casts from uint64 to signed types
    are an order of magnitude slower than shifts, masks and uint32 casts, so fields are cut from the high and
    low 32-bit words and reinterpreted (every field fits its type's positive range). The halves are views of
    the tags: decode an array after its last write."""

    def __init__(self, tags: np.ndarray):
        t = np.ascontiguousarray(tags, np.uint64)
        if _LITTLE:  # the two 32-bit halves of each tag, as views: no pass over the tags
            halves = t.view(np.uint32)
            self.hi, self.lo = halves[..., 1::2], halves[..., 0::2]  # valid | tensor | generation | code; element
        else:
            self.hi, self.lo = (t >> np.uint64(32)).astype(np.uint32), (t & np.uint64(0xFFFFFFFF)).astype(np.uint32)

    @cached_property
    def valid(self) -> np.ndarray:
        return (self.hi >> np.uint32(31)).astype(bool)

    @cached_property
    def tensor(self) -> np.ndarray:
        return ((self.hi >> np.uint32(16)) & np.uint32(0x7FFF)).view(np.int32)

    @cached_property
    def gen(self) -> np.ndarray:
        return ((self.hi >> np.uint32(8)) & np.uint32(0xFF)).view(np.int32)

    @cached_property
    def code(self) -> np.ndarray:
        return (self.hi & np.uint32(0xFF)).view(np.int32)

    @cached_property
    def elem(self) -> np.ndarray:
        return self.lo.astype(np.int64)

    def holds(self, tensor: int, gen: int) -> np.ndarray:
        """Written, of `tensor` at iteration `gen` (any code): `valid & tensor == t & gen == g` in one compare."""
        return (self.hi & np.uint32(0xFFFFFF00)) == held_key(tensor, gen)


def held_key(tensor: int, gen: int) -> np.uint32:
    """The top 24 bits of a tag's high word (valid, tensor, iteration) for a written word of `tensor` at `gen`."""
    tensor, gen = int(tensor), int(gen)
    if not (0 <= tensor <= 0x7FFF and 0 <= gen <= 0xFF):
        raise ValueError(f"tensor {tensor} or iteration {gen} outside the tag's fields")
    return np.uint32(1 << 31 | tensor << 16 | gen << 8)


@numba.njit(cache=True)
def _rows_of(hi, lo, key, cols, c0, r0, c) -> bool:
    """Every tag [V, R, W] written, of one tensor and iteration (`hi`'s top 24 bits == `key`), each row's words
    within the tensor row of its first word: r0[v, r] <- that row, c[v, r, w] <- the word's column minus c0.
    False at the first word that is not (r0 and c then unfinished)."""
    V, R, W = hi.shape
    for v in range(V):
        for r in range(R):
            row = np.int64(lo[v, r, 0]) // cols
            r0[v, r] = row
            base = row * cols + c0
            for w in range(W):
                if hi[v, r, w] & np.uint32(0xFFFFFF00) != key:
                    return False
                col = np.int64(lo[v, r, w]) - base
                if col < -c0 or col >= cols - c0:
                    return False
                c[v, r, w] = col
    return True


def rows_of(d: Decoded, tensor: int, gen: int, cols: int, c0: int):
    """(r0 [V, R], c [V, R, W]) as `Decoded.holds` and the row arithmetic give them, in one pass; None where a
    word is not of the tensor and iteration or a row mixes tensor rows (the caller then names the word)."""
    if d.hi.ndim != 3 or cols <= 0:
        return None
    try:
        key = held_key(tensor, gen)
    except ValueError:  # no word holds it
        return None
    V, R, W = d.hi.shape
    r0, c = np.empty((V, R), np.int64), np.empty((V, R, W), np.int64)
    if V * R * W == 0 or not _rows_of(d.hi, d.lo, key, np.int64(cols), np.int64(c0), r0, c):
        return None
    return r0, c


@numba.njit(cache=True)
def _regenerate(tags, old, new, tensors) -> int:
    """Every written tag of iteration `old` whose tensor is marked in `tensors` (a table over all tensor ids)
    takes iteration `new`; the count changed."""
    n = 0
    for i in range(tags.size):
        t = tags[i]
        if t >> np.uint64(63) and (t >> np.uint64(40)) & np.uint64(0xFF) == old and \
                tensors[(t >> np.uint64(48)) & np.uint64(0x7FFF)]:
            tags[i] = (t & ~np.uint64(0xFF << 40)) | (np.uint64(new) << np.uint64(40))
            n += 1
    return n


def regenerate(tags: np.ndarray, old: int, new: int, tensors) -> int:
    """In place: the tags of `tensors` (ids) written at iteration `old` become iteration `new`."""
    if not (0 <= old <= 0xFF and 0 <= new <= 0xFF):
        raise ValueError(f"iteration {old} or {new} outside the tag's field")
    table = np.zeros(0x8000, np.bool_)
    table[np.asarray(tensors, np.int64)] = True
    return int(_regenerate(tags, np.uint64(old), np.uint64(new), table))


def unpack(tags: np.ndarray) -> Decoded:
    return Decoded(tags)


@numba.njit(cache=True)
def _gather(tags, start, rows, words, pitch, out) -> bool:
    """out[v, r] <- the `words` tags at start[v] + r * pitch[v]; False (out unfinished) if one is outside `tags`."""
    for v in range(start.size):
        for r in range(rows):
            a = start[v] + r * pitch[v]
            if a < 0 or a + words > tags.size:
                return False
            for w in range(words):
                out[v, r, w] = tags[a + w]
    return True


@numba.njit(cache=True)
def _scatter(tags, start, pitch, src) -> bool:
    """The slabs at start[v] + r * pitch[v] <- src[v, r], in vertex, row, word order (a later word wins);
    False (nothing written) if one is outside `tags`."""
    V, R, W = src.shape
    for v in range(V):
        for r in range(R):
            a = start[v] + r * pitch[v]
            if a < 0 or a + W > tags.size:
                return False
    for v in range(V):
        for r in range(R):
            a = start[v] + r * pitch[v]
            for w in range(W):
                tags[a + w] = src[v, r, w]
    return True


@numba.njit(cache=True)
def _move(tags, src, n, dst) -> int:
    """tags[dst[i, r] + w] <- tags[src[i] + w] for w < n[i] and every replica r (dst -1: none), every source word
    read before any is written, replicas in order. Returns -1, or the first run reaching outside `tags` (nothing
    is then written)."""
    size = tags.size
    total = 0
    for i in range(n.size):
        if n[i] < 0 or src[i] < 0 or src[i] + n[i] > size:
            return i
        for r in range(dst.shape[1]):
            if dst[i, r] != -1 and (dst[i, r] < 0 or dst[i, r] + n[i] > size):
                return i
        total += n[i]
    buf = np.empty(total, tags.dtype)
    o = 0
    for i in range(n.size):
        for w in range(n[i]):
            buf[o + w] = tags[src[i] + w]
        o += n[i]
    for r in range(dst.shape[1]):
        o = 0
        for i in range(n.size):
            d = dst[i, r]
            if d != -1:
                for w in range(n[i]):
                    tags[d + w] = buf[o + w]
            o += n[i]
    return -1


class Memory:
    """Tags of every word of every tile, [tiles, words]; addresses are absolute (from `base`)."""

    def __init__(self, tiles: int, base: int, end: int):
        self.tiles, self.base, self.words = tiles, base, (end - base) // WORD
        self.tags = np.zeros(tiles * self.words, np.uint64)

    def slabs(self, tile, addr, rows: int, words: int, pitch):
        """Equally shaped slabs (addr, pitch word-aligned): the flat index of each one's first word, its pitch in
        words, and whether each lies inside its tile's memory."""
        tile = np.asarray(tile, np.int64)
        off = (np.asarray(addr, np.int64) - self.base) // WORD
        p = np.asarray(pitch, np.int64) // WORD
        last = off + (rows - 1) * p
        ok = ((tile >= 0) & (tile < self.tiles) & (np.minimum(off, last) >= 0)
              & (np.maximum(off, last) + words <= self.words))
        return tile * self.words + off, p, ok

    def gather(self, start, rows: int, words: int, pitch) -> np.ndarray:
        """[V, rows, words] tags of the slabs `slabs` located (and found inside memory)."""
        out = np.empty((len(start), rows, words), np.uint64)
        if not _gather(self.tags, np.ascontiguousarray(start), rows, words, np.ascontiguousarray(pitch), out):
            raise IndexError("a slab outside memory")  # unreachable past `slabs`' check: kept memory-safe
        return out

    def scatter(self, start, pitch, tags: np.ndarray) -> None:
        """Write [V, rows, words] tags into the slabs `slabs` located."""
        t = np.ascontiguousarray(tags, np.uint64)
        if not _scatter(self.tags, np.ascontiguousarray(start), np.ascontiguousarray(pitch), t):
            raise IndexError("a slab outside memory")

    def word_index(self, tile, addr) -> np.ndarray:
        """Flat indices of single words (addr word-aligned)."""
        return np.asarray(tile, np.int64) * self.words + (np.asarray(addr, np.int64) - self.base) // WORD

    def move(self, src_tile, src_addr, nwords, dst_tile, dst_addr) -> int:
        """Copy word runs (addr word-aligned) to each of their destinations ([runs, R]; tile -1: no replica),
        every source read before any destination is written. Returns -1, or the first run that reaches outside
        its tile's memory (nothing is then written)."""
        n = np.ascontiguousarray(nwords, np.int64)
        dt = np.asarray(dst_tile, np.int64).reshape(len(n), -1)
        src, ok = self._runs(np.asarray(src_tile, np.int64), src_addr, n)
        dst, inside = self._runs(dt, np.asarray(dst_addr, np.int64).reshape(dt.shape), n[:, None])
        ok &= (inside | (dt < 0)).all(1)
        if not ok.all():
            return int(np.flatnonzero(~ok)[0])
        dst[dt < 0] = -1
        return int(_move(self.tags, src, n, np.ascontiguousarray(dst)))

    def _runs(self, tile, addr, n):
        """Flat index of each run's first word, and whether the run lies inside its tile's memory."""
        off = (np.asarray(addr, np.int64) - self.base) // WORD
        ok = (tile >= 0) & (tile < self.tiles) & (off >= 0) & (off + n <= self.words)
        return tile * self.words + off, ok
