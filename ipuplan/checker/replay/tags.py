"""Symbolic tile memory: one 64-bit tag per 32-bit word saying which element of which tensor the word
holds (the element of its first byte), at which iteration, written or not. Slabs are gathered and
scattered for whole groups of equally shaped vertices at once.

tag = valid << 63 | tensor << 48 | generation << 40 | code << 32 | element
code: a k-slice, key-split or column interval (partial sums, softmax states, statistics) or 1 for RoPE-rotated
values; element: the flat index in the tensor's [rows, cols] matrix (one iteration)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

VALID = np.uint64(1 << 63)
WORD = 4


def pack(tensor, gen, code, elem) -> np.ndarray:
    t = np.asarray(tensor, np.uint64) << np.uint64(48)
    g = np.asarray(gen, np.uint64) << np.uint64(40)
    c = np.asarray(code, np.uint64) << np.uint64(32)
    return VALID | t | g | c | np.asarray(elem, np.uint64)


class Decoded:
    """The fields of a tag array, each derived when first asked for. numpy's casts from uint64 to signed types
    are an order of magnitude slower than shifts, masks and uint32 casts, so fields are cut from the high and
    low 32-bit words and reinterpreted (every field fits its type's positive range)."""

    def __init__(self, tags: np.ndarray):
        t = np.asarray(tags, np.uint64)
        self._t = t
        self.hi = (t >> np.uint64(32)).astype(np.uint32)  # valid | tensor | generation | code

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
        return (self._t & np.uint64(0xFFFFFFFF)).view(np.int64)

    def holds(self, tensor: int, gen: int) -> np.ndarray:
        """Written, of `tensor` at iteration `gen` (any code): `valid & tensor == t & gen == g` in one compare."""
        tensor, gen = int(tensor), int(gen)
        if not (0 <= tensor <= 0x7FFF and 0 <= gen <= 0xFF):
            raise ValueError(f"tensor {tensor} or iteration {gen} outside the tag's fields")
        key = np.uint32(1 << 31 | tensor << 16 | gen << 8)
        return (self.hi & np.uint32(0xFFFFFF00)) == key


def unpack(tags: np.ndarray) -> Decoded:
    return Decoded(tags)


class Memory:
    """Tags of every word of every tile, [tiles, words]; addresses are absolute (from `base`)."""

    def __init__(self, tiles: int, base: int, end: int):
        self.base, self.words = base, (end - base) // WORD
        self.tags = np.zeros(tiles * self.words, np.uint64)

    def index(self, tile, addr, rows: int, words: int, pitch) -> np.ndarray:
        """[V, rows, words] flat word indices of equally shaped slabs (addr, pitch word-aligned)."""
        start = np.asarray(tile, np.int64) * self.words + (np.asarray(addr, np.int64) - self.base) // WORD
        r = np.arange(rows)[None, :, None] * (np.asarray(pitch, np.int64) // WORD)[:, None, None]
        return start[:, None, None] + r + np.arange(words)[None, None, :]

    def word_index(self, tile, addr) -> np.ndarray:
        """Flat indices of single words (addr word-aligned)."""
        return np.asarray(tile, np.int64) * self.words + (np.asarray(addr, np.int64) - self.base) // WORD

    def run_index(self, tile, addr, nwords) -> np.ndarray:
        """Flat word indices of ragged runs, concatenated."""
        n = np.asarray(nwords, np.int64)
        start = np.asarray(tile, np.int64) * self.words + (np.asarray(addr, np.int64) - self.base) // WORD
        return np.repeat(start - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
