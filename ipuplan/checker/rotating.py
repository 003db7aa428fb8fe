"""The checker's reading of a rotating matmul choice (fields pm, pn, rotate, params "staged", homes): the
skewed shards x and w arrive in, the accumulator and shard buffers, and the r - 1 shift exchanges, derived
here from the op and the fields alone.

Cell (i, j) sits on tile i * pn + j and at step t multiplies x's k-slice q = (i + j + t) mod r by w's. Slices
are balanced whole AMP micro-blocks, each stored at the widest slice's width (x columns, w rows), so any
slice fits any shard buffer. A shift sends every cell's x shard to cell (i, j - 1) of its ring of r columns
and its w shard to cell (i - 1, j) of its ring of r rows, one run of the stored rows each; the shard for
step t sits in the operand's own buffer (x's exchanged copy, w's staged copy) when t is even, else in the
op's shard buffer. `accumulate: "out"` (FP8 operands, a target accumulating FP8 in F16, a catalogue that links
the in-place codelet): the running sum lives in the output buffer, no accumulator. A matmul read by rotary
attention (compact catalogue, fewer slices than the catalogue's most) applies RoPE to its output after the last step."""

from __future__ import annotations

from math import ceil

import numpy as np

from ..codelets import gemm
from .derived import Ctx, Derived, gemm_shape, groups, homes, rope_epilogue
from .exchange import block_moves
from .geometry import L, block_bytes, block_tiles, pitches, per_block, row_sizes
from .validate import Invalid, canonical, integer, one_of



def rotating(cx: Ctx, o, ch: dict, path: str) -> Derived:
    """Derived buffers of the rotating choice `ch` of matmul `o` (raises Invalid naming the bad field)."""
    T, B = cx.T, cx.batch
    if o.reads[0][1] != "act" or o.reads[0][3] is not None:
        raise Invalid(f"{path}.rotate: a rotating matmul needs an activation operand read whole")
    s = gemm_shape(cx, o)
    xkey, wkey, m, k, n, fp8, xe, we = s.xkey, s.wkey, s.m, s.k, s.n, s.fp8, s.xe, s.we
    km = gemm.K_MULTIPLE[fp8]
    if not cx.steps.slices:
        raise Invalid(f"{path}.rotate: the plan's catalogue offers no rotating matmuls (rotating, compact do)")
    r = one_of(ch, "rotate", path, tuple(range(2, cx.steps.slices + 1)))
    one_of(ch, "pk", path, (1,))
    pm, pn = integer(ch, "pm", path, r, m), integer(ch, "pn", path, r, -(-n // 4))
    micro = -(-k // km)
    if pm % r or pn % r or pm * pn > T or micro < r:
        raise Invalid(f"{path}: rotating grid {pm}x{pn} with {r} slices does not fit {m}x{k}x{n} on {T} tiles "
                      f"(r must divide pm and pn; k has {micro} micro-blocks)")
    one_of(ch, "params", path, ("staged",))
    g = groups(m, pm, B)
    cg = max(1, 4 // we)
    c16 = 0 if cg == 2 else cg
    width = ceil(micro / r) * km
    out = canonical(L(m, n, 2, pm, pn, row_stride=pn, col_stride=1, row_groups=g, mem="il", col_grain=c16))
    d = Derived(out)
    x = canonical(L(m, k, xe, pm, r, replicas=pn // r, row_stride=pn, col_stride=1, rep_stride=r, row_groups=g,
                    mem="il", col_align=width, col_grain=km, col_skew=-1))
    w = canonical(L(k, n, we, r, pn, replicas=pm // r, row_stride=pn, col_stride=1, rep_stride=r * pn, mem="il",
                    row_align=width, col_align=gemm.N_MULTIPLE, row_grain=km, row_skew=-1))
    d.needs[0] = x
    d.params.append((wkey, w, "staged", None))
    if len(o.reads) > 2:
        d.params.append((o.reads[2][2], canonical(L(1, n, 2, 1, pn, replicas=pm, col_stride=1, rep_stride=pn,
                                                   col_grain=c16)), "staged", None))
    homes(ch, path, d)
    in_place = "accumulate" in ch and one_of(ch, "accumulate", path, ("out",)) == "out"
    if in_place and not (fp8 and cx.target.accumulation["f8"] == "f16" and cx.compact):
        raise Invalid(f"{path}.accumulate: a running sum in the F16 output needs FP8 operands "
                      f"({'FP8' if fp8 else 'F16'} here), a target accumulating FP8 in F16 "
                      f"({cx.target.accumulation['f8']} here) and the compact catalogue")
    if not in_place:
        acc = canonical(L(m, n, 4, pm, pn, row_stride=pn, col_stride=1, row_groups=g, mem="il", col_grain=cg))
        d.bufs.append(("accumulator", acc, "compute"))
    d.bufs += [("x shards", per_block(out, int(block_bytes(x).max()), "il"), "compute"),
               ("w shards", per_block(out, int(block_bytes(w).max()), "il"), "compute")]
    d.bufs += [cx.descriptors(out, gemm.ACCUMULATE_OUT if in_place else gemm.ACCUMULATE[fp8], 0)] * r
    d.rounds = _shifts(cx, o.key, xkey, wkey, x, w, out, r)
    if rope_epilogue(cx, o, out, d, ch, path) and (r >= cx.steps.slices or not cx.compact):
        raise Invalid(f"{path}: a rotating matmul feeding rotary attention takes fewer than {cx.steps.slices} slices "
                      f"(RoPE runs one more compute set) and the compact catalogue ({r} slices here)")
    d.apart = [(a, b) for a in ("x", "x shards") for b in (("out",) if in_place else ("accumulator", "out"))]
    return d


def _shifts(cx, op: str, xkey: str, wkey: str, x: dict, w: dict, cells: dict, r: int) -> list:
    T = cx.T
    tiles = block_tiles(cells, T)[0]
    pm, pn = tiles.shape
    i, j = np.meshgrid(np.arange(pm), np.arange(pn), indexing="ij")
    ring = lambda a: a - a % r + (a % r + 1) % r  # the next cell of a ring of r
    x_run = np.broadcast_to(row_sizes(x)[:, None], (pm, pn)) * int(pitches(x)[0])
    w_run = np.broadcast_to((w["row_align"] * pitches(w))[None, :], (pm, pn))
    own = {"x": f"{xkey} -> {op}[0] (exchanged copy)", "w": f"{wkey} (staged)"}
    out = []
    for t in range(1, r):
        moves = []
        for f, src, nb in (("x", tiles[i, ring(j)], x_run), ("w", tiles[ring(i), j], w_run)):
            holder = lambda s: own[f] if s % 2 == 0 else f"{op} ({f} shards)"
            moves.append((block_moves(T, cx.target, src.ravel(), tiles.ravel(), nb.ravel()), holder(t - 1), holder(t)))
        out.append(moves)
    return out
