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

import numpy as np

from ..ir.graph import DType
from ..numerics import gemm_groups, round_to
from ..target import Target
from .base import Codelet, VectorCost, call_cycles
from .gemm import N_MULTIPLE

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
# A ring step that carries the softmax state: the streaming kernel continues from the running state rows in
# `carry` ([acc(D), max, sum] F32) over this step's key panel and writes them back, or on the last step writes
# the F16 output (no step state, no merge); params: scale, streaming (1), first, panel, last
CARRY = Codelet("AttentionCarryF16", 3072, ("q", "k", "v", "carry", "out", "scratch", "state"), params=6,
                interleaved=("q", "k", "v", "scratch"))
# bundles per 64-bit vector: of F32 scores, of the F32 accumulator, of F32 state, of F16 keys
SOFTMAX = VectorCost(6, "ISA count per two F32 scores: scale and running max, exp, sum, F16 round and store")
CAST = VectorCost(2, "ISA count per two F32 values: one load, the F16 convert co-issued, half a store")
MERGE_COST = VectorCost(3, "ISA count per merged vector (two F32): a load from each state, the store; the "
                          "rescale and add co-issued")
# QK^T takes the keys as AMP coefficients: K^T's 16-key panels are packed from the key rows first
PACK = VectorCost(7.45, "seeds 003: the 768 x 16 F16 coefficient-panel packer took 23,190 cycles (six workers)")


def padded(n: int) -> int:
    return ceil(n / PAD) * PAD


def cycles(target: Target, q_rows: int, keys: int, head_dim: int) -> int:
    """QK^T and PV on the AMP in F16 at its product rate with four launches per 64-key panel (ipu-stack
    cost.rs, flash attention), the coefficient panels packed first (K^T's from the key rows, or Q^T's when
    the query block is the smaller: QK^T then streams the keys), softmax on the workers, the F32 -> F16 cast."""
    macs = target.amp_macs_per_cycle["f16"]
    dp, kp = padded(head_dim), padded(keys)
    products = ceil(q_rows * dp * kp / macs) + ceil(q_rows * kp * dp / macs)
    panels = ceil(keys / STREAM_PANEL) * 4 * target.kernel_launch_cycles
    pack = PACK.work(target, min(kp, padded(q_rows)) * dp * 2)
    return call_cycles(target) + pack + products + panels + SOFTMAX.work(target, q_rows * keys * 4) + \
        CAST.work(target, q_rows * head_dim * 4)


def state_bytes(q_rows: int, head_dim: int) -> int:
    """One tile's softmax state as the merge sends it: F32 accumulator rows, then max and denominator."""
    return q_rows * (head_dim + 2) * 4


def merge_cycles(target: Target, q_rows: int, head_dim: int) -> int:
    """One merge round: rescale both accumulators by exp(m - M) and add, per vector of the merged state."""
    return MERGE_COST.cycles(target, state_bytes(q_rows, head_dim))


def scratch_bytes(q_rows: int, keys: int, head_dim: int, streaming: bool) -> tuple[int, int]:
    """(interleaved, standard) scratch of one vertex: F16 probabilities (the PV left operand, keys padded)
    and the F32 PV accumulator are interleaved; F32 scores and the running max and denominator per query
    row are standard. Streaming holds one key panel of scores and probabilities, materialized all keys."""
    panel = min(keys, STREAM_PANEL) if streaming else keys
    il = q_rows * padded(panel) * 2 + q_rows * padded(head_dim) * 4
    std = q_rows * panel * 4 + q_rows * 8
    return il, std


# --- semantics: one cell's softmax state, the merge, the output -------------------------------------------

