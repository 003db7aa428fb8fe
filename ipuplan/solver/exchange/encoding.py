"""How an exchange is encoded on each tile: table bytes and fragments from a transfer.

Per tile and exchange superstep the encoded exchange program holds one send word per contiguous run it
sends (a multicast run once), one receive-address word per run it receives, and, on every tile, the
superstep's sync and branch words (a constant per superstep: every tile takes part in every sync).
A Repeat body's exchange code is encoded once; a run whose source address moves with the iteration
(a staged per-layer parameter read from its home) needs a patch word per sending tile and parameter:
homes of consecutive layers sit at a uniform stride, so one displacement per sender suffices.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...layout import Layout, MemClass, Transfer
from ...target import Target


def encode(target: Target, tr: Transfer, patched: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(table bytes, fragments) per tile for one transfer inside a superstep."""
    frags = tr.frags_send + tr.frags_recv
    table = target.send_fragment_bytes * tr.frags_send + target.recv_fragment_bytes * tr.frags_recv
    if patched:
        table = table + target.patch_word_bytes * (tr.frags_send > 0)
    return table.astype(np.int64), frags.astype(np.int64)


def relay_layout(dst: Layout, tiles: int) -> Layout:
    """Relay tiles for a replicated destination: one unreplicated copy of its blocks, packed on
    consecutive tiles starting half-way round the machine, in the destination's block order."""
    return dataclasses.replace(dst, replicas=1, rep_stride=0, row_stride=0, col_stride=1,
                               start=(dst.start + tiles // 2) % tiles, mem=MemClass.STANDARD)
