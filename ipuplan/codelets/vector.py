"""Worker-parallel vector codelets: layernorm, add, GELU, casts, copy, RoPE epilogue, fill.

Each reads and writes standard or interleaved memory alike; a codelet's cost is the six-worker call plus its
bundles per 64-bit vector on the barrel-scheduled tile (base.VectorCost; sources and calibration in docs/COSTS.md).
"""

from __future__ import annotations

import numpy as np

from ..target import Target
from .base import CODE_DTYPE, Codelet, VectorCost

# `scratch`: the six workers' F32 partial sums; with column blocks (cross-tile statistics) `partial` holds this
# tile's per-row sums and `received` the other blocks' (LAYERNORM_STATS writes `partial` first)
# params: eps (F32 bits), row length, column blocks, this vertex's column block
LAYERNORM = Codelet("LayerNormF16", 1024, ("x", "gamma", "beta", "out", "scratch", "partial", "received"),
                    params=4)
LAYERNORM_STATS = Codelet("LayerNormStatsF16", 512, ("x", "partial"), params=2)
ADD = Codelet("AddF16", 512, ("a", "b", "out"), params=3)
GELU = Codelet("GeluF16", 768, ("x", "out"), params=2)
CAST = Codelet("CastF16ToF8", 512, ("x", "out"), params=3)
COPY = Codelet("Copy", 256, ("src", "dst"), params=2)


def copy_list_words(target: Target) -> int:
    """Words a local copy (a run that never leaves its tile) adds to its tile's exchange tables: the
    descriptor of the Copy vertex that performs it, in whole 8-byte units like every vertex descriptor."""
    return -(-COPY.descriptor_bytes(target) // 8) * 8 // 4


# params: first flat row, tokens per image, unrotated prefix tokens, first column, q and k column windows
ROPE = Codelet("RopeF16", 512, ("x", "sin", "cos"), params=8)
# the same with tables of unique angles: [rows, head_dim / 2], one per pair (x0, x1), which the interleaved layout
# rotates by one angle (its full tables hold every angle twice); same bundles per vector, loads of sin and cos
# each serving two lanes
ROPE_UNIQUE = Codelet("RopeUniqueF16", 512, ("x", "sin", "cos"), params=8)

# Bundles per 64-bit vector (four F16 elements) of the tensor each sweeps; docs/COSTS.md has the calibration
COST = {
    "add": VectorCost(3, "ISA count: two 64-bit loads and one store per vector, the f16v4 add co-issued"),
    "cast": VectorCost(2, "ISA count per F16 input vector: one load, the convert co-issued, half a store, pack"),
    "copy": VectorCost(1, "ipu-stack cost.rs local_copy_bytes_per_cycle = 8: one paced load+store per vector"),
    "gelu": VectorCost(40, "ipu-stack cost.rs: GELU ~10 tile cycles per element across the six workers"),
    "layernorm": VectorCost(21, "ISA count: statistics (load, two F32 converts, sum and square-sum: 6) and the "
                                "normalize pass (x, gamma, beta converted, centre, scale, affine, round, store: 15)"),
    "rope": VectorCost(4, "ISA count: loads of x, sin and cos and one store per vector; products co-issued"),
}


def cycles(target: Target, kind: str, nbytes: int) -> int:
    return COST[kind].cycles(target, nbytes)


def carry_cycles(target: Target, tile_bytes: np.ndarray) -> int:
    """The Copy compute set that carries a Repeat body's result over the buffer the next iteration reads
    (charged every iteration), on its busiest tile."""
    return cycles(target, "copy", int(tile_bytes.max())) + target.compute_set_cycles


def layernorm_scratch(target: Target) -> int:
    """F32 partial statistics shared by the six workers (seeds: 96 bytes)."""
    return 16 * target.workers


# --- semantics (float32 arithmetic on values the buffers hold; the caller rounds to the output's storage) ---

def layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """Whole rows: mean, then the centered variance, in F32."""
    x = np.asarray(x, np.float32)
    mean = x.mean(-1, keepdims=True, dtype=np.float32)
    c = x - mean
    var = (c * c).mean(-1, keepdims=True, dtype=np.float32)
    return c / np.sqrt(var + np.float32(eps)) * gamma + beta


def layernorm_partial(x: np.ndarray) -> np.ndarray:
    """[rows, 2] F32 sum and sum of squares of a column block (what LAYERNORM_STATS writes)."""
    x = np.asarray(x, np.float32)
    return np.stack([x.sum(-1, dtype=np.float32), (x * x).sum(-1, dtype=np.float32)], -1)


def layernorm_split(x: np.ndarray, partials: list[np.ndarray], cols: int, gamma, beta, eps: float) -> np.ndarray:
    """A column block normalized with every block's partial sums, added in column-block order."""
    tot = partials[0]
    for p in partials[1:]:
        tot = (tot + p).astype(np.float32)
    n = np.float32(cols)
    mean = (tot[..., 0] / n).astype(np.float32)[..., None]
    var = (tot[..., 1] / n - mean[..., 0] * mean[..., 0]).astype(np.float32)[..., None]
    return (np.asarray(x, np.float32) - mean) / np.sqrt(var + np.float32(eps)) * gamma + beta


def gelu(x: np.ndarray, approximate: bool) -> np.ndarray:
    """The tanh form reads its input clamped to [-8, 8] inside tanh (where tanh is already +-1 in F32); the
    exact form uses erf."""
    x = np.asarray(x, np.float32)
    if approximate:
        t = np.clip(x, np.float32(-8), np.float32(8))
        k = np.float32(np.sqrt(2.0 / np.pi))
        return 0.5 * x * (1.0 + np.tanh(k * (t + np.float32(0.044715) * t * t * t)))
    from scipy.special import erf
    return np.asarray(0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0)))), np.float32)


