"""Worker-parallel vector codelets: layernorm, add, GELU, casts, copy, RoPE epilogue, fill.

Each reads and writes standard or interleaved memory alike; costs are one 64-bit access per worker per
cycle times a per-codelet pass count (estimates; docs/COSTS.md).
"""

from __future__ import annotations

from ..target import Target
from .base import Codelet, VectorCost

# `scratch`: the six workers' F32 partial sums; with column blocks (cross-tile statistics) `partial` holds this
# tile's per-row sums and `received` the other blocks' (LAYERNORM_STATS writes `partial` first)
LAYERNORM = Codelet("LayerNormF16", 1024, ("x", "gamma", "beta", "out", "scratch", "partial", "received"),
                    params=3)
LAYERNORM_STATS = Codelet("LayerNormStatsF16", 512, ("x", "partial"), params=2)
ADD = Codelet("AddF16", 512, ("a", "b", "out"), params=3)
GELU = Codelet("GeluF16", 768, ("x", "out"), params=2)
CAST = Codelet("CastF16ToF8", 512, ("x", "out"), params=3)
COPY = Codelet("Copy", 256, ("src", "dst"), params=2)
# params: first flat row, tokens per image, unrotated prefix tokens, first column, q and k column windows
ROPE = Codelet("RopeF16", 512, ("x", "sin", "cos"), params=8)

COST = {
    "add": VectorCost(1.5, 40),  # two loads + one store per vector
    "cast": VectorCost(2.0, 40),
    "copy": VectorCost(1.0, 20),
    "gelu": VectorCost(8.0, 50),  # clamped polynomial + tanh per element pair
    "layernorm": VectorCost(5.0, 120),  # sum, centered variance, affine passes (F32 stats)
    "rope": VectorCost(4.0, 40),
}


def cycles(target: Target, kind: str, nbytes: int) -> int:
    return COST[kind].cycles(target, nbytes)


def layernorm_scratch(target: Target) -> int:
    """F32 partial statistics shared by the six workers (seeds: 96 bytes)."""
    return 16 * target.workers
