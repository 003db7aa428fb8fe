"""Per-tile kernels, one module per family: operand classes, padding, scratch, code and descriptor bytes,
cycles (and, for the runner, semantics). The planner, the backend and the runner all read them here."""

from dataclasses import dataclass

import numpy as np

from ..ir.graph import OpKind
from ..target import Target
from .base import Codelet, Cost, VectorCost, call_cycles, exchange_cost, patch_cycles
from . import attention, gemm, vector

ALL: tuple[Codelet, ...] = (*gemm.GEMM.values(), gemm.REDUCE, *gemm.ACCUMULATE.values(), gemm.ACCUMULATE_OUT,
                            attention.STREAMING, attention.MATERIALIZED,
                            attention.MERGE, attention.CARRY,
                            vector.LAYERNORM, vector.LAYERNORM_STATS, vector.ADD, vector.GELU, vector.CAST,
                            vector.COPY, vector.ROPE, vector.ROPE_UNIQUE)
BY_NAME = {c.name: c for c in ALL}

# What each codelet does to a group of its vertices (the runner's field access `v`, the numerics policy)
EXECUTE = {gemm.GEMM[False].name: gemm.execute_gemm, gemm.GEMM[True].name: gemm.execute_gemm,
           gemm.REDUCE.name: gemm.execute_reduce, gemm.ACCUMULATE[False].name: gemm.execute_accumulate,
           gemm.ACCUMULATE[True].name: gemm.execute_accumulate, gemm.ACCUMULATE_OUT.name: gemm.execute_accumulate_out,
           attention.STREAMING.name: attention.execute_attention,
           attention.MATERIALIZED.name: attention.execute_attention, attention.MERGE.name: attention.execute_merge,
           attention.CARRY.name: attention.execute_carry,
           vector.LAYERNORM.name: vector.execute_layernorm, vector.LAYERNORM_STATS.name: vector.execute_layernorm_stats,
           vector.ADD.name: vector.execute_add, vector.GELU.name: vector.execute_gelu, vector.CAST.name: vector.execute_cast,
           vector.COPY.name: vector.execute_copy, vector.ROPE.name: vector.execute_rope,
           vector.ROPE_UNIQUE.name: vector.execute_rope_unique}
assert set(EXECUTE) == set(BY_NAME), "every codelet has semantics"

# The supervisor program of one op, at most, over all its implementations: (compute sets, exchange
# supersteps). Compute sets include a local-copy set in the exchange step; supersteps include the exchange
# step, a relay's second phase and the exchanges inside the op (reduction, statistics).
PROGRAM: dict[OpKind, tuple[int, int]] = {
    OpKind.MATMUL: (6, 5),  # local copy, GEMM, 3 reduction rounds, RoPE; operands, relay, 3 rounds
    OpKind.ATTENTION: (8, 8),  # local copy, attention, 6 merge rounds; operands, relay, 6 rounds
    OpKind.LAYERNORM: (3, 3),  # local copy, statistics, normalize; operands, relay, statistics
    OpKind.ADD: (2, 2), OpKind.GELU: (2, 2), OpKind.CAST: (2, 2), OpKind.BROADCAST: (2, 2),
    OpKind.CONCAT: (1, 2),
}
# A rotating matmul runs one compute set per k-slice (and RoPE after the last), ring attention an attention and
# a merge set per key panel (the first without a merge), each with one shift superstep between two steps; a
# catalogue that offers them reserves every matmul's and attention's program for the most steps it offers.
MAX_ROTATION = 8  # k-slices and key panels per ring in the rotating catalogue
MAX_STEPS_COMPACT = 16  # k-slices and key panels per ring in the compact catalogue


@dataclass(frozen=True)
class Steps:
    """The most rotation steps a catalogue offers: a rotating matmul's k-slices, ring attention's key panels
    (0: none)."""

    slices: int = 0
    panels: int = 0


