"""The checker's own geometry of a recorded layout: blocks, pitches, per-tile bytes (no ipuplan.layout code).

A layout record is a dict with the fields of plan.json's `output` records. Rows split in balanced blocks per
row group; columns in balanced whole words (a word = 4 bytes of elements), the last block taking the rest.
A block stores its rows at a pitch of its padded columns rounded up to a word, its allocation rounded up to
8 bytes (standard) or 32 bytes (interleaved); a flat record is a balanced split of 8-byte grains. A skewed
record (a rotating operand's initial shards) puts column block j of row block i where column block
(j + col_skew * i) mod pc would sit, and row block i of column block j where row block (i + row_skew * j) mod pr would.
"""

from __future__ import annotations

import numpy as np

WORD = 4
ALIGN = {"std": 8, "il": 32, "any": 8}


def _split(n: int, parts: int) -> np.ndarray:
    """Item counts of `parts` contiguous pieces of n items, larger pieces first (numpy.array_split)."""
    return np.array([len(c) for c in np.array_split(np.arange(n), parts)], dtype=np.int64)


def _up(x, a: int):
    return (np.asarray(x, dtype=np.int64) + a - 1) // a * a


def row_sizes(lay: dict) -> np.ndarray:
    """Balanced per row group; with a row grain, in whole grains, the last block taking the rest."""
    g, grain = lay["row_groups"], lay.get("row_grain", 1)
    n = lay["rows"] // g
    sizes = _split(-(-n // grain), lay["pr"] // g) * grain
    sizes[-1] -= sizes.sum() - n
    return np.concatenate([sizes] * g)


def col_sizes(lay: dict) -> np.ndarray:
    per_word = lay.get("col_grain") or max(1, WORD // lay["elem"])
    words = -(-lay["cols"] // per_word)
    sizes = _split(words, lay["pc"]) * per_word
    sizes[-1] -= sizes.sum() - lay["cols"]
    return sizes


def pitches(lay: dict) -> np.ndarray:
    return _up(_up(col_sizes(lay), lay["col_align"]) * lay["elem"], WORD)


def block_bytes(lay: dict) -> np.ndarray:
    """[pr, pc] allocated bytes of every block."""
    a = ALIGN[lay["mem"]]
    if lay["flat"]:
        grains = -(-lay["rows"] * lay["cols"] * lay["elem"] // 8)
        return _up(_split(grains, lay["pr"]) * 8, a)[:, None]
    return _up(_up(row_sizes(lay), lay["row_align"])[:, None] * pitches(lay)[None, :], a)


def block_tiles(lay: dict, T: int) -> np.ndarray:
    """[replicas, pr, pc] tile of every block."""
    pc = 1 if lay["flat"] else lay["pc"]
    rs = lay["row_stride"] or pc
    per = lay["pr"] // lay["row_groups"]
    gs = lay["group_stride"] or per * rs
    reps = lay["rep_stride"] or lay["pr"] * pc
    i = np.arange(lay["pr"])
    rows = (i // per) * gs + (i % per) * rs
    i, j = i[:, None], np.arange(pc)[None, :]
    at = rows[(i + lay.get("row_skew", 0) * j) % lay["pr"]] + (j + lay.get("col_skew", 0) * i) % pc * lay["col_stride"]
    return (lay["start"] + np.arange(lay["replicas"])[:, None, None] * reps + at[None]) % T


def tile_bytes(lay: dict, T: int, times: int = 1) -> np.ndarray:
    """Bytes the layout allocates on every tile (times consecutive copies)."""
    t = block_tiles(lay, T)
    b = np.broadcast_to(block_bytes(lay)[None], t.shape)
    return np.bincount(t.ravel(), weights=b.ravel(), minlength=T).astype(np.int64) * times


def owners(lay: dict, T: int) -> np.ndarray:
    """How many blocks of the layout each tile holds."""
    return np.bincount(block_tiles(lay, T).ravel(), minlength=T).astype(np.int64)


def L(rows, cols, elem, pr=1, pc=1, replicas=1, start=0, row_stride=0, col_stride=1, rep_stride=0, row_groups=1,
      group_stride=0, mem="std", flat=False, row_align=1, col_align=1, row_grain=1, col_grain=0, col_skew=0,
      row_skew=0) -> dict:
    skew = {k: v for k, v in (("col_skew", col_skew % pc), ("row_skew", row_skew % pr)) if v}
    return skew | {"rows": rows, "cols": cols, "elem": elem, "pr": pr, "pc": pc, "replicas": replicas, "start": start,
            "row_stride": row_stride, "col_stride": col_stride, "rep_stride": rep_stride, "row_groups": row_groups,
            "group_stride": group_stride, "flat": flat, "mem": mem, "row_align": row_align, "col_align": col_align, "row_grain": row_grain,
            "col_grain": col_grain}


def per_block(lay: dict, nbytes: int, mem: str = "std") -> dict:
    """One `nbytes` item per block of `lay`, on the same tiles."""
    pc = lay["pc"]
    return L(lay["pr"], pc, _up(max(1, nbytes), 8).item(), lay["pr"], pc, lay["replicas"], lay["start"],
             lay["row_stride"] or pc, lay["col_stride"], lay["rep_stride"] or lay["pr"] * pc, lay["row_groups"],
             lay["group_stride"] or (lay["pr"] // lay["row_groups"]) * (lay["row_stride"] or pc), mem,
             col_skew=lay.get("col_skew", 0), row_skew=lay.get("row_skew", 0))
