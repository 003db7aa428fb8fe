"""Attention on one tile for one (batch, head) group's query block and key split: QK^T and PV on the AMP
(F16 operands, F32 accumulation), softmax in F32 on the workers, streaming (online softmax over key
panels of 64) or materialized (all of the split's scores at once); with several key splits, each tile's
softmax state (running max, denominator, F32 accumulator) is merged across tiles by a binary tree, as in
flash-decoding.

q, k and v are AMP operands: interleaved, head width padded to 16 (the inner dimension of QK^T and the
output columns of PV), keys padded to 16 (the output columns of QK^T and the inner dimension of PV).
"""

from __future__ import annotations

from math import ceil

from ..target import Target
from .base import Codelet, VectorCost
from .gemm import N_MULTIPLE
from .gemm import cycles as gemm_cycles

STREAM_PANEL = 64  # streaming attention: key panel rows (DESIGN §6)
PAD = N_MULTIPLE
MAX_SPLITS = 64  # key splits of one group (the merge tree has at most 6 rounds)
# `scratch`: F16 probabilities and the F32 PV accumulator (AMP operands); `state`: F32 scores, running max and
# denominator; `out`: the F16 output, or with key splits this tile's softmax state rows [acc(D), max, sum] F32
STREAMING = Codelet("AttentionStreamingF16", 3072, ("q", "k", "v", "out", "scratch", "state"), params=6,
                    interleaved=("q", "k", "v", "scratch"))
MATERIALIZED = Codelet("AttentionMaterializedF16", 2048, ("q", "k", "v", "out", "scratch", "state"), params=6,
                       interleaved=("q", "k", "v", "scratch"))
MERGE = Codelet("SoftmaxStateMergeF32", 768, ("state", "received", "out"), params=4)
SOFTMAX = VectorCost(6.0, 60)
CAST = VectorCost(2.0, 40)
MERGE_COST = VectorCost(3.0, 60)


def padded(n: int) -> int:
    return ceil(n / PAD) * PAD


def cycles(target: Target, q_rows: int, keys: int, head_dim: int) -> int:
    """QK^T and PV on the AMP in F16, softmax on the workers, the F32 -> F16 output cast."""
    mm = gemm_cycles(target, q_rows, head_dim, keys, False) + gemm_cycles(target, q_rows, keys, head_dim, False)
    return mm + SOFTMAX.cycles(target, q_rows * keys * 4) + CAST.cycles(target, q_rows * head_dim * 4)


def state_bytes(q_rows: int, head_dim: int) -> int:
    """One tile's softmax state as the merge sends it: F32 accumulator rows, then max and denominator."""
    return q_rows * (head_dim + 2) * 4


def merge_cycles(target: Target, q_rows: int, head_dim: int) -> int:
    """One merge round: rescale both accumulators by exp(m - M) and add."""
    return MERGE_COST.cycles(target, 2 * state_bytes(q_rows, head_dim))


def scratch_bytes(q_rows: int, keys: int, head_dim: int, streaming: bool) -> tuple[int, int]:
    """(interleaved, standard) scratch of one vertex: F16 probabilities (the PV left operand, keys padded)
    and the F32 PV accumulator are interleaved; F32 scores and the running max and denominator per query
    row are standard. Streaming holds one key panel of scores and probabilities, materialized all keys."""
    panel = min(keys, STREAM_PANEL) if streaming else keys
    il = q_rows * padded(panel) * 2 + q_rows * padded(head_dim) * 4
    std = q_rows * panel * 4 + q_rows * 8
    return il, std
