"""Tile classes: tiles with identical byte rows share constraints; rows dominated by another are dropped."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class TileClass:
    """A representative tile, the tiles identical to it, and the tiles of classes it dominates."""

    index: int
    rep: int
    tiles: np.ndarray
    covers: np.ndarray  # tiles whose every byte row is <= this class's (their constraints are implied)

    @cached_property
    def name(self) -> str:
        return f"class {self.index} ({len(self.tiles)} tiles: {tile_ranges(self.tiles)})"

    def describe(self) -> str:
        return self.name


def tile_ranges(tiles: np.ndarray, limit: int = 4) -> str:
    t = np.sort(np.asarray(tiles))
    if t.size == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(t) != 1)
    starts = np.concatenate([[t[0]], t[breaks + 1]])
    ends = np.concatenate([t[breaks], [t[-1]]])
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in zip(starts, ends)]
    more = f", +{len(parts) - limit} ranges" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more


def unique_rows(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`np.unique(M, axis=0, return_index=True, return_inverse=True)` of an integer matrix, found by hashing the
    rows and sorting only the distinct ones (np.unique sorts every row as a record, ~10 ms a call at a thousand
    columns: seconds over a large model's tile classes). A hash collision falls back to np.unique."""
    M = np.ascontiguousarray(M)
    n, k = M.shape
    if n == 0 or k == 0 or M.dtype.kind not in "iu":
        uniq, first, inverse = np.unique(M, axis=0, return_index=True, return_inverse=True)
        return uniq, first, inverse.ravel()
    h = M.astype(np.uint64, copy=False) @ _row_weights(k)  # wraps modulo 2**64
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    if not (M == M[first][inverse]).all():
        uniq, first, inverse = np.unique(M, axis=0, return_index=True, return_inverse=True)
        return uniq, first, inverse.ravel()
    order = np.lexsort(M[first].T[::-1])  # rows in np.unique's order: the first column most significant
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return M[first[order]], first[order], rank[inverse.ravel()]


def _row_weights(k: int) -> np.ndarray:
    return np.random.default_rng(0x5EED).integers(1, 1 << 63, size=k, dtype=np.uint64) | np.uint64(1)


def heaviest_rows(M: np.ndarray, k: int) -> np.ndarray:
    """Up to k distinct rows of M, heaviest first, none dominated (<= everywhere) by one already picked."""
    uniq, first, _ = unique_rows(M)
    picked: list[int] = []
    for a in np.argsort(-uniq.sum(1), kind="stable"):
        if not any((uniq[b] >= uniq[a]).all() for b in picked):
            picked.append(int(a))
            if len(picked) == k:
                break
    return first[picked]


def dominant_rows(M: np.ndarray) -> np.ndarray:
    """Indices of the distinct rows of M that no other row dominates (>= everywhere)."""
    uniq, first, _ = unique_rows(M)
    n = len(uniq)
    keep = np.ones(n, bool)
    order = np.argsort(-uniq.sum(1), kind="stable")
    for a in order:
        others = keep.copy()
        others[a] = False
        if others.any() and (uniq[others] >= uniq[a]).all(1).any():
            keep[a] = False
    return np.sort(first[keep])


def problem_classes(p) -> list[TileClass]:
    """The tile classes of a problem's data contributions (exchange vectors get their own rows)."""
    return tile_classes([p.vectors[i] for i in sorted({cb.vec for cb in p.contribs})], p.target.tiles)


def tile_classes(vectors: list[np.ndarray], tiles: int) -> list[TileClass]:
    """Group tiles by their row of every contribution vector; keep classes no other class dominates.

    Dominated classes are sound to drop: each class has its own region-split variable and its bytes at
    every step are a non-negative combination of these columns, so a split that fits the dominating
    class fits the dominated one too.
    """
    if not vectors:
        return [TileClass(0, 0, np.arange(tiles), np.arange(tiles))]
    V = np.stack(vectors, axis=1)  # [tiles, n]
    uniq, first, inverse = unique_rows(V)
    n = len(uniq)
    dominated = np.zeros(n, bool)
    for a in range(n):
        ge = (uniq >= uniq[a]).all(1)
        ge[a] = False
        ge &= ~dominated
        if ge.any():
            dominated[a] = True
    kept = np.flatnonzero(~dominated)
    owner = np.empty(n, int)
    for a in range(n):
        if not dominated[a]:
            owner[a] = a
        else:
            cand = kept[(uniq[kept] >= uniq[a]).all(1)]
            owner[a] = cand[0]
    out = []
    for ci, a in enumerate(kept):
        members = np.flatnonzero(inverse == a)
        covers = np.flatnonzero(owner[inverse] == a)
        out.append(TileClass(ci, int(first[a]), members, covers))
    return out