NO_STEPS = Steps()
ROTATING_STEPS = Steps(MAX_ROTATION, MAX_ROTATION)
COMPACT_STEPS = Steps(MAX_STEPS_COMPACT, MAX_STEPS_COMPACT)


def program(kind: OpKind, steps: Steps = NO_STEPS) -> tuple[int, int]:
    """(compute sets, exchange supersteps) the program of one op of `kind` may take, in a catalogue offering
    rotation `steps`."""
    if kind is OpKind.MATMUL and steps.slices:  # local copy, the steps; operands, relay, shifts
        return tuple(max(a, b) for a, b in zip(PROGRAM[kind], (1 + steps.slices, 2 + steps.slices - 1)))
    if kind is OpKind.ATTENTION and steps.panels:
        return tuple(max(a, b) for a, b in zip(PROGRAM[kind], (1 + 2 * steps.panels - 1, 2 + steps.panels - 1)))
    return PROGRAM[kind]


def transfers_cost(target: Target, trs, patched: bool = False) -> Cost:
    """The given transfers (layout.Transfer) inside one exchange superstep: the busiest tile's bytes and
    pieces and the local copies' cycles (the superstep's sync is its owner's); for sources that move with a
    Repeat iteration, patching the sending rows' address words before each iteration (counted as exchange)."""
    send = sum(t.send for t in trs)
    recv = sum(t.recv for t in trs)
    pieces = sum(np.maximum(t.send_pieces, t.recv_pieces) for t in trs)
    local = sum(t.local for t in trs)
    copy = vector.cycles(target, "copy", int(local.max())) if local.any() else 0
    patch = 0
    if patched:
        words = sum(t.send_pieces + (t.send_pieces > 0) for t in trs)
        patch = patch_cycles(target, int(words.max()))
    return exchange_cost(target, int(send.max()), int(recv.max()), int(pieces.max())) + Cost(copy, patch)


def round_cycles(target: Target, trs) -> int:
    """An op's internal exchange round (a reduction, merge, statistics or rotation round): its transfers as a
    superstep of its own, with the global sync."""
    return transfers_cost(target, list(trs)).total + target.exchange_sync_cycles


# linked in the compact catalogue only; its RoPE epilogue reads tables of unique angles, so it links that in place
# of the full-table RoPE
COMPACT_CODELETS = frozenset({gemm.ACCUMULATE_OUT.name, attention.CARRY.name, vector.ROPE_UNIQUE.name})
NOT_COMPACT_CODELETS = frozenset({vector.ROPE.name})


def code_bytes(target: Target, rotating: bool = False, compact: bool = False) -> int:
    """Machine code every tile links: the runtime and every codelet (an upper bound of what a plan uses); the
    accumulating GEMMs only in a catalogue that offers rotating matmuls, the in-place GEMM, the carrying ring step
    and the unique-angle RoPE only in the compact catalogue (which does not link the full-table RoPE)."""
    rot = {c.name for c in gemm.ACCUMULATE.values()}
    skip = (set() if rotating else rot) | (NOT_COMPACT_CODELETS if compact else COMPACT_CODELETS)
    return target.runtime_code_bytes + sum(c.code_bytes for c in ALL if c.name not in skip)


def program_bytes(target: Target, kinds, steps: Steps = NO_STEPS) -> int:
    """Supervisor program bytes for ops of the given kinds (one entry per scheduled op, a Repeat body once)."""
    caps = [program(k, steps) for k in kinds]
    words = sum(c * target.compute_set_words + x * target.exchange_words for c, x in caps)
    return 4 * words


__all__ = ["ALL", "BY_NAME", "EXECUTE", "Codelet", "COMPACT_STEPS", "Cost", "MAX_ROTATION",
           "MAX_STEPS_COMPACT", "NO_STEPS", "PROGRAM", "ROTATING_STEPS", "Steps", "program", "VectorCost", "attention", "code_bytes", "call_cycles",
           "exchange_cost", "gemm", "patch_cycles", "program_bytes", "round_cycles", "transfers_cost", "vector"]
