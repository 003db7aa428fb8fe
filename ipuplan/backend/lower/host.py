"""Host bindings: where every element of every parameter, constant, input and output sits, as slabs of
row-major element runs. `initialize` writes parameters and constants (a per-layer sequence once per
iteration, at its stride); `run` writes the input and reads the output."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Role
from ...layout import Layout
from ...layout.transfer import _flat_sizes
from .buffers import LoweringError, Placed
from .context import Ctx
from .program import Binding, Slabs


def grid_slabs(buf: Placed, tiles: int, rows0: int = 0) -> Slabs:
    """One slab per block of a grid layout (all replicas as destinations)."""
    lay = buf.layout
    b = buf.blocks(tiles)
    rb, cb = lay.row_bounds(), lay.col_bounds()
    I, J = [a.ravel() for a in np.meshgrid(np.arange(lay.pr), np.arange(lay.pc), indexing="ij")]
    reps = lay.replicas
    e0 = (rb[I] + rows0) * lay.cols + cb[J]
    n = cb[J + 1] - cb[J]
    return Slabs(e0, n, rb[I + 1] - rb[I], np.full_like(I, lay.cols), b.pitch[0, I, J],
                 b.tile[:, I, J].T.reshape(-1, reps), b.addr[:, I, J].T.reshape(-1, reps),
                 b.stride[:, I, J].T.reshape(-1, reps))


def home_slabs(home: Placed, staged: Layout, tiles: int) -> Slabs:
    """A flat home holds the byte stream of `staged`'s blocks (row block, then column block, each row-major at
    its pitch): every intersection of a block's rows with a home chunk is a slab (whole rows) plus the rows
    a chunk boundary cuts."""
    bb = staged.block_bytes().ravel()
    so = np.concatenate([[0], np.cumsum(bb)])
    hs = np.concatenate([[0], np.cumsum(_flat_sizes(home.layout))])
    hb = home.blocks(tiles)
    ht, ha, hst = hb.tile[0, :, 0], hb.addr[0, :, 0], hb.stride[0, :, 0]
    rb, cb, pitch = staged.row_bounds(), staged.col_bounds(), staged.pitches()
    e = staged.elem
    recs = []
    for k in range(len(bb)):
        i, j = divmod(k, staged.pc)
        nr, nc, p = int(rb[i + 1] - rb[i]), int(cb[j + 1] - cb[j]), int(pitch[j])
        data = nc * e
        c_lo = int(np.searchsorted(hs, so[k], side="right") - 1)
        c_hi = int(np.searchsorted(hs, so[k] + nr * p, side="left"))
        for c in range(c_lo, c_hi):
            a, z = max(hs[c], so[k]), min(hs[c + 1], so[k] + nr * p)  # stream bytes of block k in chunk c
            for q0, q1, b0, b1 in _row_pieces(int(a - so[k]), int(z - so[k]), p, data):
                if b1 <= b0:
                    continue
                recs.append(((rb[i] + q0) * staged.cols + cb[j] + b0 // e, (b1 - b0) // e, q1 - q0, staged.cols,
                             p, ht[c], ha[c] + so[k] + q0 * p + b0 - hs[c], hst[c]))
    r = np.asarray(recs, np.int64).reshape(-1, 8)
    return Slabs(r[:, 0], r[:, 1], r[:, 2], r[:, 3], r[:, 4], r[:, 5:6], r[:, 6:7], r[:, 7:8])


def _row_pieces(a: int, z: int, p: int, data: int):
    """Byte range [a, z) of a block stored at pitch p with `data` bytes per row, as (row0, row1, b0, b1):
    rows [row0, row1) each contribute their bytes [b0, b1) (clipped to the data)."""
    q_a, off_a = divmod(a, p)
    q_z, off_z = divmod(z, p)
    if q_a == q_z:
        yield q_a, q_a + 1, off_a, min(off_z, data)
        return
    if off_a:
        yield q_a, q_a + 1, off_a, data
        q_a += 1
    if q_z > q_a:
        yield q_a, q_z, 0, data
    if off_z:
        yield q_z, q_z + 1, 0, min(off_z, data)


def _concat(parts: list[Slabs]) -> Slabs:
    r = max(p.tile.shape[1] for p in parts)
    pad = lambda a: np.pad(a, ((0, 0), (0, r - a.shape[1])), constant_values=-1)
    return Slabs(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("e0", "n", "rows", "estride", "pitch")),
                 *(np.concatenate([pad(getattr(p, k)) for p in parts]) for k in ("tile", "addr", "stride")))


def _rope_slabs(cx: Ctx, sop, im, which: int) -> Slabs:
    """sin (which 0) or cos (1) rows of every output block's RoPE table: row t - prefix of the [tokens -
    prefix, head_dim] table for each block row of token t >= prefix; with unique angles (the choice's `rope`),
    every second column of it (the interleaved table holds each angle twice), one element per run."""
    from ...catalogue.impl import Ctx as CatalogueCtx
    from ...catalogue.matmul import rope_consumer
    cop, _ = rope_consumer(CatalogueCtx(cx.p.target, cx.p.sched, cx.p.batch), sop)
    D, prefix = cop.op.attrs.head_dim, cop.op.attrs.rope_prefix
    unique = im.fields.get("rope") == "unique"
    W = D // 2 if unique else D  # table columns on the tile
    S = sop.graph.value(cop.op.inputs[1]).shape[1]
    lay = im.out
    tab = cx.own(sop.key, "RoPE tables").blocks(cx.T)
    rb = lay.row_bounds()
    recs = []
    for i in range(lay.pr):
        r0, r1 = int(rb[i]), int(rb[i + 1])
        for img in range(r0 // S, (r1 - 1) // S + 1):
            lo, hi = max(r0, img * S + prefix), min(r1, (img + 1) * S)
            if hi <= lo:
                continue
            for j in range(lay.pc):
                addr = tab.addr[0, i, j] + which * (r1 - r0) * W * 4 + (lo - r0) * W * 4
                e0 = (lo - img * S - prefix) * D
                recs.append((e0, 1, (hi - lo) * W, 2, 4, tab.tile[0, i, j], addr) if unique else
                            (e0, D, hi - lo, D, D * 4, tab.tile[0, i, j], addr))
    r = np.asarray(recs, np.int64).reshape(-1, 7)
    return Slabs(r[:, 0], r[:, 1], r[:, 2], r[:, 3], r[:, 4], r[:, 5:6], r[:, 6:7], np.zeros((len(r), 1), np.int64))


def bindings(cx: Ctx) -> tuple[Binding, ...]:
    p, T = cx.p, cx.T
    sched = p.sched
    slabs: dict[str, list[Slabs]] = {}
    for op, im in cx.impl.items():
        for pu in im.params:
            count = sched.params[pu.key].count
            if pu.key in slabs:
                continue
            if pu.mode.value == "resident":
                slabs[pu.key] = [grid_slabs(cx.buf(f"{pu.key} (resident x{count})"), T)]
            elif pu.home.kind.value == "spread":
                slabs[pu.key] = [home_slabs(cx.buf(f"{pu.key} (home x{count})"), pu.layout, T)]
            else:  # a blocks home is a grid layout of its own: one replica of the staged blocks
                slabs[pu.key] = [grid_slabs(cx.buf(f"{pu.key} (home x{count})"), T)]
        if any(b.role == "RoPE tables" for b in im.bufs):
            cop = [c for c in sched.buffers[op].consumers if sched.op(c).op.attrs.__class__.__name__ ==
                   "AttentionAttrs" and sched.op(c).op.attrs.rope]
            ins = sched.op(cop[0]).op.inputs
            sop = sched.op(op)
            slabs.setdefault(ins[3], []).append(_rope_slabs(cx, sop, im, 0))
            slabs.setdefault(ins[4], []).append(_rope_slabs(cx, sop, im, 1))
    out = []
    for key, info in sched.params.items():
        if key not in slabs:
            raise LoweringError(f"parameter {key} has no placed copy")
        v = info.value
        out.append(Binding(key, "const" if v.role is Role.CONST else "param", v.dtype.short, v.scale, v.shape,
                           info.count, _concat(slabs[key])))
    for key, b in sched.buffers.items():
        if not b.producer:
            out.append(Binding(key, "input", b.value.dtype.short, b.value.scale, b.value.shape, 1,
                               grid_slabs(cx.buf(f"{key} (host input)"), T)))
    g = sched.graph
    for name in g.outputs:
        key = _root(sched, name)
        v = g.value(name)
        s = grid_slabs(cx.buf(f"{key} (output)"), T)
        out.append(Binding(name, "output", v.dtype.short, v.scale, v.shape, 1,
                           Slabs(s.e0, s.n, s.rows, s.estride, s.pitch, s.tile[:, :1], s.addr[:, :1], s.stride[:, :1])))
    return tuple(out)


def _root(sched, name: str) -> str:
    """The buffer a graph output is a view of (reshape and slice own no bytes)."""
    if name in sched.buffers:
        return name
    g = sched.graph
    for op in g.ops:
        if name in op.outputs:
            if op.kind.value in ("reshape", "slice"):
                return _root(sched, op.inputs[0])
            return op.name
    raise LoweringError(f"graph output {name} has no buffer")
