"""Where parameters live between uses, and how replicated operands travel: homes and relays."""

from __future__ import annotations

import dataclasses

from ..layout import Layout, MemClass


def home_layout(tiles: int, key: str, staged: Layout) -> Layout:
    """A staged parameter's compact home: the blocks of the layout it is staged into (one replica, each as
    stored: padded and aligned), concatenated block by block, split evenly over every tile in 8-byte
    grains; the starting tile is spread by name so remainders do not pile up on tile 0. One iteration."""
    start = sum(key.encode()) * 37 % tiles
    stream = int(staged.block_bytes().sum())
    return Layout(1, stream, 1, pr=tiles, flat=True, start=start)


def relay_layout(dst: Layout, tiles: int) -> Layout:
    """Relay tiles for a replicated destination: one unreplicated, unpadded copy of its blocks in standard
    memory, packed on consecutive tiles starting half-way round the machine, in the destination's block
    order; the relays then multicast to every replica."""
    return dataclasses.replace(dst, replicas=1, rep_stride=0, row_stride=0, col_stride=1, group_stride=0,
                               start=(dst.start + tiles // 2) % tiles, mem=MemClass.STANDARD, row_align=1,
                               col_align=1)
