"""Where parameters live between uses, and how replicated operands travel: homes and relays.

A staged parameter's home is one of (`Home`):
- spread: the blocks of the layout it is staged into (one replica, each as stored: padded and aligned), end to
  end, split evenly over every tile in 8-byte grains. A block arrives as one piece per home chunk it spans.
- blocks: one replica of the staged layout itself, in standard memory, its blocks on consecutive tiles from a
  start spread by name: every staged block leaves its home as one run (padding included), multicast to all its
  replicas. A one-row block may be split further into `chunks` column pieces on as many tiles (fewer bytes per
  home tile, one piece per chunk). Offered when the home's busiest tile holds at most HOME_TILE_BYTES over all
  iterations (small vectors, biases, positional tables, and weights of grids with many distinct blocks).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from ..layout import Layout, MemClass
from .impl import Home, HomeKind, SPREAD

HOME_TILE_BYTES = 64 * 1024  # a blocks home is offered when no tile holds more of it than this (all iterations)
VECTOR_CHUNKS = 8  # the chunked alternative for one-block vectors: 1/8 of the bytes per home tile, 8 pieces


def home_start(tiles: int, key: str) -> int:
    """The home's first tile, spread by name so that different parameters' remainders do not pile up."""
    return sum(key.encode()) * 37 % tiles


def home_layout(tiles: int, key: str, staged: Layout, home: Home = SPREAD) -> Layout:
    """A staged parameter's home for one iteration (the sequence of a Repeat holds `count` of them end to end)."""
    start = home_start(tiles, key)
    if home.kind is HomeKind.SPREAD:
        stream = int(staged.block_bytes().sum())
        return Layout(1, stream, 1, pr=tiles, flat=True, start=start)
    return dataclasses.replace(staged, replicas=1, rep_stride=0, pc=staged.pc * home.chunks, row_stride=0,
                               col_stride=1, group_stride=0, start=start, mem=MemClass.STANDARD)


@lru_cache(maxsize=4096)
def block_homes(tiles: int, key: str, staged: Layout, count: int) -> tuple[Home, ...]:
    """The blocks homes worth offering for `staged` (held `count` times): whole blocks when no home tile would
    hold more than HOME_TILE_BYTES, and for a single one-row block also VECTOR_CHUNKS column chunks."""
    if staged.flat:
        return []
    out = []
    chunked = staged.pr * staged.pc == 1 and staged.rows == 1 and staged.col_align == 1 and \
        -(-staged.cols // staged.cgrain) >= VECTOR_CHUNKS
    for chunks in (1, VECTOR_CHUNKS) if chunked else (1,):
        h = Home(HomeKind.BLOCKS, chunks)
        if int(home_layout(tiles, key, staged, h).tile_bytes(tiles).max()) * count <= HOME_TILE_BYTES:
            out.append(h)
    return tuple(out)


def relay_layout(dst: Layout, tiles: int) -> Layout:
    """Relay tiles for a replicated destination: one unreplicated, unpadded copy of its blocks in standard
    memory, packed on consecutive tiles starting half-way round the machine, in the destination's block
    order; the relays then multicast to every replica."""
    return dataclasses.replace(dst, replicas=1, rep_stride=0, row_stride=0, col_stride=1, group_stride=0,
                               start=(dst.start + tiles // 2) % tiles, mem=MemClass.STANDARD, row_align=1,
                               col_align=1)
