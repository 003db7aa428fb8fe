"""Bit-level numerics shared by the reference and the codelets: storage rounding, FP8 casts, GEMM accumulation."""

from __future__ import annotations

import ml_dtypes
import numba
import numpy as np

from .ir.graph import DType

F143_MAX = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fnuz).max)  # 240
F152_MAX = float(ml_dtypes.finfo(ml_dtypes.float8_e5m2fnuz).max)  # 57344
_NP = {DType.F143: ml_dtypes.float8_e4m3fnuz, DType.F152: ml_dtypes.float8_e5m2fnuz, DType.F16: np.float16,
       DType.F32: np.float32}
_MAX = {DType.F143: F143_MAX, DType.F152: F152_MAX}


def round_to(x: np.ndarray, d: DType, scale: int = 0) -> np.ndarray:
    """`x` as stored in `d` with metadata scale `scale` (logical = stored * 2^scale, so stored =
    cast(x * 2^-scale)), returned as float32; FP8 saturates at the format's largest value.

    Quantizes from float32 (casting from float64 would round twice) and clips first: ml_dtypes maps FP8
    overflow to NaN instead of saturating.
    """
    x = np.asarray(x, dtype=np.float32)
    if scale:
        x = np.ldexp(x, -scale).astype(np.float32)
    if d is DType.F32:
        return x
    if d in _MAX:
        x = np.clip(x, -_MAX[d], _MAX[d])
    return x.astype(_NP[d]).astype(np.float32)


def to_bits(x: np.ndarray, d: DType) -> np.ndarray:
    """Raw storage bytes of float32 values already representable in `d`."""
    return np.ascontiguousarray(np.asarray(x, np.float32).astype(_NP[d])).view(np.uint8)


