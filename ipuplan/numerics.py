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
    out = _accumulate((x2[:, k0:k0 + chunk] @ w2[k0:k0 + chunk] for k0 in range(0, k, chunk)), acc)
    if out is None:
        return np.zeros(lead + (w.shape[1],), np.float32)
    return out.reshape(lead + (w.shape[1],))


def _accumulate(parts, acc: DType) -> np.ndarray | None:
    """Exact float64 chunk sums, each rounded to `acc` and added in order with a rounding after every add.
    numpy rounds float64 -> float16/float32 correctly in one step. An F32 accumulator adds in float32: IEEE
    float32 addition of float32 values equals the float64 sum rounded to float32 (binary64 has more than
    2 x 24 + 2 bits, so double rounding is innocuous); an F16 accumulator adds in float64 (exact) and rounds,
    since numpy's float16 addition goes through float32 and could round twice."""
    out = None
    if acc is DType.F32:
        for part in parts:
            p = part.astype(np.float32)
            out = p if out is None else out + p
        return out
    for part in parts:
        p = part.astype(np.float16).astype(np.float64)
        out = p if out is None else (out + p).astype(np.float16).astype(np.float64)
    return None if out is None else out.astype(np.float32)


def gemm_batched(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int) -> np.ndarray:
    """`gemm` for a batch: x [V, M, K] @ w [V, K, N], every element rounded exactly as `gemm` rounds it."""
    x2 = np.asarray(x, np.float64)
    w2 = np.asarray(w, np.float64)
    out = _accumulate((np.matmul(x2[..., k0:k0 + chunk], w2[..., k0:k0 + chunk, :])
                       for k0 in range(0, x2.shape[-1], chunk)), acc)
    if out is None:
        return np.zeros(x2.shape[:-1] + (w2.shape[-1],), np.float32)
    return out


def gemm_shared(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int) -> np.ndarray:
    """`gemm_batched`, faster where many of the V right operands are equal (a weight block replicated over the
    row blocks of a grid, a head's keys over its query blocks): each distinct w is multiplied once with the
    stacked rows of every x that uses it. Every element is rounded exactly as `gemm` rounds it."""
    V = x.shape[0]
    flat = np.ascontiguousarray(w, np.float32).reshape(V, -1).view(np.uint32)  # bit patterns: -0.0 is not 0.0
    probe = np.unique(np.linspace(0, flat.shape[1] - 1, min(flat.shape[1], 64)).astype(np.int64))
    h = flat[:, probe].astype(np.float64) @ np.random.default_rng(0).random(len(probe))  # verified below
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = np.asarray(inv).ravel()
    if len(first) * 2 > V or not (flat == flat[first[inv]]).all():
        return gemm_batched(x, w, acc, chunk)
    out = np.empty(x.shape[:2] + (w.shape[2],), np.float32)
    for u, f in enumerate(first):
        sel = np.flatnonzero(inv == u)
        rows = x[sel].reshape(-1, x.shape[2])
        out[sel] = gemm(rows, w[f], acc, chunk).reshape(len(sel), x.shape[1], w.shape[2])
    return out


def gemm_groups(x: np.ndarray, wu: np.ndarray, inv: np.ndarray, acc: DType, chunk: int) -> np.ndarray:
    """`gemm_batched` with w = wu[inv]: each distinct right operand multiplied once with the stacked rows of every
    x that uses it (a weight block replicated over a grid's row blocks). The same bits as `gemm`."""
    if len(wu) * 2 > len(inv):
        return gemm_batched(x, wu[inv], acc, chunk)
    out = np.empty(x.shape[:2] + (wu.shape[2],), np.float32)
    for u in range(len(wu)):
        sel = np.flatnonzero(inv == u)
        out[sel] = gemm(x[sel].reshape(-1, x.shape[2]), wu[u], acc, chunk).reshape(len(sel), x.shape[1], wu.shape[2])
    return out
