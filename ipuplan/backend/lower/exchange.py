"""Exchange lowering: a transfer's cells become word runs at absolute addresses, split into physical
transfers of at most `transfer_max_words`; cells whose every destination is the source tile become local
copies. The encoded exchange bytes of every tile are recounted from these runs with the planner's
encoding model (they may never exceed what the plan accounted)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...layout.transfer import WORD, Encoding, Transfer
from .buffers import LoweringError, Placed


@dataclass(frozen=True)
class Runs:
    """Runs of one transfer: source tile/address/stride, bytes, destinations [N, R] (-1 unused)."""

    src: np.ndarray
    src_addr: np.ndarray
    src_stride: np.ndarray
    nbytes: np.ndarray
    dst: np.ndarray
    dst_addr: np.ndarray

    @staticmethod
    def concat(parts: list["Runs"]) -> "Runs":
        if not parts:
            z = np.zeros(0, np.int64)
            return Runs(z, z, z, z, np.zeros((0, 1), np.int64), np.zeros((0, 1), np.int64))
        r = max(p.dst.shape[1] for p in parts)
        pad = lambda a, fill: np.pad(a, ((0, 0), (0, r - a.shape[1])), constant_values=fill)
        return Runs(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("src", "src_addr", "src_stride", "nbytes")),
                    np.concatenate([pad(p.dst, -1) for p in parts]), np.concatenate([pad(p.dst_addr, -1) for p in parts]))


def cell_runs(tr: Transfer, src: Placed, dst: Placed, enc: Encoding, sequence: bool) -> tuple[Runs, Runs]:
    """(exchange runs, local-copy runs) of a transfer from buffer `src` into buffer `dst`. A source that is a
    per-layer sequence advances by its per-tile stride every iteration when `sequence`."""
    c = tr.cells
    stile = c["src"]
    sa = src.addr[stile]
    dt = c["dst"]
    da = dst.addr[dt]
    if (sa < 0).any() or (da < 0).any():
        raise LoweringError(f"a transfer {src.name} -> {dst.name} touches a tile where a buffer has no address")
    runs = c["runs"]
    n = len(stile)
    # one run per cell when contiguous, else one per row
    idx = np.repeat(np.arange(n), runs)
    k = np.arange(len(idx)) - np.repeat(np.cumsum(runs) - runs, runs)
    nbytes = c["run_bytes"][idx]  # a whole-row run of padded blocks moves the padding too
    s_addr = sa[idx] + c["src_off"][idx] + k * c["src_pitch"][idx]
    d_addr = da[idx] + c["dst_off"][idx] + (k * c["dst_pitch"][idx])[:, None]
    stiles, dtiles = stile[idx], dt[idx]
    stride = src.stride[stiles] if sequence else np.zeros_like(stiles)
    local = (dtiles == stiles[:, None]).all(1)
    loc = Runs(stiles[local], s_addr[local], stride[local], nbytes[local], dtiles[local], d_addr[local])
    # physical transfers of at most transfer_max_words (whole words: rows are padded to a word)
    m = ~local
    words = -(-nbytes[m] // WORD)
    pieces = enc.pieces(words)
    pidx = np.repeat(np.arange(len(words)), pieces)
    j = np.arange(len(pidx)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    cap = enc.transfer_max_words * WORD
    pbytes = np.minimum(words[pidx] * WORD - j * cap, cap)
    ex = Runs(stiles[m][pidx], s_addr[m][pidx] + j * cap, stride[m][pidx], pbytes, dtiles[m][pidx],
              d_addr[m][pidx] + (j * cap)[:, None])
    return ex, loc


def table_words(runs: Runs, local: Runs, tiles: int, enc: Encoding, patched: bool, copy_words: int) -> np.ndarray:
    """Encoded instruction words per tile for one transfer row, counted from its runs exactly as the planner
    counts a Transfer: row words on every tile that sends or receives, send words per piece, receive words
    per piece and destination, `copy_words` per local run and destination (its Copy vertex), and the Repeat patch words of a moving source."""
    z = lambda idx, w: np.bincount(idx, weights=w, minlength=tiles).astype(np.int64)
    words = runs.nbytes // WORD
    send_pieces = z(runs.src, np.ones(len(runs.src)))
    valid = runs.dst >= 0
    recv_pieces = z(runs.dst[valid], np.ones(int(valid.sum())))
    send = z(runs.src, enc.send_words(words).astype(float))
    part = (send_pieces + recv_pieces) > 0
    out = enc.row_words * part + send + recv_pieces * enc.recv_piece_words
    lv = local.dst >= 0
    out += copy_words * z(local.src[lv.any(1)], lv.sum(1)[lv.any(1)].astype(float))
    if patched:
        out += send_pieces + (send_pieces > 0)
    return out
