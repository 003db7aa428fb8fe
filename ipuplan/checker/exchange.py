"""The checker's own count of what an exchange puts in each tile's tables: runs, pieces, instruction words.

A run is contiguous in the source and destination blocks (a cell covering whole stored rows of both with
equal pitches, else one run per row; in the shaped catalogue also a cell spanning the full stored width of
both blocks at equal pitches, moved with its padding); a run longer than one physical transfer is several
pieces. A run sent
to several tiles is sent once; a destination on the sending tile receives by loopback when the run also
goes elsewhere, and a run that only goes to its own tile is a local copy, performed by a Copy vertex whose
descriptor is counted with the tile's tables (per run and destination).
Instruction words per piece: sent `send` + `delay` + `sendoff` continuations; received delayxpic, delaypic,
delay (the target's exchange section). Written apart from ipuplan.layout on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codelets.vector import copy_list_words
from .geometry import block_bytes, block_tiles, col_sizes, pitches, row_sizes


@dataclass
class Counts:
    """Per-tile exchange figures of one transfer."""

    send_pieces: np.ndarray
    recv_pieces: np.ndarray
    words: np.ndarray  # row + send + receive + local-copy-list words
    send_bytes: np.ndarray
    recv_bytes: np.ndarray

    def table_bytes(self, target, patched: bool) -> np.ndarray:
        w = self.words + (self.send_pieces + (self.send_pieces > 0) if patched else 0)
        return w * target.instruction_bytes


def _piece_words(words: np.ndarray, target) -> tuple[np.ndarray, np.ndarray]:
    """(pieces, send instruction words) of runs of `words` words."""
    tm, sm, so, d = (target.encoding.transfer_max_words, target.encoding.send_max_words,
                     target.encoding.sendoff_max_words, target.encoding.send_delay_words)
    pieces = -(-words // tm)
    last = words - (pieces - 1) * tm
    per = lambda p: 1 + d + np.maximum(0, -(-(p - sm) // so))
    return pieces, (pieces - 1) * per(np.full_like(words, tm)) + per(last)


def _count(T: int, target, src, dst, runs, run_words, run_bytes) -> Counts:
    """src [n] tiles; dst [n, reps] tiles; runs [n] runs per cell, each run_words words / run_bytes bytes."""
    pieces, swords = _piece_words(run_words, target)
    pieces, swords = pieces * runs, swords * runs
    nbytes = run_bytes * runs
    remote = (dst != src[:, None]).any(1)
    reps = dst.shape[1]
    rsrc, rdst = src[remote], dst[remote].ravel()
    b = lambda idx, w: np.bincount(idx, weights=w, minlength=T).astype(np.int64)
    sp = b(rsrc, pieces[remote])
    rp = b(rdst, np.repeat(pieces[remote], reps))
    words = (b(rsrc, swords[remote]) + rp * target.encoding.recv_piece_words
             + copy_list_words(target) * b(src[~remote], runs[~remote] * reps))
    words += target.encoding.row_words * ((sp + rp) > 0)
    return Counts(sp, rp, words, b(rsrc, nbytes[remote]), b(rdst, np.repeat(nbytes[remote], reps)))


def _overlaps(a_sizes, b_sizes, b_offset: int = 0):
    """(ia, ib, start, length) of every overlap of two interval lists (b shifted by b_offset)."""
    a0 = np.concatenate([[0], np.cumsum(a_sizes)[:-1]])
    b0 = np.concatenate([[0], np.cumsum(b_sizes)[:-1]]) + b_offset
    lo = np.maximum(a0[:, None], b0[None, :])
    hi = np.minimum((a0 + a_sizes)[:, None], (b0 + b_sizes)[None, :])
    ia, ib = np.nonzero(hi > lo)
    return ia, ib, lo[ia, ib], (hi - lo)[ia, ib]


def grid_transfer(src: dict, window, dst: dict, T: int, target, rows=None, whole_rows: bool = False) -> Counts:
    """Move src (columns window of it) into dst; rows = (dst row, src row, n) moves those rows only;
    `whole_rows`: a cell that is every stored column of both blocks moves its rows, padding and all, as one."""
    d0, s0, n = rows if rows is not None else (0, 0, dst["rows"])
    c_off = window[0] if window else 0
    rs, rd = row_sizes(src), row_sizes(dst)
    a0 = np.concatenate([[0], np.cumsum(rs)[:-1]]) + (d0 - s0)  # source row blocks in destination rows
    b0 = np.concatenate([[0], np.cumsum(rd)[:-1]])
    lo = np.maximum(np.maximum(a0[:, None], b0[None, :]), d0)
    hi = np.minimum(np.minimum((a0 + rs)[:, None], (b0 + rd)[None, :]), d0 + n)
    ir_s, ir_d = np.nonzero(hi > lo)
    rlen = (hi - lo)[ir_s, ir_d]
    ic_s, ic_d, cstart, clen = _overlaps(col_sizes(src), col_sizes(dst), c_off)
    st, dt = block_tiles(src, T)[0], block_tiles(dst, T)
    s = st[ir_s[:, None], ic_s[None, :]].ravel()
    d = dt[:, ir_d[:, None], ic_d[None, :]].reshape(dt.shape[0], -1).T
    rl = np.repeat(rlen, len(clen))
    row_b = np.tile(clen * dst["elem"], len(rlen))
    ps, pd = np.tile(pitches(src)[ic_s], len(rlen)), np.tile(pitches(dst)[ic_d], len(rlen))
    whole = (rl == 1) | ((row_b == ps) & (row_b == pd))
    run_b = np.where(whole, rl * row_b, row_b)
    if whole_rows:
        cs, cd = col_sizes(src), col_sizes(dst)
        s0 = np.concatenate([[0], np.cumsum(cs)[:-1]])
        d0 = np.concatenate([[0], np.cumsum(cd)[:-1]]) + c_off
        spans = (cstart == s0[ic_s]) & (clen == cs[ic_s]) & (cstart == d0[ic_d]) & (clen == cd[ic_d])
        padded = np.tile(spans, len(rlen)) & (ps == pd) & ~whole
        run_b = np.where(padded, rl * ps, run_b)
        whole = whole | padded
    runs = np.where(whole, 1, rl)
    return _count(T, target, s, d, runs, -(-run_b // 4), run_b)


def stream_transfer(home: dict, staged: dict, T: int, target) -> Counts:
    """Stage `staged` from its block-major home: block k's stream interval [o_k, o_k + b_k) goes from the home
    chunks it overlaps to every replica of block k."""
    bb = block_bytes(staged).ravel()
    chunks = block_bytes(dict(home, mem="std"))[:, 0]
    ik, ic, _, length = _overlaps(bb, chunks)
    s = block_tiles(home, T)[0, :, 0][ic]
    d = block_tiles(staged, T).reshape(staged["replicas"], -1)[:, ik].T
    return _count(T, target, s, d, np.ones_like(length), -(-length // 4), length)


def block_moves(T: int, target, src, dst, nbytes) -> Counts:
    """Whole blocks as single runs: src[i] -> dst[i, :] (a multicast group), nbytes[i] each."""
    src = np.asarray(src)
    dst = np.asarray(dst).reshape(len(src), -1)
    nb = np.asarray(nbytes)
    return _count(T, target, src, dst, np.ones_like(nb), -(-nb // 4), nb)
