"""Symbolic tile memory: one 64-bit tag per 32-bit word saying which element of which tensor the word
holds (the element of its first byte), at which iteration, written or not. Slabs are gathered and
scattered for whole groups of equally shaped vertices at once.

tag = valid << 63 | tensor << 48 | generation << 40 | code << 32 | element
code: a k-slice, key-split or column interval (partial sums, softmax states, statistics) or 1 for RoPE-rotated
values; element: the flat index in the tensor's [rows, cols] matrix (one iteration)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VALID = np.uint64(1 << 63)
WORD = 4


def pack(tensor, gen, code, elem) -> np.ndarray:
    t = np.asarray(tensor, np.uint64) << np.uint64(48)
    g = np.asarray(gen, np.uint64) << np.uint64(40)
    c = np.asarray(code, np.uint64) << np.uint64(32)
    return VALID | t | g | c | np.asarray(elem, np.uint64)


@dataclass
class Decoded:
    valid: np.ndarray
    tensor: np.ndarray
    gen: np.ndarray
    code: np.ndarray
    elem: np.ndarray


def unpack(tags: np.ndarray) -> Decoded:
    t = tags.astype(np.uint64)
    return Decoded((t >> np.uint64(63)).astype(bool), ((t >> np.uint64(48)) & np.uint64(0x7FFF)).astype(np.int32),
                   ((t >> np.uint64(40)) & np.uint64(0xFF)).astype(np.int32),
                   ((t >> np.uint64(32)) & np.uint64(0xFF)).astype(np.int32),
                   (t & np.uint64(0xFFFFFFFF)).astype(np.int64))


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

    def run_index(self, tile, addr, nwords) -> np.ndarray:
        """Flat word indices of ragged runs, concatenated."""
        n = np.asarray(nwords, np.int64)
        start = np.asarray(tile, np.int64) * self.words + (np.asarray(addr, np.int64) - self.base) // WORD
        return np.repeat(start - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