def gemm(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int, init: np.ndarray | None = None) -> np.ndarray:
    """x[..., K] @ w[K, N] as the AMP computes it: each run of `chunk` products summed exactly, rounded to
    the accumulator `acc`, and the rounded partials added in order in `acc` (round after every add).
    `init` ([..., N], values of `acc`): an accumulator the AMP continues from instead of starting empty.

    Operands must be F16 or FP8 values (float32 arrays). Their products and sums of up to 2^20 of them are
    exact in float64, so the only roundings are the accumulator's.
    """
    lead = x.shape[:-1]
    k = x.shape[-1]
    x2 = np.asarray(x, np.float64).reshape(-1, k)
    w2 = np.asarray(w, np.float64)
    if acc not in (DType.F16, DType.F32):
        raise ValueError(f"accumulator must be f16 or f32, not {acc.short}")
    i2 = None if init is None else np.asarray(init, np.float64).reshape(-1, w2.shape[1])
    if k == 0:
        return np.zeros(lead + (w.shape[1],), np.float32) if init is None else i2.astype(np.float32).reshape(
            lead + (w.shape[1],))
    # row blocks whose accumulators stay in cache across the k chunks (every element's rounding is its own)
    blk = max(8, ROW_BLOCK_ELEMENTS // max(1, w2.shape[1]))
    out = np.empty((x2.shape[0], w2.shape[1]), np.float32)
    for r0 in range(0, x2.shape[0], blk):
        xb = x2[r0:r0 + blk]
        out[r0:r0 + blk] = _accumulate((xb[:, k0:k0 + chunk] @ w2[k0:k0 + chunk] for k0 in range(0, k, chunk)), acc,
                                       None if i2 is None else i2[r0:r0 + blk])
    return out.reshape(lead + (w.shape[1],))


ROW_BLOCK_ELEMENTS = 1 << 18  # float64 accumulator elements per row block (2 MiB)


def _accumulate(parts, acc: DType, init: np.ndarray | None = None) -> np.ndarray | None:
    """Exact float64 chunk sums, each rounded to `acc` and added in order with a rounding after every add
    (after `init`, when given: values of `acc` the first chunk is added to).
    An F32 accumulator adds in float32: IEEE float32 addition of float32 values equals the float64 sum rounded
    to float32 (binary64 has more than 2 x 24 + 2 bits, so double rounding is innocuous); an F16 accumulator
    adds in float64 (exact for two float16 values) and rounds to float16 (`_round_f16`, compiled and
    branch-free: one pass per chunk instead of four numpy conversions)."""
    out = None
    if init is not None:  # a copy: the caller's accumulator is not written
        out = np.array(init, np.float32 if acc is DType.F32 else np.float64)
    if acc is DType.F32:
        for part in parts:
            p = part.astype(np.float32)
            out = p if out is None else out + p
        return out
    for part in parts:
        part = np.ascontiguousarray(part, np.float64)  # each chunk sum is a fresh temporary: rounded in place
        if out is None:
            out = np.empty_like(part)
            _set_f16(out.reshape(-1), part.reshape(-1))
        else:
            _add_f16(out.reshape(-1), part.reshape(-1))
    return None if out is None else out.astype(np.float32)


_SIGN = np.uint64(1 << 63)
_HALF_ULP = np.uint64((1 << 41) - 1)  # float16 keeps 10 of float64's 52 mantissa bits: 42 are rounded off
_KEEP = ~np.uint64((1 << 42) - 1)
_F16_MAX_BITS = np.float64(65504.0).view(np.uint64)
_INF_BITS = np.float64(np.inf).view(np.uint64)
_F16_NORMAL_BITS = np.float64(2.0 ** -14).view(np.uint64)
_SUBNORMAL_SHIFT = 2.0 ** 28  # its float64 quantum is 2^-24, float16's below 2^-14


@numba.njit(cache=True, inline="always")
def _round_f16(x):
    """float64 `x` rounded to the nearest float16 (ties to even), as float64; overflow to infinity as float16
    conversion does (|x| >= 65520). Branch-free, so loops of it compile to vector code: in float16's normal
    range the 42 low mantissa bits are rounded off on the bit pattern (a carry moves into the exponent); below
    2^-14 adding and subtracting 2^28 rounds to a multiple of 2^-24 (the FPU's ties to even). Equal to
    np.float16 conversion for every float64 (tests/unit/test_numerics.py)."""
    b = np.float64(x).view(np.uint64)
    sign = b & _SIGN
    a = b ^ sign
    normal = (a + _HALF_ULP + ((a >> np.uint64(42)) & np.uint64(1))) & _KEEP
    normal = _INF_BITS if normal > _F16_MAX_BITS else normal
    sub = np.float64((np.uint64(a).view(np.float64) + _SUBNORMAL_SHIFT) - _SUBNORMAL_SHIFT).view(np.uint64)
    r = normal if a >= _F16_NORMAL_BITS else sub
    r = a if a >= _INF_BITS else r  # inf and nan as they are
    return np.uint64(r | sign).view(np.float64)


@numba.njit(cache=True)
def _set_f16(acc, part) -> None:
    """acc <- round_f16(part) (the first chunk)."""
    for i in range(acc.size):
        acc[i] = _round_f16(part[i])


@numba.njit(cache=True)
def _add_f16(acc, part) -> None:
    """acc <- round_f16(acc + round_f16(part)) (the sum of two float16 values is exact in float64)."""
    for i in range(acc.size):
        acc[i] = _round_f16(acc[i] + _round_f16(part[i]))


def gemm_batched(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int, init: np.ndarray | None = None) -> np.ndarray:
    """`gemm` for a batch: x [V, M, K] @ w [V, K, N] (continuing from `init` [V, M, N] when given), every
    element rounded exactly as `gemm` rounds it."""
    x2 = np.asarray(x, np.float64)
    w2 = np.asarray(w, np.float64)
    out = _accumulate((np.matmul(x2[..., k0:k0 + chunk], w2[..., k0:k0 + chunk, :])
                       for k0 in range(0, x2.shape[-1], chunk)), acc, init)
    if out is None:
        return np.zeros(x2.shape[:-1] + (w2.shape[-1],), np.float32)
    return out


def gemm_groups(xu: np.ndarray, xinv: np.ndarray, wu: np.ndarray, winv: np.ndarray, acc: DType,
                chunk: int, init: np.ndarray | None = None) -> np.ndarray:
    """`gemm_batched` of x = xu[xinv] and w = wu[winv] (operands replicated over a grid, each distinct one held
    once), continuing from `init` [V, M, N] when given: each distinct right operand multiplied once with the
    stacked rows of every x that uses it. The same bits as `gemm`."""
    xu, wu = np.asarray(xu, np.float64), np.asarray(wu, np.float64)  # the distinct operands, converted once
    if len(wu) * 2 > len(winv):
        return gemm_batched(xu[xinv], wu[winv], acc, chunk, init)
    V, M, K = len(xinv), xu.shape[1], xu.shape[2]
    N = wu.shape[2]
    out = np.empty((V, M, N), np.float32)
    for u in range(len(wu)):
        sel = np.flatnonzero(winv == u)
        start = None if init is None else np.asarray(init)[sel].reshape(-1, N)
        out[sel] = gemm(xu[xinv[sel]].reshape(-1, K), wu[u], acc, chunk, start).reshape(len(sel), M, N)
    return out