def rope(x: np.ndarray, sin: np.ndarray, cos: np.ndarray) -> np.ndarray:
    """Interleaved RoPE on [..., head_dim] rows: pairs (x0, x1) -> (x0 cos - x1 sin, x1 cos + x0 sin)."""
    x = np.asarray(x, np.float32)
    rot = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
    return x * cos + rot * sin


def _f32(bits: int) -> float:
    return float(np.array([bits], np.int32).view(np.float32)[0])


def execute_layernorm_stats(v, pol) -> None:
    x = v.read("x", "f16")
    v.write_flat("partial", layernorm_partial(x).reshape(len(x), -1), "f32")


def execute_layernorm(v, pol) -> None:
    x, g, b = v.read("x", "f16"), v.read("gamma", "f16"), v.read("beta", "f16")
    eps, cols, pc = _f32(int(v.params[0, 0])), int(v.params[0, 1]), int(v.params[0, 2])
    v.write_flat("scratch", np.zeros((len(x), v.nbytes("scratch") // 4)), "f32")
    if pc == 1:
        v.write("out", layernorm(x, g, b, eps), "f16")
        return
    V, R = x.shape[0], x.shape[1]
    own = v.read_flat("partial", "f32", 2 * R).reshape(V, R, 2)
    slot = v.nbytes("received") // 4 // (pc - 1)
    rec = v.read_flat("received", "f32", slot * (pc - 1)).reshape(V, pc - 1, slot)[:, :, :2 * R].reshape(V, pc - 1, R, 2)
    j = v.params[:, 3]
    parts = []
    for blk in range(pc):  # every block's sums in column-block order: this vertex's own, or its received slot
        k = np.where(blk < j, blk, blk - 1).clip(0, pc - 2)
        parts.append(np.where((j == blk)[:, None, None], own, rec[np.arange(V), k]))
    v.write("out", layernorm_split(x, parts, cols, g, b, eps), "f16")


def execute_add(v, pol) -> None:
    """a + b; a `b` of fewer rows repeats over a's (a vector over every row, a positional table over each image
    of a block of whole images)."""
    a, b = v.read("a", "f16"), v.read("b", "f16")
    v.write("out", a + b[:, np.arange(a.shape[1]) % b.shape[1]], "f16")


def execute_gelu(v, pol) -> None:
    v.write("out", gelu(v.read("x", "f16"), bool(v.params[0, 0])), "f16")


def execute_cast(v, pol) -> None:
    from ..ir.graph import DType
    from ..numerics import round_to
    to, frm = CODE_DTYPE[int(v.params[0, 1])], CODE_DTYPE[int(v.params[0, 2])]
    dt = next(d for d in DType if d.short == to)
    v.write("out", round_to(v.read("x", frm), dt, int(v.params[0, 0])), to)


def execute_copy(v, pol) -> None:
    """Bytes, and whether they were written, from `src` to `dst` (the source row repeated over the
    destination's rows when it has one row: a broadcast)."""
    v.copy("src", "dst")


def execute_rope(v, pol) -> None:
    """RoPE in place on the block's columns inside the q and k windows, rows of tokens >= the prefix; a table
    row holds the head's head_dim angles."""
    _rope_windows(v, 1)


def execute_rope_unique(v, pol) -> None:
    """RoPE as execute_rope with tables of unique angles: table column d // 2 for the head's column d."""
    _rope_windows(v, 2)


def _rope_windows(v, per_angle: int) -> None:
    x = v.read("x", "f16")
    V, R, n = x.shape
    D = v.nbytes("sin") // 4 * per_angle
    sin, cos = v.read("sin", "f32", rows_ok=_rope_rows(v, R)), v.read("cos", "f32", rows_ok=_rope_rows(v, R))
    p = v.params
    cols = p[:, 3:4] + np.arange(n)[None, :]  # [V, n]
    y = x.copy()
    for w0, w1 in ((p[:, 4:5], p[:, 5:6]), (p[:, 6:7], p[:, 7:8])):
        inwin = (cols >= w0) & (cols < w1)
        d = np.where(inwin, (cols - w0) % D, 0)
        partner = np.where(d % 2 == 0, np.minimum(np.arange(n) + 1, n - 1), np.maximum(np.arange(n) - 1, 0))
        xp = np.take_along_axis(x, np.broadcast_to(partner[:, None, :], x.shape), 2)
        rot = np.where((d % 2 == 0)[:, None, :], -xp, xp)
        a = np.broadcast_to((d // per_angle)[:, None, :], x.shape)
        c, s = np.take_along_axis(cos, a, 2), np.take_along_axis(sin, a, 2)
        rows = _rope_rows(v, R)[:, :, None] & inwin[:, None, :]
        y = np.where(rows, x * c + rot * s, y)
    v.write("x", y, "f16")


def _rope_rows(v, R: int) -> np.ndarray:
    """[V, R] rows whose token is rotated (token = flat row mod tokens, >= the unrotated prefix)."""
    t = (v.params[:, 0:1] + np.arange(R)[None, :]) % v.params[:, 1:2]
    return t >= v.params[:, 2:3]
