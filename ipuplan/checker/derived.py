"""What the checker derives for one op under one recorded choice, and the context every derivation reads: the
program, the target, the batch, the parameter counts; staged parameters' recorded homes."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ..ir.graph import OpKind
from .geometry import per_block, row_sizes
from .validate import Invalid, one_of


@dataclass
class Derived:
    out: dict
    needs: dict = field(default_factory=dict)  # input -> layout | ("rows", layout, segments) | None
    params: list = field(default_factory=list)  # (param key, layout, mode, home: ("spread"|"blocks", chunks))
    bufs: list = field(default_factory=list)  # (role, layout, life: compute | operand | program)
    internal: list = field(default_factory=list)  # Counts of exchanges inside the op's compute step
    internal_ends: tuple = ()  # (role sent from, role received into) of the internal exchanges
    rounds: list = field(default_factory=list)  # exchanges between named buffers: per superstep, (Counts, sent
    #                                             from, received into) of each transfer (rotations)
    apart: list = field(default_factory=list)  # (buffer, buffer) never in one memory element: "x", "out" or a role
    out_from_exchange: bool = False


def matrix_of(shape) -> tuple[int, int]:
    return (prod(shape[:-1]) if len(shape) > 1 else 1), shape[-1]


def groups(rows: int, pr: int, batch: int) -> int:
    return batch if pr % batch == 0 and rows % batch == 0 else 1


def shape_of(kind, key, g, params, index):
    if kind == "param":
        return params[key][0]
    if kind == "input":
        return g.value(key)
    o = index[key]
    return o.graph.value(o.op.outputs[0])


class Ctx:
    """What every rule needs: the program, the target, the batch, the parameter counts."""

    def __init__(self, g, prog, index, target, batch, compact: bool = False, steps=None):
        from ..codelets import ROTATING_STEPS
        self.g, self.prog, self.index, self.target, self.batch = g, prog, index, target, batch
        self.compact = compact  # the compact catalogue: in-place accumulation, rotating matmuls with RoPE
        self.steps = steps or ROTATING_STEPS  # the most k-slices and key panels a rotation may take
        self.T = target.tiles

    def descriptors(self, grid: dict, codelet, patched: int) -> tuple:
        nbytes = codelet.descriptor_bytes(self.target) + 4 * patched
        return (f"descriptors {codelet.name}", per_block(grid, nbytes), "program")

    def patched(self, params) -> int:
        return sum(1 for key, _, mode, _ in params if mode == "resident" and self.prog.params[key][1] > 1)


def homes(ch: dict, path: str, d: Derived) -> None:
    """Attach each staged parameter's recorded home (absent: every home spread, as the grid catalogue keeps
    them); a chunked home only for a one-block, one-row layout with at least a word per chunk."""
    staged = [i for i, (_, _, mode, _) in enumerate(d.params) if mode == "staged"]
    rec = ch.get("homes") if isinstance(ch, dict) else None
    if rec is None:
        d.params = [(k, lay, mode, ("spread", 1)) for k, lay, mode, _ in d.params]
        return
    keys = {d.params[i][0] for i in staged}
    if not isinstance(rec, dict) or set(rec) != keys:
        raise Invalid(f"{path}.homes: {rec!r} is invalid; valid: a home for each staged parameter {sorted(keys)}")
    out = []
    for k, lay, mode, _ in d.params:
        home = ("spread", 1)
        if mode == "staged":
            v = rec[k]
            kind, _, chunks = v.partition("/") if isinstance(v, str) else ("", "", "")
            ok = kind in ("spread", "blocks") and (not chunks or kind == "blocks" and chunks.isdigit())
            c = int(chunks) if chunks and chunks.isdigit() else 1
            one_row = not lay["flat"] and lay["pr"] * lay["pc"] == 1 and lay["rows"] == 1 and lay["col_align"] == 1
            if not ok or c < 1 or c > 1 and (not one_row or c > -(-lay["cols"] // max(1, 4 // lay["elem"]))):
                raise Invalid(f"{path}.homes.{k}: {v!r} is invalid; valid: spread, blocks" +
                              (", blocks/<chunks> up to a word per chunk" if one_row else ""))
            home = (kind, c)
        out.append((k, lay, mode, home))
    d.params = out


@dataclass(frozen=True)
class GemmShape:
    """A matmul's operands as the checker reads them from the program: x [m, k], w [k, n]."""

    xkind: str
    xkey: str
    wkey: str
    m: int
    k: int
    n: int
    fp8: bool
    xe: int  # bytes per x element
    we: int  # bytes per w element


def gemm_shape(cx: Ctx, o) -> GemmShape:
    _, xkind, xkey, _ = o.reads[0]
    xv = shape_of(xkind, xkey, cx.g, cx.prog.params, cx.index)
    wkey = o.reads[1][2]
    wv = cx.prog.params[wkey][0]
    m, k = matrix_of(xv.shape)
    return GemmShape(xkind, xkey, wkey, m, k, wv.shape[1], xv.dtype.is_fp8, xv.dtype.itemsize, wv.dtype.itemsize)


def rope_epilogue(cx: "Ctx", o, out: dict, d: Derived, ch: dict, path: str) -> bool:
    """Where rotary attention reads matmul `o`'s output: the F32 sin and cos tables beside every output block
    (one [rows, head_dim] pair each; [rows, head_dim / 2] of unique angles, which the compact catalogue and only
    it uses, when the choice's `rope` is "unique") and the RoPE vertices' descriptors; whether it does."""
    from ..codelets import vector
    unique = "rope" in ch
    if unique:
        one_of(ch, "rope", path, ("unique",))
    for c in cx.prog.consumers[o.key]:
        if c.op.kind is OpKind.ATTENTION and c.op.attrs.rope:
            if unique != cx.compact:
                raise Invalid(f"{path}.rope: RoPE tables of unique angles are the compact catalogue's, and only its "
                              f"({'present' if unique else 'absent'} here, {'' if cx.compact else 'not '}the compact catalogue)")
            rows, D = int(row_sizes(out).max()), c.op.attrs.head_dim
            d.bufs.append(("RoPE tables", per_block(out, rows * (D // 2 if unique else D) * 8), "program"))
            d.bufs.append(cx.descriptors(out, vector.ROPE_UNIQUE if unique else vector.ROPE, 0))
            return True
    if unique:
        raise Invalid(f"{path}.rope: no rotary attention reads this matmul's output")
    return False
