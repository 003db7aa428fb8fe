"""Transfers between two layouts: per-tile send/receive bytes and fragments, multicast merged, vectorized."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import ColumnWindow, Layout


@dataclass(frozen=True)
class Transfer:
    """What converting a tensor from `src` to `dst` costs on each tile.

    send/recv: bytes each tile sends (a multicast run counts once) and receives; frags_send/frags_recv:
    contiguous runs; cells: number of (source block x destination block) rectangles, moved or local.
    `moves` lists every cell: element ranges [r0, r0+nr) x [c0, c0+nc) of the destination matrix (for
    flat layouts, a byte range as r0/nr with c0=0, nc=1), its source tile, and one destination tile per
    destination replica (a multicast group).
    """

    send: np.ndarray
    recv: np.ndarray
    frags_send: np.ndarray
    frags_recv: np.ndarray
    cells: int
    moves: dict | None = None


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    x = np.sort(x, kind="stable")
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if x.size else x


def _bounds(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)])


def _segments(a: np.ndarray, b: np.ndarray, lo: int, hi: int):
    """Union of two boundary vectors clipped to [lo, hi): segment starts, lengths, and block ids in a, b."""
    cuts = _sorted_unique(np.concatenate([a, b, [lo, hi]]))
    cuts = cuts[(cuts >= lo) & (cuts <= hi)]
    starts, lens = cuts[:-1], np.diff(cuts)
    keep = lens > 0
    starts, lens = starts[keep], lens[keep]
    ia = np.searchsorted(a, starts, side="right") - 1
    ib = np.searchsorted(b, starts, side="right") - 1
    return starts, lens, ia, ib


def transfers(src: Layout | ColumnWindow, dst: Layout, tiles: int) -> Transfer:
    """Move the matrix (or column window of it) held in `src` into `dst`.

    The source is read from its first replica (one copy is enough). Each cell of the union grid of both
    row and column boundaries has one source tile and one destination tile per replica; a cell is one
    fragment when it spans whole rows of both the source block and the destination block, else one
    fragment per row. Destinations holding the cell on the source tile itself need no transfer.
    """
    c0, c1 = 0, None
    if isinstance(src, ColumnWindow):
        src, c0, c1 = src.base, src.c0, src.c1
    c1 = src.cols if c1 is None else c1
    if src.flat or dst.flat:
        return _flat_transfer(src, dst, tiles, c0, c1)
    if src.rows != dst.rows or c1 - c0 != dst.cols:
        raise ValueError(f"transfer between different shapes: {src.describe()}[{c0}:{c1}] -> {dst.describe()}")
    elem = dst.elem
    rs_b, rd_b = _bounds(src.row_sizes()), _bounds(dst.row_sizes())
    cs_b, cd_b = _bounds(src.col_sizes()), _bounds(dst.col_sizes()) + c0
    rst, rlen, ri_s, ri_d = _segments(rs_b, rd_b, 0, src.rows)
    cst, clen, ci_s, ci_d = _segments(cs_b, cd_b, c0, c1)
    st = src.block_tiles(tiles)[0]  # [pr, pc]
    dt = dst.block_tiles(tiles)  # [reps, pr, pc]
    s_tile = st[ri_s[:, None], ci_s[None, :]]  # [R, C]
    d_tile = dt[:, ri_d[:, None], ci_d[None, :]]  # [reps, R, C]
    nbytes = rlen[:, None] * clen[None, :] * elem  # [R, C]
    # whole-row runs: the cell spans the full width of both blocks
    s_full = clen[None, :] == src.col_sizes()[ci_s][None, :]
    d_full = clen[None, :] == dst.col_sizes()[ci_d][None, :]
    frags = np.where(s_full & d_full, 1, rlen[:, None])  # [R, C]
    remote = d_tile != s_tile[None]
    any_remote = remote.any(0)
    send = np.bincount(s_tile[any_remote], weights=nbytes[any_remote], minlength=tiles)
    fs = np.bincount(s_tile[any_remote], weights=frags[any_remote], minlength=tiles)
    w_b = np.broadcast_to(nbytes[None], remote.shape)[remote]
    w_f = np.broadcast_to(frags[None], remote.shape)[remote]
    recv = np.bincount(d_tile[remote], weights=w_b, minlength=tiles)
    fr = np.bincount(d_tile[remote], weights=w_f, minlength=tiles)
    R, C = len(rlen), len(clen)
    moves = {"r0": np.repeat(rst, C), "nr": np.repeat(rlen, C), "c0": np.tile(cst - c0, R), "nc": np.tile(clen, R),
             "src": s_tile.ravel(), "dst": d_tile.reshape(d_tile.shape[0], -1).T}
    return Transfer(send.astype(np.int64), recv.astype(np.int64), fs.astype(np.int64), fr.astype(np.int64),
                    int(remote.size), moves)


def _flat_transfer(src: Layout, dst: Layout, tiles: int, c0: int, c1: int) -> Transfer:
    """Flat homes hold row-major byte chunks: intersect byte intervals of the two linearizations."""
    if (c0, c1) != (0, src.cols) or src.rows * src.cols != dst.rows * dst.cols:
        raise ValueError("flat transfers move whole tensors")
    elem = dst.elem
    total = src.rows * src.cols * elem

    def intervals(lay: Layout):
        """(starts, ends, tiles) byte intervals of replica r=each, in row-major byte order."""
        if lay.flat:
            sizes = np.diff(np.minimum(_bounds(lay.block_bytes()[:, 0]), total))
            b = _bounds(sizes)
            t = lay.block_tiles(tiles)[:, :, 0]  # [reps, pr]
            return b[:-1], b[1:], t
        rb, cb = _bounds(lay.row_sizes()), _bounds(lay.col_sizes())
        rows = np.arange(lay.rows)
        bi = np.searchsorted(rb, rows, side="right") - 1
        starts = (rows[:, None] * lay.cols + cb[None, :-1]) * elem  # one run per (row, col block)
        ends = (rows[:, None] * lay.cols + cb[None, 1:]) * elem
        t = lay.block_tiles(tiles)[:, bi, :]  # [reps, rows, pc]
        return starts.ravel(), ends.ravel(), t.reshape(t.shape[0], -1)

    ss, se, stl = intervals(src)
    ds, de, dtl = intervals(dst)
    order_s, order_d = np.argsort(ss, kind="stable"), np.argsort(ds, kind="stable")
    ss, se, stl0 = ss[order_s], se[order_s], stl[0][order_s]
    ds, de, dtl = ds[order_d], de[order_d], dtl[:, order_d]
    cuts = _sorted_unique(np.concatenate([ss, se, ds, de]))
    a, b = cuts[:-1], cuts[1:]
    i_s = np.searchsorted(ss, a, side="right") - 1
    i_d = np.searchsorted(ds, a, side="right") - 1
    nb = b - a
    s_t = stl0[i_s]
    d_t = dtl[:, i_d]
    remote = d_t != s_t[None]
    any_remote = remote.any(0)
    send = np.bincount(s_t[any_remote], weights=nb[any_remote], minlength=tiles)
    fs = np.bincount(s_t[any_remote], minlength=tiles)
    recv = np.bincount(d_t[remote], weights=np.broadcast_to(nb[None], remote.shape)[remote], minlength=tiles)
    fr = np.bincount(d_t[remote], minlength=tiles)
    moves = {"r0": a, "nr": nb, "c0": np.zeros_like(a), "nc": np.ones_like(a), "src": s_t, "dst": d_t.T}
    return Transfer(send.astype(np.int64), recv.astype(np.int64), fs.astype(np.int64), fr.astype(np.int64),
                    int(remote.size), moves)
