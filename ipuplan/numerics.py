"""Bit-level numerics shared by the reference and the codelets: storage rounding, FP8 casts, GEMM accumulation."""

from __future__ import annotations

import ml_dtypes
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


def gemm(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int) -> np.ndarray:
    """x[..., K] @ w[K, N] as the AMP computes it: each run of `chunk` products summed exactly, rounded to
    the accumulator `acc`, and the rounded partials added in order in `acc` (round after every add).

    Operands must be F16 or FP8 values (float32 arrays). Their products and sums of up to 2^20 of them are
    exact in float64, so the only roundings are the accumulator's.
    """
    lead = x.shape[:-1]
    k = x.shape[-1]
    x2 = np.asarray(x, np.float64).reshape(-1, k)
    w2 = np.asarray(w, np.float64)
    if acc not in (DType.F16, DType.F32):
        raise ValueError(f"accumulator must be f16 or f32, not {acc.short}")
    t = _NP[acc]  # numpy rounds float64 -> float16/float32 correctly in one step
    out = None
    for k0 in range(0, k, chunk):
        part = (x2[:, k0:k0 + chunk] @ w2[k0:k0 + chunk]).astype(t).astype(np.float64)
        out = part if out is None else (out + part).astype(t).astype(np.float64)
    return out.astype(np.float32).reshape(lead + (w.shape[1],))


def gemm_batched(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int) -> np.ndarray:
    """`gemm` for a batch: x [V, M, K] @ w [V, K, N], every element rounded exactly as `gemm` rounds it."""
    x2 = np.asarray(x, np.float64)
    w2 = np.asarray(w, np.float64)
    t = _NP[acc]
    out = None
    for k0 in range(0, x2.shape[-1], chunk):
        part = np.matmul(x2[..., k0:k0 + chunk], w2[..., k0:k0 + chunk, :]).astype(t).astype(np.float64)
        out = part if out is None else (out + part).astype(t).astype(np.float64)
    if out is None:
        return np.zeros(x2.shape[:-1] + (w2.shape[-1],), np.float32)
    return out.astype(np.float32)
