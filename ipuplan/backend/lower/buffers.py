"""Placed buffers: every data buffer of the plan with its layout and, per tile, its address, so that any
block of any layout resolves to (tile, address, rows, pitch) — the addresses every later stage binds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...layout import Layout
from ..placement.requests import data_rows
from .program import BufferTable


class LoweringError(RuntimeError):
    """The plan and its placement disagree with what lowering needs: a bug, never user input."""


@dataclass(frozen=True)
class Placed:
    """One data buffer: its layout (one iteration), iterations held, and its address on every tile."""

    name: str
    layout: Layout
    times: int
    first: int
    last: int
    addr: np.ndarray  # [T] absolute address, -1 where the tile holds none of it
    stride: np.ndarray  # [T] bytes of one iteration on the tile (a sequence advances by it)

    def blocks(self, tiles: int) -> "Blocks":
        """Every block of the layout at its address (replica, row block, column block)."""
        lay = self.layout
        t = lay.block_tiles(tiles)
        a = self.addr[t]
        if ((a < 0) & (lay.block_bytes()[None] > 0)).any():
            raise LoweringError(f"{self.name}: a block sits on a tile where the buffer has no address")
        rows = np.broadcast_to(lay.row_sizes()[None, :, None], t.shape)
        if lay.flat:
            rows = np.ones_like(t)
        pitch = np.broadcast_to(lay.pitches()[None, None, :], t.shape) if not lay.flat else \
            np.broadcast_to(lay.block_bytes()[None], t.shape)
        data = np.broadcast_to((lay.col_sizes() * lay.elem)[None, None, :], t.shape) if not lay.flat else pitch
        return Blocks(t, a + lay.block_offsets(tiles), np.asarray(rows), np.asarray(pitch), np.asarray(data),
                      self.stride[t])


@dataclass(frozen=True)
class Blocks:
    """[replicas, pr, pc] arrays: tile, address, rows, pitch, data bytes per row, per-iteration stride."""

    tile: np.ndarray
    addr: np.ndarray
    rows: np.ndarray
    pitch: np.ndarray
    row_bytes: np.ndarray
    stride: np.ndarray


def placed_buffers(p, chosen: set, pp, base: int) -> tuple[dict[str, Placed], BufferTable]:
    """Every chosen contribution's addresses from the placement, and the full per-tile buffer table
    (support and tables included) as the package records it."""
    T = p.target.tiles
    rows = data_rows(p, chosen)
    addr = {name: np.full(T, -1, np.int64) for name, _ in rows}
    names: dict[str, int] = {}
    cols: dict[str, list] = {k: [] for k in ("name", "group", "addr", "size", "first", "last")}
    group_of_tile = np.full(T, -1, np.int64)
    for g, (grp, offs) in enumerate(zip(pp.groups, pp.offsets)):
        if offs is None:
            raise LoweringError("the plan is not placed on every tile")
        group_of_tile[grp.tiles] = g
        for b, o in zip(grp.inst.buffers, offs):
            if b.name in addr:
                addr[b.name][grp.tiles] = base + int(o)
            cols["name"].append(names.setdefault(b.name, len(names)))
            cols["group"].append(g)
            cols["addr"].append(base + int(o))
            cols["size"].append(b.size)
            cols["first"].append(b.first)
            cols["last"].append(b.last)
    if (group_of_tile < 0).any():
        raise LoweringError(f"tile {int(np.flatnonzero(group_of_tile < 0)[0])} is in no placement group")
    out = {}
    for name, cb in rows:
        lay = cb.layout
        out[name] = Placed(name, lay, cb.times, cb.first, cb.last, addr[name], lay.tile_bytes(T))
    table = BufferTable(tuple(names), group_of_tile, *(np.asarray(cols[k], np.int64) for k in
                                                       ("name", "group", "addr", "size", "first", "last")))
    return out, table
