"""FP8 casts and GEMM accumulation against ml_dtypes and exact arithmetic."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.ir import DType
from ipuplan.numerics import F143_MAX, gemm, round_to, to_bits


def test_f143_is_e4m3fnuz():
    assert F143_MAX == 240.0
    assert float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fnuz).smallest_subnormal) == 2.0 ** -10
    # every one of the 255 non-NaN codes round-trips
    codes = np.arange(256, dtype=np.uint8)
    vals = codes.view(ml_dtypes.float8_e4m3fnuz).astype(np.float32)
    ok = ~np.isnan(vals)
    assert ok.sum() == 255 and codes[~ok][0] == 0x80
    assert np.array_equal(to_bits(vals[ok], DType.F143), codes[ok])


def test_fp8_saturates_instead_of_nan():
    x = np.array([1e6, -1e6, 241.0, 300.0], np.float32)
    assert np.array_equal(round_to(x, DType.F143), [240, -240, 240, 240])
    assert np.isnan(x.astype(ml_dtypes.float8_e4m3fnuz).astype(np.float32)).any()  # the trap we avoid


def test_scale_is_metadata_convention():
    # logical = stored * 2^scale: scale -4 stores 16x the value
    assert round_to(np.float32(0.5), DType.F143, -4) == 8.0
    assert round_to(np.float32(100.0), DType.F143, -4) == 240.0


def test_quantizes_from_float32_not_float64():
    # a float64 value just above a float32 tie would round differently if cast twice
    x64 = np.float64(1.0625) + 2.0 ** -30
    assert round_to(np.float32(x64), DType.F143) == round_to(np.array([x64]), DType.F143)[0]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 70), st.integers(1, 6), st.sampled_from([1, 4, 16]), st.integers(0, 2**31))
def test_gemm_f32_policy_matches_sequential_rounding(m, k, n, chunk, seed):
    rng = np.random.default_rng(seed)
    x = round_to(rng.standard_normal((m, k)), DType.F16)
    w = round_to(rng.standard_normal((k, n)), DType.F16)
    got = gemm(x, w, DType.F32, chunk)
    want = np.zeros((m, n), np.float32)
    for k0 in range(0, k, chunk):
        part = (x[:, k0:k0 + chunk].astype(np.float64) @ w[k0:k0 + chunk].astype(np.float64)).astype(np.float32)
        want = part if k0 == 0 else (want.astype(np.float64) + part).astype(np.float32)
    assert np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.integers(0, 2**31))
def test_gemm_single_chunk_is_exact_sum_rounded_once(k, seed):
    rng = np.random.default_rng(seed)
    x = round_to(rng.standard_normal((3, k)) * 4, DType.F143)
    w = round_to(rng.standard_normal((k, 2)) * 4, DType.F143)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    assert np.array_equal(gemm(x, w, DType.F16, chunk=k), exact.astype(np.float16).astype(np.float32))


def test_compiled_f16_rounding_equals_numpys_conversion():
    """_round_f16 (the compiled F16 accumulator's rounding, branch-free) against numpy's float64 -> float16 conversion: every
    finite float16, every midpoint between neighbours and the floats either side of it (ties to even), the
    overflow threshold, subnormals, a million random magnitudes over 15 decades; both signs, sign of zero too."""
    from ipuplan.numerics import _add_f16, _set_f16
    rng = np.random.default_rng(0)
    f16 = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64)
    f16 = f16[np.isfinite(f16)]
    f16.sort()
    mid = (f16[:-1] + f16[1:]) / 2
    vals = np.concatenate([f16, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
                           [65504, 65519.99, 65520, 65536, 1e300, 5e-324, 2.0**-25, 2.0**-24, 1.5 * 2.0**-24,
                            2.0**-14 - 2.0**-25, 2.0**-14 - 2.0**-26, np.finfo(np.float64).max, np.inf, np.nan],
                           rng.standard_normal(10**6) * 10.0 ** rng.integers(-9, 6, 10**6)])
    vals = np.concatenate([vals, -vals])
    with np.errstate(over="ignore"):
        want = vals.astype(np.float16).astype(np.float64)
    got = np.empty_like(vals)
    _set_f16(got, vals)
    assert ((got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))).all()
    acc = want.copy()
    with np.errstate(invalid="ignore"):  # inf + -inf
        _add_f16(acc, vals[::-1].copy())
    with np.errstate(over="ignore", invalid="ignore"):
        ref = (want + vals[::-1].astype(np.float16).astype(np.float64)).astype(np.float16).astype(np.float64)
    same = (acc.view(np.uint64) == ref.view(np.uint64)) | (np.isnan(acc) & np.isnan(ref))
    assert same.all()


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 6), slices=st.lists(st.integers(1, 4), min_size=1, max_size=4), n=st.integers(1, 9),
       acc=st.sampled_from([DType.F16, DType.F32]), seed=st.integers(0, 2**31 - 1))
def test_a_continued_accumulation_equals_one_pass_over_the_joined_k(m, slices, n, acc, seed):
    """The AMP continuing from an accumulator (`init`) slice after slice of whole chunks rounds exactly as one
    pass over the slices joined in that order (an in-place rotating GEMM's step against the plain GEMM)."""
    rng = np.random.default_rng(seed)
    chunk = 16
    k = chunk * sum(slices)
    x = round_to(rng.standard_normal((m, k)).astype(np.float32) * 4, DType.F143)
    w = round_to(rng.standard_normal((k, n)).astype(np.float32), DType.F143)
    y = None
    k0 = 0
    for s in slices:
        y = gemm(x[:, k0:k0 + s * chunk], w[k0:k0 + s * chunk], acc, chunk, y)
        k0 += s * chunk
    assert np.array_equal(to_bits(y, acc), to_bits(gemm(x, w, acc, chunk), acc))


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 5), panels=st.lists(st.integers(1, 3), min_size=1, max_size=3), seed=st.integers(0, 2**31 - 1))
def test_a_carried_softmax_state_equals_one_stream_over_the_joined_keys(rows, panels, seed):
    """The ring step carrying its state (codelets.attention.CARRY) continues the online softmax: key panels of
    whole 64-key stream panels taken one after another round exactly as one stream over all of them."""
    from ipuplan.codelets import attention as att
    rng = np.random.default_rng(seed)
    D = 16
    keys = att.STREAM_PANEL * sum(panels)
    q = round_to(rng.standard_normal((2, rows, D)).astype(np.float32), DType.F16)
    k = round_to(rng.standard_normal((2, keys, D)).astype(np.float32), DType.F16)
    v = round_to(rng.standard_normal((2, keys, D)).astype(np.float32), DType.F16)
    st, k0 = None, 0
    for p in panels:
        k1 = k0 + p * att.STREAM_PANEL
        st = att.block(q, k[:, k0:k1], v[:, k0:k1], 0.25, True, 16, init=st)
        k0 = k1
    whole = att.block(q, k, v, 0.25, True, 16)
    assert all(np.array_equal(a, b) for a, b in zip(st, whole))
