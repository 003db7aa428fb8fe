"""Transfers between two layouts: every cell with its byte offsets, runs, pieces and per-tile exchange
encoding, vectorized.

A cell is a rectangle of the union grid of both layouts' row and column boundaries: one source block (the
first replica: one copy is enough), one destination block per destination replica. It moves as one run
when it covers whole stored rows of both blocks (equal pitches, no padding between rows), else as one
run per row. With `whole_rows`, a cell that spans the full stored width of both blocks at equal pitches
moves as one run of whole stored rows, padding included (the padding is storage, never read as data). A run longer than `transfer_max_words` is split into pieces. Destinations on the source
tile itself are received by multicast loopback when the cell also goes to another tile; a cell whose
every destination is local is a local copy (no exchange code).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import WORD, ColumnWindow, Layout


@dataclass(frozen=True)
class Encoding:
    """IPU21 exchange instruction facts (targets/*.yaml `exchange`), in 32-bit instruction words."""

    transfer_max_words: int = 4148  # one physical transfer
    send_max_words: int = 64  # `send`: 6-bit count field, absolute source word address
    sendoff_max_words: int = 4096  # `sendoff`: 12-bit count, continues the outgoing stream
    recv_piece_words: int = 3  # delayxpic (source), delaypic (pointer), delay (wait for payload)
    send_delay_words: int = 1  # one `delay` before each piece sent
    row_words: int = 3  # per tile per transfer row: exchange config, return branch, pad for 8-B sendpicp

    def send_words(self, words: np.ndarray) -> np.ndarray:
        """Instruction words to send runs of `words` words: per piece a `send` (<= 64 words), `sendoff`
        continuations (<= 4096 words each) and a delay."""
        w = np.asarray(words, np.int64)
        full, rem = np.divmod(w, self.transfer_max_words)
        per_full = self._piece(self.transfer_max_words)
        tail = np.where(rem > 0, 1 + self.send_delay_words + -(-np.maximum(rem - self.send_max_words, 0)
                                                                   // self.sendoff_max_words), 0)
        return full * per_full + tail

    def _piece(self, p: int) -> int:
        return 1 + self.send_delay_words + -(-max(p - self.send_max_words, 0) // self.sendoff_max_words)

    def pieces(self, words: np.ndarray) -> np.ndarray:
        return -(-np.asarray(words, np.int64) // self.transfer_max_words)


@dataclass(frozen=True)
class Transfer:
    """What converting a tensor from `src` to `dst` costs on each tile, and every cell it moves.

    Per tile: bytes sent (a multicast run once) and received (loopback included); pieces sent and received
    (the fragments the per-tile limit counts); send-side and receive-side instruction words; bytes copied
    locally. `cells` holds, per cell: r0/nr/c0/nc (destination element coordinates; a byte range of the
    stream for a home), src tile, src_off (bytes into the source tile's allocation), src_pitch, dst [cells, replicas]
    tiles, dst_off, dst_pitch, row_bytes, runs, contiguous.
    """

    send: np.ndarray
    recv: np.ndarray
    send_pieces: np.ndarray
    recv_pieces: np.ndarray
    send_words: np.ndarray
    recv_words: np.ndarray
    local: np.ndarray
    local_runs: np.ndarray
    subword_runs: int
    cells: dict

    @property
    def frags_send(self) -> np.ndarray:
        return self.send_pieces

    @property
    def frags_recv(self) -> np.ndarray:
        return self.recv_pieces

    def table_words(self, enc: Encoding, copy_words: int, patched: bool = False) -> np.ndarray:
        """Encoded exchange-row words per tile: rows, sends, receives, `copy_words` per local run and
        destination (the descriptor of the copy vertex that moves it), and for a source that moves with a
        Repeat iteration one patch-list word per piece sent plus one displacement word per sending row."""
        part = (self.send_pieces + self.recv_pieces) > 0
        words = enc.row_words * part + self.send_words + self.recv_words + copy_words * self.local_runs
        if patched:
            words = words + self.send_pieces + (self.send_pieces > 0)
        return words.astype(np.int64)


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    x = np.sort(x, kind="stable")
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if x.size else x


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


def transfers(src: Layout | ColumnWindow, dst: Layout, tiles: int, rows: tuple[int, int, int] | None = None,
              enc: Encoding = Encoding(), whole_rows: bool = False) -> Transfer:
    """Move the matrix (or column window of it) held in `src` into `dst`. `rows` = (dst_row0, src_row0, n)
    moves only n rows, src rows [src_row0, +n) into dst rows [dst_row0, +n) (concatenation). `whole_rows`:
    a cell spanning both blocks' full stored width at equal pitches moves its rows as one run, padding and all."""
    c0, c1 = 0, None
    if isinstance(src, ColumnWindow):
        src, c0, c1 = src.base, src.c0, src.c1
    c1 = src.cols if c1 is None else c1
    if src.flat or dst.flat:
        raise ValueError("flat layouts (homes) move by stream_transfer")
    d0, s0, n = rows if rows is not None else (0, 0, dst.rows)
    if rows is None and src.rows != dst.rows or c1 - c0 != dst.cols or src.elem != dst.elem:
        raise ValueError(f"transfer between different shapes: {src.describe()}[{c0}:{c1}] -> {dst.describe()}")
    elem = dst.elem
    rs_b, rd_b = src.row_bounds() + (d0 - s0), dst.row_bounds()
    cs_b, cd_b = src.col_bounds(), dst.col_bounds() + c0
    rst, rlen, ri_s, ri_d = _segments(rs_b, rd_b, d0, d0 + n)
    cst, clen, ci_s, ci_d = _segments(cs_b, cd_b, c0, c1)
    R, C = len(rlen), len(clen)
    s_off = (src.block_offsets(tiles)[0][ri_s[:, None], ci_s[None, :]]
             + (rst - rs_b[ri_s])[:, None] * src.pitches()[ci_s][None, :] + ((cst - cs_b[ci_s]) * elem)[None, :])
    d_offs = dst.block_offsets(tiles)[:, ri_d[:, None], ci_d[None, :]]  # [reps, R, C]
    d_off = d_offs + ((rst - rd_b[ri_d])[:, None] * dst.pitches()[ci_d][None, :]
                      + ((cst - cd_b[ci_d]) * elem)[None, :])[None]
    s_pitch = np.broadcast_to(src.pitches()[ci_s][None, :], (R, C))
    d_pitch = np.broadcast_to(dst.pitches()[ci_d][None, :], (R, C))
    row_bytes = np.broadcast_to((clen * elem)[None, :], (R, C))
    contiguous = (rlen[:, None] == 1) | ((row_bytes == s_pitch) & (row_bytes == d_pitch))
    run_bytes = np.where(contiguous, rlen[:, None] * row_bytes, row_bytes)
    if whole_rows:  # the cell is every stored column of both blocks: its rows are one stretch of memory in both
        full = ((cst == cs_b[ci_s]) & (cst + clen == cs_b[ci_s + 1]) & (cst == cd_b[ci_d])
                & (cst + clen == cd_b[ci_d + 1]))[None, :] & (s_pitch == d_pitch) & ~contiguous
        contiguous = contiguous | full
        run_bytes = np.where(full, rlen[:, None] * s_pitch, run_bytes)
    cells = {
        "r0": np.repeat(rst, C), "nr": np.repeat(rlen, C), "c0": np.tile(cst - c0, R), "nc": np.tile(clen, R),
        "src": src.block_tiles(tiles)[0][ri_s[:, None], ci_s[None, :]].ravel(), "src_off": s_off.ravel(),
        "src_pitch": s_pitch.ravel(), "dst": dst.block_tiles(tiles)[:, ri_d[:, None], ci_d[None, :]]
        .reshape(dst.replicas, -1).T, "dst_off": d_off.reshape(dst.replicas, -1).T, "dst_pitch": d_pitch.ravel(),
        "row_bytes": row_bytes.ravel(), "contiguous": contiguous.ravel(), "run_bytes": run_bytes.ravel(),
    }
    cells["runs"] = np.where(cells["contiguous"], 1, cells["nr"])
    return _account(cells, tiles, enc)


def stream_transfer(home: Layout, dst: Layout, tiles: int, enc: Encoding = Encoding()) -> Transfer:
    """Stage `dst` from a block-major home: `home` is a flat layout of the byte stream formed by dst's
    blocks (row block, then column block; replica 0's allocated bytes, padding included). Every replica
    of a block receives that block's stream interval, so each block arrives as a few long runs (one per
    home chunk it spans), multicast to all replicas."""
    if not home.flat or dst.flat:
        raise ValueError("a stream transfer goes from a flat home to a grid layout")
    bb = dst.block_bytes().ravel()
    so = np.concatenate([[0], np.cumsum(bb)])
    if home.nbytes != so[-1]:
        raise ValueError(f"home of {home.nbytes} B does not hold the {so[-1]} B block stream of {dst.describe()}")
    hs = np.concatenate([[0], np.cumsum(_flat_sizes(home))])
    cuts = _sorted_unique(np.concatenate([so, hs]))
    a, b = cuts[:-1], cuts[1:]
    keep = (b > a) & (a < so[-1])
    a, b = a[keep], b[keep]
    k = np.searchsorted(so, a, side="right") - 1  # block
    c = np.searchsorted(hs, a, side="right") - 1  # home chunk
    nb = b - a
    reps = dst.replicas
    dt = dst.block_tiles(tiles).reshape(reps, -1)[:, k].T
    do = dst.block_offsets(tiles).reshape(reps, -1)[:, k].T + (a - so[k])[:, None]
    cells = {
        "r0": a, "nr": np.ones_like(a), "c0": np.zeros_like(a), "nc": nb,
        "src": home.block_tiles(tiles)[0, c, 0], "src_off": home.block_offsets(tiles)[0, c, 0] + (a - hs[c]),
        "src_pitch": nb, "dst": dt, "dst_off": do, "dst_pitch": nb, "row_bytes": nb,
        "contiguous": np.ones(len(a), bool), "runs": np.ones_like(a), "run_bytes": nb,
    }
    return _account(cells, tiles, enc)


def _flat_sizes(lay: Layout) -> np.ndarray:
    """Data bytes of each flat chunk (the 8-byte grains before alignment padding)."""
    from .geometry import ALIGN, balanced
    return balanced(-(-lay.nbytes // ALIGN), lay.pr) * ALIGN


def _account(cells: dict, tiles: int, enc: Encoding) -> Transfer:
    """Per-tile bytes, pieces and instruction words of a cell table."""
    src, dst = cells["src"], cells["dst"]
    run_bytes = cells["run_bytes"]
    nbytes = run_bytes * cells["runs"]  # what the exchange moves: padding inside a whole-row run included
    words = -(-run_bytes // WORD)
    subword = int(((run_bytes % WORD) != 0).sum() + ((cells["src_off"] % WORD) != 0).sum())
    pieces = enc.pieces(words) * cells["runs"]
    swords = enc.send_words(words) * cells["runs"]
    rwords = pieces * enc.recv_piece_words
    remote = dst != src[:, None]
    moved = remote.any(1)  # cells that go through the exchange (their local replicas by loopback)
    local_only = ~moved
    z = lambda idx, w: np.bincount(idx, weights=w, minlength=tiles).astype(np.int64)
    recv_mask = np.broadcast_to(moved[:, None], dst.shape)
    reps = dst.shape[1]
    return Transfer(
        send=z(src[moved], nbytes[moved]), recv=z(dst[recv_mask], np.repeat(nbytes, reps)[recv_mask.ravel()]),
        send_pieces=z(src[moved], pieces[moved]),
        recv_pieces=z(dst[recv_mask], np.repeat(pieces, reps)[recv_mask.ravel()]),
        send_words=z(src[moved], swords[moved]),
        recv_words=z(dst[recv_mask], np.repeat(rwords, reps)[recv_mask.ravel()]),
        local=z(src[local_only], nbytes[local_only] * reps),
        local_runs=z(src[local_only], cells["runs"][local_only] * reps), subword_runs=subword, cells=cells)


def block_moves(tiles: int, src: np.ndarray, src_off: np.ndarray, dst: np.ndarray, dst_off: np.ndarray,
                nbytes: np.ndarray, enc: Encoding = Encoding()) -> Transfer:
    """Whole contiguous blocks moved as single runs: src[i] at src_off[i] -> dst[i, :] at dst_off[i, :]
    (one destination per column: a multicast group), nbytes[i] each."""
    n = len(src)
    nb = np.asarray(nbytes, np.int64)
    cells = {"r0": np.zeros(n, np.int64), "nr": np.ones(n, np.int64), "c0": np.zeros(n, np.int64), "nc": nb,
             "src": np.asarray(src, np.int64), "src_off": np.asarray(src_off, np.int64), "src_pitch": nb,
             "dst": np.asarray(dst, np.int64).reshape(n, -1), "dst_off": np.asarray(dst_off, np.int64).reshape(n, -1),
             "dst_pitch": nb, "row_bytes": nb, "contiguous": np.ones(n, bool), "runs": np.ones(n, np.int64),
             "run_bytes": nb}
    return _account(cells, tiles, enc)


def combine(parts: list[Transfer]) -> Transfer:
    """Several transfers of one exchange superstep: per-tile figures add, cells concatenate (the
    destination replicas of every part must agree in number)."""
    if len(parts) == 1:
        return parts[0]
    add = lambda k: sum(getattr(p, k) for p in parts)
    cells = {k: np.concatenate([p.cells[k] for p in parts]) for k in parts[0].cells}
    return Transfer(add("send"), add("recv"), add("send_pieces"), add("recv_pieces"), add("send_words"),
                    add("recv_words"), add("local"), add("local_runs"), add("subword_runs"), cells)
