"""AMP GEMM and the partial-sum reduction: operand classes and block multiples, cycles, code.

The AMP streams its left operand x [m, k] row by row against right-operand coefficients w [k, n] loaded
16 output columns at a time; k advances in micro-blocks of 16 (F16) or 32 (F8) products (ipu-stack
device/gemm_f16_amp.S: INNER_MICRO_DIMENSION 16 / 32, COLUMN_MICRO_DIMENSION 16). Operands therefore live
in interleaved memory, 32-byte aligned, with k padded to the micro-block on both operands and n padded
to 16 on w; the padding is storage only (the codelet zeroes pad lanes as it loads the last micro-block,
so pad bytes are never read as data). The output drains into interleaved memory (IPU21.md: a GEMM's
output is interleaved, in a different memory element from its left operand stream), unpadded.
With pk > 1 every k-slice writes F32 partials, summed pairwise by a tree of exchanges and reduction
codelets (one received partial at a time); the last round writes the F16 output with the bias.
A rotating GEMM runs the accumulating variant once per k-slice its shards bring: the AMP's product of the
slice, added by the workers into the cell's running F32 accumulator (at the reduction's measured rate);
the last slice's epilogue writes the F16 output with the bias instead. For FP8 operands on a target whose FP8
accumulator is F16, the in-place variant keeps the running sum in the F16 output buffer itself: each step
seeds the AMP's accumulator with it and continues the F16 accumulation the AMP would run over all of k
(the same roundings as one pass over k in the rotation's order); the last step scales it and adds the bias
in place.
"""

from __future__ import annotations

from math import ceil

import numpy as np

from ..ir.graph import DType
from ..numerics import gemm as gemm_numerics
from ..numerics import gemm_groups
from ..target import Target
from .base import Codelet, VectorCost, call_cycles

K_MULTIPLE = {False: 16, True: 32}  # F16 / F8 inner micro-block
N_MULTIPLE = 16
CALL_BLOCK = 64  # one kernel call covers a 64 x 64 coefficient block (ipu-stack device/: 64 x 64 F16 AMP blocks)
COEFFICIENT_GROUP_BYTES = 64 * 16 * 2  # what target.amp_coefficient_cycles delivers: 64 K x 16 columns of F16

# IPU21: the AMP's output may not share a memory element with its left operand stream (ipu-stack placement)
GEMM = {False: Codelet("AmpGemmF16", 1536, ("x", "w", "out", "bias"), params=4, apart=(("x", "out"),),
                          interleaved=("x", "w", "out")),
        True: Codelet("AmpGemmF8", 1536, ("x", "w", "out", "bias"), params=4, apart=(("x", "out"),),
                         interleaved=("x", "w", "out"))}
EPILOGUE = VectorCost(4, "ISA count per F16 output vector: two F32 accumulator loads, the bias load and the "
                        "store; scale, add and round co-issued")
REDUCE = Codelet("ReducePartialsF32", 512, ("partials", "received", "out", "bias"), params=4)
# params: scale, first (no running accumulator yet), last (write the F16 output), x dtype, w dtype; code: the
# accumulating epilogue on top of the AMP loop (an estimate, as REDUCE's)
ACCUMULATE = {fp8: Codelet(f"AmpGemmAcc{'F8' if fp8 else 'F16'}", 512, ("x", "w", "acc", "out", "bias"), params=5,
                           apart=(("x", "acc"), ("x", "out")), interleaved=("x", "w", "acc"))
              for fp8 in (False, True)}
# the in-place variant: the running F16 sum in "out" (no accumulator field); params as ACCUMULATE's
ACCUMULATE_OUT = Codelet("AmpGemmAccF8Out", 512, ("x", "w", "out", "bias"), params=5, apart=(("x", "out"),),
                         interleaved=("x", "w", "out"))


def k_multiple(fp8: bool) -> int:
    return K_MULTIPLE[fp8]


def cycles(target: Target, m: int, k: int, n: int, fp8: bool) -> int:
    """One tile's AMP GEMM of [m, k] x [k, n], k and n padded to the AMP's blocks, one kernel call per 64 x 64
    coefficient block, as the public IPU21 compiler models its generated kernels (ipu-stack cost.rs): F16 pays
    a call setup per block and the coefficients' delivery into the AMP (which all m rows then stream past) on
    top of the products; FP8 overlaps the products with loading the coefficients from interleaved memory and
    pays only a launch per call."""
    macs = target.amp_macs_per_cycle["f8" if fp8 else "f16"]
    kp = ceil(k / K_MULTIPLE[fp8]) * K_MULTIPLE[fp8]
    np_ = ceil(n / N_MULTIPLE) * N_MULTIPLE
    calls = ceil(kp / CALL_BLOCK) * ceil(np_ / CALL_BLOCK)
    products = ceil(m * kp * np_ / macs)
    if fp8:
        feed = ceil(kp * np_ / target.interleaved_load_bytes_per_cycle)
        return target.kernel_launch_cycles + calls * target.kernel_launch_cycles + max(products, feed)
    feed = ceil(kp * np_ * 2 * target.amp_coefficient_cycles / COEFFICIENT_GROUP_BYTES)
    return target.kernel_launch_cycles + calls * target.amp_call_cycles + products + feed


def epilogue_cycles(target: Target, m: int, n: int) -> int:
    """Inside the GEMM codelet, the workers scale the F32 accumulators, add the bias and round to F16."""
    return EPILOGUE.work(target, m * n * 2)


