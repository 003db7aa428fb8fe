"""Per-tile bytes of a recorded layout, computed from its fields alone (no ipuplan.layout code)."""

from __future__ import annotations

import numpy as np

ALIGN = 8


def _splits(n: int, parts: int) -> np.ndarray:
    """Item counts of `parts` contiguous pieces of n items, larger pieces first (numpy.array_split)."""
    return np.array([len(c) for c in np.array_split(np.arange(n), parts)], dtype=np.int64)


def _round(x, a: int):
    return (np.asarray(x, dtype=np.int64) + a - 1) // a * a


def tile_bytes(lay: dict, tiles: int) -> np.ndarray:
    """Bytes the layout allocates on every tile: each block's padded items times the element size,
    rounded up to 8 bytes, placed on start + r*rep_stride + i*row_stride + j*col_stride (mod tiles)."""
    rows, cols, elem = lay["rows"], lay["cols"], lay["elem"]
    pr, pc, reps = lay["pr"], lay["pc"], lay["replicas"]
    rs = lay["row_stride"] or pc
    reps_stride = lay["rep_stride"] or pr * pc
    if lay["flat"]:
        grains = -(-rows * cols * elem // ALIGN)
        sizes = (_splits(grains, pr) * ALIGN)[:, None]
    else:
        g = lay["row_groups"]
        rsz = np.concatenate([_splits(rows // g, pr // g)] * g)
        csz = _splits(cols, pc)
        sizes = _round(_round(rsz, lay["row_align"])[:, None] * _round(csz, lay["col_align"])[None, :] * elem,
                       ALIGN)
    out = np.zeros(tiles, np.int64)
    i = np.arange(sizes.shape[0])[:, None] * rs
    j = np.arange(sizes.shape[1])[None, :] * lay["col_stride"]
    for r in range(reps):
        t = (lay["start"] + r * reps_stride + i + j) % tiles
        np.add.at(out, t.ravel(), np.broadcast_to(sizes, t.shape).ravel())
    return out


def block_owners(lay: dict, tiles: int) -> np.ndarray:
    """How many blocks of the layout each tile holds."""
    ones = dict(lay, elem=1, flat=False, row_align=1, col_align=1, rows=lay["pr"], cols=lay["pc"], row_groups=1)
    return tile_bytes(ones, tiles) // ALIGN
