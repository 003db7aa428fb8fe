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


def _rows_numpy(d, tensor, gen, cols, c0):
    """The element-wise statement `rows_of` compiles: every word held, each row's words in its first word's row."""
    if not d.holds(tensor, gen).all():
        return None
    r0 = d.elem[:, :, 0] // cols
    c = d.elem - (r0 * cols + c0)[:, :, None]
    return (r0, c) if ((c >= -c0) & (c < cols - c0)).all() else None


@st.composite
def _operand(draw):
    """Tags of a [V, R, W] operand read: mostly whole rows of one tensor and iteration, sometimes a word of
    another tensor, another iteration, unwritten, or from the next row."""
    v, r, w = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    cols = draw(st.integers(w, 3 * w + 4))
    c0 = draw(st.integers(0, cols - w))
    rows = np.array(draw(st.lists(st.integers(0, 50), min_size=v * r, max_size=v * r))).reshape(v, r)
    first = np.array(draw(st.lists(st.integers(0, cols - w - c0), min_size=v * r, max_size=v * r))).reshape(v, r)
    elem = rows[:, :, None] * cols + c0 + first[:, :, None] + np.arange(w)
    tensor, gen = np.full(elem.shape, 7), np.full(elem.shape, 3)
    tags = pack(tensor, gen, 0, elem)
    kind = draw(st.sampled_from(["clean", "tensor", "gen", "unwritten", "row", "next", "previous", "clean"]))
    at = np.unravel_index(draw(st.integers(0, elem.size - 1)), elem.shape)
    if kind == "tensor":
        tags[at] = pack(8, 3, 0, elem[at])
    elif kind == "gen":
        tags[at] = pack(7, 4, 0, elem[at])
    elif kind == "unwritten":
        tags[at] = np.uint64(elem[at])
    elif kind == "row":
        tags[at] = pack(7, 3, 0, elem[at] + cols)
    elif kind == "next":  # the first element of the next tensor row: one column past the row's end
        tags[at] = pack(7, 3, 0, (rows[at[:2]] + 1) * cols)
    elif kind == "previous" and rows[at[:2]] > 0:  # the last element of the row before
        tags[at] = pack(7, 3, 0, rows[at[:2]] * cols - 1)
    return tags, cols, c0


@settings(max_examples=300, deadline=None)
@given(_operand(), st.booleans())
def test_rows_of_is_the_element_wise_statement(operand, strided):
    """The replay's compiled operand reader agrees with numpy's element-wise statement on every operand, the
    wrong ones included (both refuse them), on contiguous tags and on strided views of them."""
    from ipuplan.checker.replay.tags import rows_of
    tags, cols, c0 = operand
    if strided:  # the replay decodes gathered slabs; a view with a stride must read the same
        wide = np.zeros(tags.shape[:2] + (2 * tags.shape[2],), np.uint64)
        wide[:, :, ::2] = tags
        tags = wide[:, :, ::2]
    d = unpack(tags)
    got, want = rows_of(d, 7, 3, cols, c0), _rows_numpy(d, 7, 3, cols, c0)
    assert (got is None) == (want is None)
    if got is not None:
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**16), st.integers(0, 3), st.integers(0, 3), st.sets(st.integers(0, 5), max_size=4))
def test_regenerate_is_the_element_wise_relabel(seed, old, new, body):
    """Skipping Repeat iterations: the compiled relabel changes exactly the written tags of the body's tensors at
    the old iteration, as numpy's decode, select and repack does; every other tag keeps its bits."""
    from ipuplan.checker.replay.tags import regenerate
    rng = np.random.default_rng(seed)
    n = 300
    tags = pack(rng.integers(0, 6, n), rng.integers(0, 4, n), rng.integers(0, 256, n), rng.integers(0, 1 << 32, n))
    tags[rng.random(n) < 0.2] &= ~np.uint64(1 << 63)  # some never written
    want = tags.copy()
    d = unpack(want)
    m = d.valid & (d.gen == old) & np.isin(d.tensor, sorted(body))
    want[m] = pack(d.tensor[m], new, d.code[m], d.elem[m])
    got = tags.copy()
    assert regenerate(got, old, new, sorted(body)) == int(m.sum())
    assert np.array_equal(got, want)