def accumulate_cycles(target: Target, m: int, k: int, n: int, fp8: bool, first: bool) -> int:
    """One step of a rotating GEMM on one tile: the AMP product of a [m, k] x [k, n] slice and the epilogue,
    plus, after the first step, adding the running F32 accumulator at the reduction's measured rate."""
    add = 0 if first else ceil(m * n * 4 / target.reduction_bytes_per_cycle)
    return cycles(target, m, k, n, fp8) + epilogue_cycles(target, m, n) + add


def reduce_cycles(target: Target, m: int, n: int, pk: int) -> int:
    """Every round of the tree adds one received F32 partial into the running one, at the reduction's
    measured output rate, one six-worker call per round."""
    rounds = max(0, int(pk).bit_length() - 1)
    per_round = call_cycles(target) + ceil(m * n * 4 / target.reduction_bytes_per_cycle)
    return rounds * per_round


# --- semantics: what one vertex computes (the runner's vertices and the plan-faithful reference call these) ---

def amp(x: np.ndarray, w: np.ndarray, acc: DType, chunk: int, init: np.ndarray | None = None) -> np.ndarray:
    """x [., K] @ w [K, N] on the AMP: runs of `chunk` products exact, each rounded to `acc` and added in order
    (to the accumulator `init` when the AMP continues a sum)."""
    return gemm_numerics(x, w, acc, chunk, init)


def finish(y: np.ndarray, scale: int, bias: np.ndarray | None) -> np.ndarray:
    """The F16-bound output of a GEMM from its (summed) F32 accumulator: scaled by 2^scale, plus the bias."""
    y = np.asarray(y, np.float32)
    if scale:
        y = np.ldexp(y, scale).astype(np.float32)
    return y + bias if bias is not None else y


def add_partials(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One reduction round: the running F32 partial plus the received one."""
    return (np.asarray(a, np.float32) + np.asarray(b, np.float32)).astype(np.float32)


def execute_gemm(v, pol) -> None:
    """AmpGemmF16/F8 on a group of vertices (`v`: the runner's field access)."""
    fp8 = ("f143", "f152")
    ok = fp8 if v.codelet == GEMM[True].name else ("f16",)
    xdt, wdt = v.dtype(2, ok), v.dtype(3, ok)
    (xu, xinv), (wu, inv) = v.read_unique("x", xdt), v.read_unique("w", wdt)  # replicated over the grid
    acc = pol.accumulation["f8" if xdt in ("f143", "f152") else "f16"]
    y = gemm_groups(xu, xinv, wu, inv, acc, pol.chunk)
    if v.params[0, 1]:
        v.write("out", y, "f32")
        return
    bias = v.read("bias", "f16") if v.used("bias") else None
    v.write("out", finish(y, int(v.params[0, 0]), bias), "f16")


def execute_accumulate(v, pol) -> None:
    """AmpGemmAccF16/F8: one k-slice's product added into the running F32 accumulator; the last step writes
    the F16 output (scaled, plus the bias)."""
    fp8 = ("f143", "f152")
    ok = fp8 if v.codelet == ACCUMULATE[True].name else ("f16",)
    xdt, wdt = v.dtype(3, ok), v.dtype(4, ok)
    (xu, xinv), (wu, inv) = v.read_unique("x", xdt), v.read_unique("w", wdt)
    y = gemm_groups(xu, xinv, wu, inv, pol.accumulation["f8" if xdt in fp8 else "f16"], pol.chunk)
    if not v.params[0, 1]:
        y = add_partials(v.read("acc", "f32"), y)
    if not v.params[0, 2]:
        v.write("acc", y, "f32")
        return
    bias = v.read("bias", "f16") if v.used("bias") else None
    v.write("out", finish(y, int(v.params[0, 0]), bias), "f16")


def execute_accumulate_out(v, pol) -> None:
    """AmpGemmAccF8Out: one k-slice's FP8 product accumulated in F16 onto the running sum in the output buffer
    (the AMP seeded with it); the last step writes the F16 output (scaled, plus the bias) over it."""
    acc = pol.accumulation["f8"]
    if acc is not DType.F16:
        raise ValueError(f"{ACCUMULATE_OUT.name} accumulates in the output's F16; this policy accumulates FP8 "
                         f"in {acc.short}")
    xdt, wdt = v.dtype(3, ("f143", "f152")), v.dtype(4, ("f143", "f152"))
    (xu, xinv), (wu, inv) = v.read_unique("x", xdt), v.read_unique("w", wdt)
    init = None if v.params[0, 1] else v.read("out", "f16")
    y = gemm_groups(xu, xinv, wu, inv, acc, pol.chunk, init)
    if not v.params[0, 2]:
        v.write("out", y, "f16")  # F16 values: stored as they are
        return
    bias = v.read("bias", "f16") if v.used("bias") else None
    v.write("out", finish(y, int(v.params[0, 0]), bias), "f16")


def execute_reduce(v, pol) -> None:
    """One reduction round; the last writes the F16 output (scaled, plus the bias)."""
    s = add_partials(v.read("partials", "f32"), v.read("received", "f32"))
    if not v.params[0, 0]:
        v.write("out", s, "f32")
        return
    bias = v.read("bias", "f16") if v.used("bias") else None
    v.write("out", finish(s, int(v.params[0, 1]), bias), "f16")
