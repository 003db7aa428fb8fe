"""Per-tile kernels: cycle cost and scratch of each codelet, from one table (numerics live in ipuplan.numerics).

Costs are models, not measurements: GEMMs at the target's AMP rate, vector codelets at one 64-bit
access per worker per cycle times a per-codelet pass count. The per-codelet constants below are
estimates; the seeds' measured kernels (e.g. LayerNorm rows shared by six workers) fix their shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ..target import Target

AMP_CALL_CYCLES = 60  # estimate: AMP setup per call (load/clear of accumulators)
STREAM_PANEL = 64  # streaming attention: key panel rows (DESIGN §6)


@dataclass(frozen=True)
class VectorCodelet:
    """A worker-parallel vector kernel: `passes` sweeps over its bytes, `setup` cycles per call."""

    name: str
    passes: float
    setup: int

    def cycles(self, target: Target, nbytes: int) -> int:
        per_worker = ceil(nbytes / target.workers)
        return self.setup + ceil(self.passes * per_worker / target.vector_bytes_per_cycle)


VECTOR = {
    "add": VectorCodelet("AddF16", 1.5, 40),  # two loads + one store per vector
    "cast": VectorCodelet("CastF16ToF8", 2.0, 40),
    "copy": VectorCodelet("Copy", 1.0, 20),
    "gelu": VectorCodelet("GeluF16", 8.0, 50),  # clamped polynomial + tanh per element pair
    "layernorm": VectorCodelet("LayerNormF16", 5.0, 120),  # sum, centered variance, affine passes (F32 stats)
    "rope": VectorCodelet("RopeF16", 4.0, 40),
    "reduce": VectorCodelet("ReducePartialsF32", 1.5, 40),
    "softmax": VectorCodelet("SoftmaxF32", 6.0, 60),  # max, exp, sum, scale over F32 scores
}


def gemm_cycles(target: Target, m: int, k: int, n: int, fp8: bool) -> int:
    """One tile's AMP GEMM of [m, k] x [k, n]."""
    macs = target.amp_macs_per_cycle["f8" if fp8 else "f16"]
    return AMP_CALL_CYCLES + ceil(m * k * n / macs)


def attention_cycles(target: Target, q_rows: int, keys: int, head_dim: int, heads_per_tile: int = 1) -> int:
    """QK^T and PV on the AMP in F16, softmax on the workers, for one tile's (query block, head)."""
    mm = 2 * gemm_cycles(target, q_rows, head_dim, keys, fp8=False)
    sm = VECTOR["softmax"].cycles(target, q_rows * keys * 4)
    return heads_per_tile * (mm + sm)


def attention_scratch(q_rows: int, keys: int, head_dim: int, streaming: bool) -> int:
    """Per-tile scratch bytes: F32 scores (one key panel when streaming, all keys when materialized),
    an F32 output accumulator, and the running max and denominator per query row."""
    panel = min(keys, STREAM_PANEL) if streaming else keys
    return 8 * ceil((q_rows * panel * 4 + q_rows * head_dim * 4 + q_rows * 8) / 8)


def layernorm_scratch(target: Target) -> int:
    """F32 partial statistics shared by the six workers (seeds: 96 bytes)."""
    return 16 * target.workers


def exchange_cycles(target: Target, send_max: int, recv_max: int, frags_max: int) -> int:
    """One exchange superstep's busiest tile: bytes at the exchange rate, fragments, sync."""
    words = ceil(max(send_max, recv_max) / target.exchange_bytes_per_cycle)
    return target.exchange_sync_cycles + words + frags_max * target.exchange_fragment_cycles
