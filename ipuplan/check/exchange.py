"""The checker's own count of exchange fragments per tile for moving a tensor between two layouts."""

from __future__ import annotations

import numpy as np


def _splits(n: int, parts: int) -> np.ndarray:
    return np.array([len(c) for c in np.array_split(np.arange(n), parts)], dtype=np.int64)


def _row_sizes(lay: dict) -> np.ndarray:
    g = lay["row_groups"]
    return np.concatenate([_splits(lay["rows"] // g, lay["pr"] // g)] * g)


def _tiles(lay: dict, T: int) -> np.ndarray:
    """[replicas, pr, pc] tile of each block."""
    rs = lay["row_stride"] or lay["pc"]
    reps = lay["rep_stride"] or lay["pr"] * lay["pc"]
    r = np.arange(lay["replicas"])[:, None, None]
    i = np.arange(lay["pr"])[None, :, None]
    j = np.arange(lay["pc"])[None, None, :]
    return (lay["start"] + r * reps + i * rs + j * lay["col_stride"]) % T


def _overlaps(a_sizes: np.ndarray, b_sizes: np.ndarray, b_offset: int = 0):
    """Pairs (ia, ib) of intervals that overlap, with the overlap length."""
    a0 = np.concatenate([[0], np.cumsum(a_sizes)[:-1]])
    b0 = np.concatenate([[0], np.cumsum(b_sizes)[:-1]]) + b_offset
    lo = np.maximum(a0[:, None], b0[None, :])
    hi = np.minimum((a0 + a_sizes)[:, None], (b0 + b_sizes)[None, :])
    ia, ib = np.nonzero(hi > lo)
    return ia, ib, (hi - lo)[ia, ib]


def _intervals(lay: dict, T: int, nbytes: int):
    """Row-major byte intervals (start, end, tile per replica) of a layout."""
    e = lay["elem"]
    if lay["flat"]:
        grains = -(-nbytes // 8)
        ends = np.minimum(np.cumsum(_splits(grains, lay["pr"]) * 8), nbytes)
        starts = np.concatenate([[0], ends[:-1]])
        t = _tiles(dict(lay, pc=1), T)[:, :, 0]
        return starts, ends, t
    rsz, csz = _row_sizes(lay), _splits(lay["cols"], lay["pc"])
    rb = np.repeat(np.arange(lay["pr"]), rsz)
    c0 = np.concatenate([[0], np.cumsum(csz)[:-1]])
    rows = np.arange(lay["rows"])
    starts = ((rows[:, None] * lay["cols"] + c0[None, :]) * e).ravel()
    ends = ((rows[:, None] * lay["cols"] + (c0 + csz)[None, :]) * e).ravel()
    t = _tiles(lay, T)[:, rb, :].reshape(lay["replicas"], -1)
    return starts, ends, t


def fragments(src: dict, window, dst: dict, T: int) -> tuple[np.ndarray, np.ndarray]:
    """(runs sent, runs received) per tile: a run is contiguous in both layouts; a run multicast to several
    replicas is sent once; nothing is sent to a tile that already holds the run."""
    fs, fr = np.zeros(T, np.int64), np.zeros(T, np.int64)
    if src["flat"] or dst["flat"]:
        n = dst["rows"] * dst["cols"] * dst["elem"]
        ss, se, st = _intervals(src, T, n)
        ds, de, dt = _intervals(dst, T, n)
        cuts = np.unique(np.concatenate([ss, se, ds, de]))
        pieces = cuts[:-1][np.diff(cuts) > 0]
        s_t = st[0][np.searchsorted(ss, pieces, side="right") - 1]
        d_t = dt[:, np.searchsorted(ds, pieces, side="right") - 1]
        remote = d_t != s_t[None]
        np.add.at(fs, s_t[remote.any(0)], 1)
        np.add.at(fr, d_t[remote], 1)
        return fs, fr
    c_off = window[0] if window else 0
    ir_s, ir_d, rlen = _overlaps(_row_sizes(src), _row_sizes(dst))
    src_c, dst_c = _splits(src["cols"], src["pc"]), _splits(dst["cols"], dst["pc"])
    ic_s, ic_d, clen = _overlaps(src_c, dst_c, c_off)
    st, dt = _tiles(src, T)[0], _tiles(dst, T)
    s_tile = st[ir_s[:, None], ic_s[None, :]]
    d_tile = dt[:, ir_d[:, None], ic_d[None, :]]
    whole = (clen == src_c[ic_s]) & (clen == dst_c[ic_d])
    frag = np.where(whole[None, :], 1, rlen[:, None])
    remote = d_tile != s_tile[None]
    any_remote = remote.any(0)
    np.add.at(fs, s_tile[any_remote], frag[any_remote])
    np.add.at(fr, d_tile[remote], np.broadcast_to(frag[None], remote.shape)[remote])
    return fs, fr
