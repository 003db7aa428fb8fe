"""The emulator's compiled byte movers against plain numpy slicing: random slabs at every alignment, pitches
and overlaps; equal slabs at different alignments; exchange runs whose sources another run overwrites."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.runner import kernels
from ipuplan.runner.memory import decode

SIZE = 4096


def _slabs(draw, V, rows, nbytes, distinct=False):
    pitch = np.array([nbytes + draw(st.integers(0, 11)) for _ in range(V)], np.int64)
    span = (rows - 1) * pitch + nbytes
    start = np.array([draw(st.integers(0, SIZE - int(s))) for s in span], np.int64)
    return start, pitch


@st.composite
def memory_and_slabs(draw):
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    V, rows, nbytes = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 40))
    flat = rng.integers(0, 256, SIZE, dtype=np.uint8)
    wflat = rng.random(SIZE) < draw(st.sampled_from([0.9, 0.999, 1.0]))
    start, pitch = _slabs(draw, V, rows, nbytes)
    return flat, wflat, start, pitch, rows, nbytes


def _rows(a, start, pitch, rows, nbytes):
    return np.stack([np.stack([a[s + r * p:s + r * p + nbytes] for r in range(rows)]) for s, p in zip(start, pitch)])


@settings(max_examples=300, deadline=None)
@given(memory_and_slabs())
def test_gather_and_written_rows_equal_slicing(case):
    flat, wflat, start, pitch, rows, nbytes = case
    out = np.empty((len(start), rows, nbytes), np.uint8)
    kernels.gather(flat, start, rows, nbytes, pitch, out)
    assert np.array_equal(out, _rows(flat, start, pitch, rows, nbytes))
    written = np.empty((len(start), rows), bool)
    kernels.written_rows(wflat, wflat.view(np.uint64), start, rows, nbytes, pitch, written)
    assert np.array_equal(written, _rows(wflat, start, pitch, rows, nbytes).all(2))


@settings(max_examples=300, deadline=None)
@given(memory_and_slabs(), st.integers(0, 2), st.data())
def test_same_slabs_equals_comparing_copies(case, change, data):
    """Copies of slab 0 at other alignments, one of them changed in one byte (or none)."""
    flat, _, start, pitch, rows, nbytes = case
    src = _rows(flat, start[:1], pitch[:1], rows, nbytes)[0]
    mem = np.zeros(SIZE * 2, np.uint8)
    V = len(start)
    starts = np.array([v * (SIZE * 2 // V) + data.draw(st.integers(0, 7)) for v in range(V)], np.int64)
    pitches = np.full(V, int(pitch[0]), np.int64)
    for v in range(V):
        for r in range(rows):
            a = starts[v] + r * pitches[v]
            mem[a:a + nbytes] = src[r]
    if change and V > 1:
        v, r, b = data.draw(st.integers(1, V - 1)), data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, nbytes - 1))
        mem[starts[v] + r * pitches[v] + b] ^= 1
    want = all(np.array_equal(s, src) for s in _rows(mem, starts, pitches, rows, nbytes))
    assert kernels.same_slabs(mem, mem.view(np.uint64), starts, rows, nbytes, pitches, np.zeros(V, np.int64)) == want


@settings(max_examples=200, deadline=None)
@given(memory_and_slabs(), st.booleans(), st.booleans())
def test_scatter_broadcasts_and_marks_written(case, one_v, one_r):
    flat, wflat, start, pitch, rows, nbytes = case
    # slabs written in order: where two overlap the later one wins, as in a loop of slice assignments
    rng = np.random.default_rng(1)
    data = rng.integers(0, 256, (1 if one_v else len(start), 1 if one_r else rows, nbytes), dtype=np.uint8)
    want, wwant = flat.copy(), wflat.copy()
    for v, (s, p) in enumerate(zip(start, pitch)):
        for r in range(rows):
            want[s + r * p:s + r * p + nbytes] = data[0 if one_v else v, 0 if one_r else r]
            wwant[s + r * p:s + r * p + nbytes] = True
    kernels.scatter(flat, wflat, start, rows, nbytes, pitch, data)
    assert np.array_equal(flat, want) and np.array_equal(wflat, wwant)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 6), st.integers(1, 3))
def test_copy_runs_reads_every_source_before_writing(seed, runs, reps):
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**32, 256, dtype=np.uint32)
    shadow = rng.integers(0, 2, 256, dtype=np.uint32)
    n = rng.integers(1, 20, runs).astype(np.int64)
    src = np.array([rng.integers(0, 256 - k) for k in n], np.int64)
    dst = np.array([[rng.integers(0, 256 - k) if rng.random() < 0.8 else -1 for _ in range(reps)] for k in n], np.int64)
    want, wwant = words.copy(), shadow.copy()
    parts = [(words[s:s + k].copy(), shadow[s:s + k].copy()) for s, k in zip(src, n)]
    for (d, f), k, ds in zip(parts, n, dst):
        for t in ds:
            if t >= 0:
                want[t:t + k], wwant[t:t + k] = d, f
    kernels.copy_runs(words, shadow, src, n, dst)
    assert np.array_equal(words, want) and np.array_equal(shadow, wwant)


def test_decode_equals_the_formats_for_every_pattern():
    """F16 against its definition from sign, exponent and mantissa; the FP8 formats against ml_dtypes."""
    import ml_dtypes
    bits = np.arange(1 << 16, dtype=np.uint32)
    s, e, m = bits >> 15, (bits >> 10) & 31, bits & 1023
    mag = np.where(e == 0, m * 2.0 ** -24, (1024 + m) * 2.0 ** (e.astype(np.float64) - 25))
    want = np.where(e == 31, np.where(m == 0, np.inf, np.nan), mag) * np.where(s == 1, -1, 1)
    got = decode(bits.astype(np.uint16).view(np.uint8).reshape(1, -1), "f16").ravel()
    assert np.array_equal(got, want.astype(np.float32), equal_nan=True)
    for dtype, t in (("f143", ml_dtypes.float8_e4m3fnuz), ("f152", ml_dtypes.float8_e5m2fnuz)):
        raw = np.arange(256, dtype=np.uint8)
        got = decode(np.tile(raw, 3).reshape(3, 256), dtype)
        assert np.array_equal(got, np.tile(raw.view(t).astype(np.float32), 3).reshape(3, 256), equal_nan=True)
