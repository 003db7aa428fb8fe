"""The replay's symbolic memory: its compiled movers against numpy's fancy indexing on the same words, and a run or
slab outside a tile's memory found before anything is written."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.checker.replay.tags import Memory, pack, unpack

TILES, BASE, WORDS = 3, 0x4C000, 64


def _memory(seed: int) -> Memory:
    m = Memory(TILES, BASE, BASE + 4 * WORDS)
    m.tags[:] = np.random.default_rng(seed).integers(0, 1 << 62, m.tags.size, dtype=np.uint64)
    return m


def _flat(tile, addr):
    return np.asarray(tile) * WORDS + (np.asarray(addr) - BASE) // 4


@st.composite
def _runs(draw):
    k = draw(st.integers(1, 6))
    n = draw(st.lists(st.integers(0, 8), min_size=k, max_size=k))
    src = [(draw(st.integers(0, TILES - 1)), draw(st.integers(0, WORDS - x))) for x in n]
    reps = draw(st.integers(1, 3))
    dst = [[(draw(st.integers(-1, TILES - 1)), draw(st.integers(0, WORDS - x))) for _ in range(reps)] for x in n]
    return np.array(n), np.array(src), np.array(dst)


@settings(max_examples=200, deadline=None)
@given(_runs(), st.integers(0, 2**16))
def test_move_is_numpys_gather_then_scatter(runs, seed):
    """Overlapping sources and destinations included: every source is read before any word is written, and
    replicas are written in order (a later one wins), as numpy's fancy indexing does."""
    n, src, dst = runs
    m, want = _memory(seed), _memory(seed).tags
    addr = lambda w: BASE + 4 * w  # noqa: E731
    assert m.move(src[:, 0], addr(src[:, 1]), n, dst[:, :, 0], addr(dst[:, :, 1])) == -1
    reads = [want[_flat(t, addr(a)) + np.arange(k)] for (t, a), k in zip(src, n)]  # copies, before any write
    for r in range(dst.shape[1]):
        for (t, a), k, vals in zip(dst[:, r], n, reads):
            if t >= 0:
                want[_flat(t, addr(a)) + np.arange(k)] = vals
    assert (m.tags == want).all()


def test_a_run_outside_its_tile_is_named_and_nothing_moves():
    m = _memory(1)
    before = m.tags.copy()
    n = np.array([4, 4])
    # the second run's destination starts 2 words before its tile's end: it would spill into the next tile
    bad = m.move(np.array([0, 1]), np.array([BASE, BASE]), n, np.array([[2], [0]]),
                 np.array([[BASE], [BASE + 4 * (WORDS - 2)]]))
    assert bad == 1 and (m.tags == before).all()
    assert m.move(np.array([3]), np.array([BASE]), np.array([1]), np.array([[0]]), np.array([[BASE]])) == 0
    assert m.move(np.array([0]), np.array([BASE - 4]), np.array([1]), np.array([[0]]), np.array([[BASE]])) == 0


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**16))
def test_slabs_gather_and_scatter_as_numpy_indexes_them(v, rows, words, seed):
    m = _memory(seed)
    rng = np.random.default_rng(seed)
    pitch = 4 * rng.integers(words, words + 4, v)
    tile = rng.integers(0, TILES, v)
    addr = BASE + 4 * np.array([rng.integers(0, WORDS - (rows - 1) * p // 4 - words + 1) for p in pitch])
    start, p, inside = m.slabs(tile, addr, rows, words, pitch)
    assert inside.all()
    idx = start[:, None, None] + np.arange(rows)[None, :, None] * p[:, None, None] + np.arange(words)
    assert (m.gather(start, rows, words, p) == m.tags[idx]).all()
    new = pack(1, 2, 3, rng.integers(0, 1 << 32, idx.shape))
    want = m.tags.copy()
    want[idx] = new
    m.scatter(start, p, new)
    assert (m.tags == want).all()
    # one row past the tile's end, or a tile that does not exist, is outside
    _, _, inside = m.slabs(tile, addr + 4 * WORDS, rows, words, pitch)
    assert not inside.any()
    _, _, inside = m.slabs(np.full(v, TILES), addr, rows, words, pitch)
    assert not inside.any()


def test_decoded_fields_round_trip():
    t = pack([5, 0x7FFF], [3, 0xFF], [2, 0xFF], [7, 0xFFFFFFFF])
    d = unpack(t)
    assert d.valid.all() and d.tensor.tolist() == [5, 0x7FFF] and d.gen.tolist() == [3, 0xFF]
    assert d.code.tolist() == [2, 0xFF] and d.elem.tolist() == [7, 0xFFFFFFFF]
    assert d.holds(5, 3).tolist() == [True, False]
    assert not unpack(np.zeros(2, np.uint64)).valid.any()