def block(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, streaming: bool, chunk: int,
          k_of: np.ndarray | None = None, v_of: np.ndarray | None = None, init=None):
    """Cells [V, ...] at once: (accumulator [V, R, D], running max [V, R], denominator [V, R]), all F32.
    QK^T and PV run on the AMP (F16 operands, F32 accumulation in runs of `chunk`); the probabilities are
    rounded to F16 for PV. Streaming takes the keys in panels of STREAM_PANEL with an online softmax;
    materialized takes them all at once. With `k_of` / `v_of`, cell c's keys are k[k_of[c]] and its values
    v[v_of[c]] (a head's keys and values held once however many query blocks read them). `init`: a state
    (accumulator, max, denominator) the online softmax continues from, as if its keys came first."""
    V, R, S = q.shape[0], q.shape[1], k.shape[1]
    cells = np.arange(V)
    k_of = cells if k_of is None else k_of
    v_of = cells if v_of is None else v_of
    panel = STREAM_PANEL if streaming else max(S, 1)
    if init is None:
        m = np.full((V, R), -np.inf, np.float32)
        den = np.zeros((V, R), np.float32)
        acc = np.zeros((V, R, v.shape[2]), np.float32)
    else:
        acc, m, den = (np.array(x, np.float32) for x in init)
    sc = np.float32(scale)
    for p0 in range(0, S, panel):
        kt = np.ascontiguousarray(np.swapaxes(k[:, p0:p0 + panel], 1, 2))
        s = (gemm_groups(q, cells, kt, k_of, DType.F32, chunk) * sc).astype(np.float32)
        mn = np.maximum(m, s.max(2))
        a = np.exp(m - mn).astype(np.float32)
        p = np.exp(s - mn[..., None]).astype(np.float32)
        den = (den * a + p.sum(2, dtype=np.float32)).astype(np.float32)
        pv = gemm_groups(round_to(p, DType.F16), cells, np.ascontiguousarray(v[:, p0:p0 + panel]), v_of, DType.F32,
                         chunk)
        acc = (acc * a[..., None] + pv).astype(np.float32)
        m = mn
    return acc, m, den


def merge(s1, s2):
    """Two states of disjoint key ranges as one (flash-decoding)."""
    (a1, m1, l1), (a2, m2, l2) = s1, s2
    m = np.maximum(m1, m2)
    e1, e2 = np.exp(m1 - m).astype(np.float32), np.exp(m2 - m).astype(np.float32)
    return ((a1 * e1[..., None] + a2 * e2[..., None]).astype(np.float32), m,
            (l1 * e1 + l2 * e2).astype(np.float32))


def finish(state) -> np.ndarray:
    """The F16-bound output rows of a state that covers every key."""
    acc, _, den = state
    return (acc / den[..., None]).astype(np.float32)


def _f32(bits: int) -> float:
    return float(np.array([bits], np.int32).view(np.float32)[0])


def execute_attention(v, pol) -> None:
    q, (k, k_of), (val, v_of) = v.read("q", "f16"), v.read_unique("k", "f16"), v.read_unique("v", "f16")
    v.write_flat("scratch", np.zeros((len(q), v.nbytes("scratch") // 4)), "f32")
    v.write_flat("state", np.zeros((len(q), v.nbytes("state") // 4)), "f32")
    st = block(q, k, val, _f32(int(v.params[0, 0])), bool(v.params[0, 1]), pol.chunk, k_of, v_of)
    if v.params[0, 2]:  # key splits: this cell's state rows [acc, max, denominator]
        v.write("out", np.concatenate([st[0], st[1][..., None], st[2][..., None]], -1), "f32")
    else:
        v.write("out", finish(st), "f16")


def execute_carry(v, pol) -> None:
    """AttentionCarryF16: a ring step continuing the running softmax state in `carry` (none on the first step)."""
    q, (k, k_of), (val, v_of) = v.read("q", "f16"), v.read_unique("k", "f16"), v.read_unique("v", "f16")
    v.write_flat("scratch", np.zeros((len(q), v.nbytes("scratch") // 4)), "f32")
    v.write_flat("state", np.zeros((len(q), v.nbytes("state") // 4)), "f32")
    D = v.nbytes("carry") // 4 - 2
    init = None
    if not v.params[0, 2]:
        c = v.read("carry", "f32")
        init = (c[..., :D], c[..., D], c[..., D + 1])
    st = block(q, k, val, _f32(int(v.params[0, 0])), bool(v.params[0, 1]), pol.chunk, k_of, v_of, init)
    if v.params[0, 4]:
        v.write("out", finish(st), "f16")
    else:
        v.write("carry", np.concatenate([st[0], st[1][..., None], st[2][..., None]], -1), "f32")


def execute_merge(v, pol) -> None:
    D = int(v.params[0, 1])

    def state(field):
        s = v.read(field, "f32")
        return s[..., :D], s[..., D], s[..., D + 1]

    st = merge(state("state"), state("received"))
    if v.params[0, 0]:
        v.write("out", finish(st), "f16")
    else:
        v.write("out", np.concatenate([st[0], st[1][..., None], st[2][..., None]], -1), "f32")
