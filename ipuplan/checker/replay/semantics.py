"""What each codelet must read and what it writes, symbolically: the checker's own statement of every
kernel's meaning on tagged memory (it shares nothing with the backend that emitted the vertices).

A rule sees a group of equally shaped vertices of one compute set and its op (from the IR). It reads each
input field's tags, requires the tensor and iteration the op's input is (through its window), derives which
rows and columns the vertex works on from those tags, checks the fields agree (the same k range in x and
w, the same image in q and k, every key or k-slice covered exactly once before an output is final), and
writes the tags of what it produces."""

from __future__ import annotations

import numpy as np

from .tags import pack, rows_of, unpack

GRAIN = {4: 1, 2: 2, 1: 4}  # elements per word by element size


class ReplayError(Exception):
    """A package whose program does not compute the model: the first wrong read, named."""


def expect(g, field: str, idx: int, rows: int | None = None):
    """(rows [V, R], first column of each word [V, R, W], decoded tags) of op input `idx` read through
    `field`; every word written, of the input's tensor and iteration, rows whole across the field."""
    tags = g.read(field, rows)
    d = unpack(tags)
    tid, gen, c0, cols = g.op.input(idx)
    cat = g.op.inputs[idx][6]
    if cat is None:
        fast = rows_of(d, tid, gen, cols, c0)
        if fast is not None:
            return fast[0], fast[1], d
        # a word is wrong: the element-wise path below names it
        ok = d.holds(tid, gen)
        g.require(ok, field, lambda v: g.describe(tags[v], f"{g.tensors.name(tid)} iteration {gen}"))
        # each row's words within the tensor row of its first word, found without dividing every word
        r0 = d.elem[:, :, 0] // cols
        c = d.elem - (r0 * cols + c0)[:, :, None]
        g.require((c >= -c0) & (c < cols - c0), field, lambda v: "a row of the field mixes tensor rows")
        return r0, c, d
    total, parts = cat  # rows of a concatenation's inputs, renumbered as its rows
    r, c = np.divmod(d.elem, cols)
    ok = np.zeros(d.elem.shape, bool)
    out = np.zeros_like(r)
    for t, gn, n, off in parts:
        m = d.holds(t, gn)
        ok |= m
        out = np.where(m, (r // n) * total + off + r % n, out)
    g.require(ok, field, lambda v: g.describe(tags[v], f"the inputs of {g.tensors.name(tid)}"))
    r = out
    g.require(r == r[:, :, :1], field, lambda v: "a row of the field mixes tensor rows")
    return r[:, :, 0], c, d


def contiguous(g, field: str, c: np.ndarray, grain: int) -> np.ndarray:
    """First column of each vertex's field; columns advance by `grain` per word and repeat on every row."""
    step = c[:, :1, :1] + np.arange(c.shape[2])[None, None, :] * grain
    g.require(c == step, field, lambda v: f"columns {c[v, 0, :4].tolist()}... are not consecutive")
    return c[:, 0, 0]


def out_tags(tensor: int, gen: int, code, rows: np.ndarray, cols: int, col0, n: int, esize: int) -> np.ndarray:
    """[V, R, W] tags of rows `rows` [V, R], columns col0 .. col0 + n of a [., cols] tensor of esize-byte items."""
    q = np.arange(0, n, GRAIN[esize])
    e = rows[:, :, None] * cols + np.asarray(col0).reshape(-1, 1, 1) + q[None, None, :]
    return pack(tensor, gen, np.broadcast_to(np.asarray(code).reshape(-1, 1, 1), e.shape), e)


def _operands(g):
    """A GEMM vertex's x rows [V, R], its k range [k0, k0 + kx) and w's columns [n0, n0 + n), checked to agree."""
    op = g.op
    ex, ew = op.esize(0), op.esize(1)
    xr, xc, _ = expect(g, "x", 0)
    k0 = contiguous(g, "x", xc, GRAIN[ex])
    kx = g.nbytes("x") // ex
    wr, wc, _ = expect(g, "w", 1)
    g.require(wr == (k0[:, None] + np.arange(wr.shape[1])), "w", lambda v: "w rows are not x's k range")
    g.require(np.full(len(k0), wr.shape[1] == kx)[:, None, None], "w", lambda v: f"w has {wr.shape[1]} rows, x {kx} columns")
    return xr, k0, kx, contiguous(g, "w", wc, GRAIN[ew]), g.nbytes("w") // ew


def gemm(g) -> None:
    op = g.op
    xr, k0, kx, n0, n = _operands(g)
    partial = g.params[:, 1]
    g.require((partial == partial[0])[:, None, None], "out", lambda v: "mixed partial and final vertices")
    K, N = op.k, op.n
    if partial[0] == 0:
        g.require((k0 == 0)[:, None, None] & (kx == K), "x", lambda v: f"reads k [{k0[v]}, +{kx}) of {K}: not all of k")
        if op.bias:
            _bias(g, n0, n)
        g.write("out", out_tags(op.out, op.gen, 0, xr, N, n0, n, 2))
    else:
        code = op.interval("k", k0, k0 + kx)
        g.write("out", out_tags(op.partial, op.gen, code, xr, N, n0, n, 4))


def accumulate(g) -> None:
    """A rotating GEMM's step: x's k-slice times w's (the same slice), added to the running F32 accumulator of
    the same output block. The slices a cell has summed form a run of k that wraps at k's end (a cell starts
    at its own slice); a step's slice must start where that run ends, and the last step's run covers all of k."""
    _accumulate(g, "acc", 4)


def accumulate_out(g) -> None:
    """`accumulate` with the running sum held in the output buffer in F16 (the in-place variant)."""
    _accumulate(g, "out", 2)


def _accumulate(g, field: str, esize: int) -> None:
    op = g.op
    xr, k0, kx, n0, n = _operands(g)
    first, last = g.params[:, 1], g.params[:, 2]
    g.require(((first == first[0]) & (last == last[0]))[:, None, None], field, lambda v: "mixed first and last steps")
    K, N = op.k, op.n
    want = out_tags(op.partial, op.gen, 0, xr, N, n0, n, esize)
    if first[0]:
        lo, hi = k0, k0 + kx
    else:
        tags = g.read(field)
        d = unpack(tags)
        g.require(d.holds(op.partial, op.gen), field,
                  lambda v: g.describe(tags[v], f"{g.tensors.name(op.partial)} iteration {op.gen}"))
        g.require(d.elem == unpack(want).elem, field, lambda v: "the running sum holds another output block")
        g.require(d.code == d.code[:, :1, :1], field, lambda v: "mixed k runs")
        lo, hi = op.bounds("k", d.code[:, 0, 0])
        g.require((hi % K == k0)[:, None, None], "x", lambda v: f"k [{k0[v]}, +{kx}) does not continue the summed run "
                  f"[{lo[v]}, {hi[v]}) of {K}")
        hi = hi + kx
    if last[0]:
        g.require(((hi - lo) == K)[:, None, None], field, lambda v: f"the last step sums {hi[v] - lo[v]} of {K} k")
        if op.bias:
            _bias(g, n0, n)
        g.write("out", out_tags(op.out, op.gen, 0, xr, N, n0, n, 2))
    else:
        g.require(((hi - lo) < K)[:, None, None], "x", lambda v: "a k-slice summed twice")
        g.write(field, out_tags(op.partial, op.gen, op.interval("k", lo, hi), xr, N, n0, n, esize))


def _bias(g, n0, n) -> None:
    if not g.used("bias").all():
        g.require(g.used("bias")[:, None, None], "bias", lambda v: "the op's bias is not read")
    br, bc, _ = expect(g, "bias", 2)
    b0 = contiguous(g, "bias", bc, 2)
    g.require((b0 == n0)[:, None, None] & (g.nbytes("bias") // 2 == n), "bias", lambda v: "bias columns differ from w's")


def _partial_pair(g, f1: str, f2: str, tensor: int, kind: str, total: int):
    """Two fields holding the same elements of `tensor` over adjacent intervals of [0, total): (decoded first,
    lo, hi) of their union. A ring's running interval wraps at `total`: it is kept as [lo, hi) with hi past
    total, and the second interval must start where the first ends, modulo total."""
    t1, t2 = g.read(f1), g.read(f2)
    d1, d2 = unpack(t1), unpack(t2)
    for f, t, d in ((f1, t1, d1), (f2, t2, d2)):
        g.require(d.holds(tensor, g.op.gen), f,
                  lambda v, t=t: g.describe(t[v], f"{g.tensors.name(tensor)} iteration {g.op.gen}"))
    g.require(d1.elem == d2.elem, f2, lambda v: "holds other elements than " + f1)
    lo1, hi1 = g.op.bounds(kind, d1.code[:, 0, 0])
    lo2, hi2 = g.op.bounds(kind, d2.code[:, 0, 0])
    g.require((d1.code == d1.code[:, :1, :1]) & (d2.code == d2.code[:, :1, :1]), f1, lambda v: "mixed intervals")
    g.require((hi1 % total == lo2)[:, None, None], f2, lambda v: f"{kind} intervals [{lo1[v]}, {hi1[v]}) and [{lo2[v]}, "
              f"{hi2[v]}) are not adjacent")
    hi = hi1 + (hi2 - lo2)
    g.require((hi - lo1 <= total)[:, None, None], f2, lambda v: f"{kind} intervals overlap: [{lo1[v]}, {hi[v]}) of {total}")
    return d1, lo1, hi


def reduce(g) -> None:
    op = g.op
    d, lo, hi = _partial_pair(g, "partials", "received", op.partial, "k", op.k)
    rows, cols = d.elem // op.n, d.elem % op.n
    if g.params[0, 0]:
        g.require((hi - lo == op.k)[:, None, None], "partials", lambda v: f"the last round sums k [{lo[v]}, "
                  f"{hi[v]}) of {op.k}")
        n0, n = cols[:, 0, 0], cols.shape[2]
        if op.bias:
            _bias(g, n0, n)
        g.write("out", out_tags(op.out, op.gen, 0, rows[:, :, 0], op.n, n0, n, 2))
    else:
        g.write("out", pack(op.partial, op.gen, np.broadcast_to(op.interval("k", lo, hi)[:, None, None], d.elem.shape),
                            d.elem))


def unary(g) -> None:
    """GELU, casts, broadcasts: out[r, c] = f(x[r mod rows(x), c])."""
    op = g.op
    src, dst = g.fields[0], g.fields[1]
    xr, xc, _ = expect(g, src, 0)
    c0 = contiguous(g, src, xc, GRAIN[op.esize(0)])
    n = g.nbytes(src) // op.esize(0)
    R = g.rows(dst)
    if op.kind == "broadcast":  # the output rows the block holds: any rows read the same input row
        rows = g.params[:, 1][:, None] + np.arange(R)[None, :]
        g.require((xr[:, :1] == rows[:, :1] % op.in_rows(0))[:, :, None], src, lambda v: "reads the wrong row")
    else:
        rows = xr
        g.require(np.full((len(xr), 1, 1), R == xr.shape[1]), dst, lambda v: "writes other rows than it reads")
    g.require(np.full((len(xr), 1, 1), g.nbytes(dst) // op.out_esize == n), dst, lambda v: "writes other columns")
    g.write(dst, out_tags(op.out, op.gen, 0, rows, op.n, c0, n, op.out_esize))


def add(g) -> None:
    op = g.op
    ar, ac, _ = expect(g, "a", 0)
    br, bc, _ = expect(g, "b", 1)
    c0 = contiguous(g, "a", ac, 2)
    g.require(bc[:, :1, :] == ac[:, :1, :], "b", lambda v: "b's columns differ from a's")
    want = ar % op.in_rows(1)
    if ar.shape[1] % br.shape[1]:
        g.fail(0, "b", f"has {br.shape[1]} rows, which do not repeat over a's {ar.shape[1]}")
    got = br[:, np.arange(ar.shape[1]) % br.shape[1]]  # a vector's one row, or a table once per image
    g.require((got == want)[:, :, None], "b", lambda v: "b's rows do not match a's")
    g.write("out", out_tags(op.out, op.gen, 0, ar, op.n, c0, g.nbytes("a") // 2, 2))


def layernorm_stats(g) -> None:
    op = g.op
    xr, xc, _ = expect(g, "x", 0)
    c0 = contiguous(g, "x", xc, 2)
    n = g.nbytes("x") // 2
    code = op.interval("c", c0, c0 + n)
    R = xr.shape[1]
    e = xr[:, :, None] * 2 + np.arange(2)[None, None, :]
    g.write_words("partial", pack(op.stats, op.gen, np.broadcast_to(code[:, None, None], e.shape), e).reshape(len(e), -1))


def layernorm(g) -> None:
    op = g.op
    xr, xc, _ = expect(g, "x", 0)
    c0 = contiguous(g, "x", xc, 2)
    n = g.nbytes("x") // 2
    for f, i in (("gamma", 1), ("beta", 2)):
        _, pc, _ = expect(g, f, i)
        g.require(pc[:, :1, :] == xc[:, :1, :], f, lambda v: f"{f} columns differ from x's")
    C = op.n
    R = xr.shape[1]
    if g.params[0, 2] <= 1:
        g.require(((c0 == 0) & (n == C))[:, None, None], "x", lambda v: "normalizes a row it does not hold whole")
        g.require((g.params[:, 3] == 0)[:, None, None], "x", lambda v: "parameter 3 names a column block of a "
                                                                       "row held whole")
    else:
        want = (xr[:, :, None] * 2 + np.arange(2)).reshape(len(xr), -1)
        parts = [g.read_words("partial", 2 * R)]
        slots = g.params[0, 2] - 1
        slot = g.nbytes("received") // 4 // slots
        rec = g.read_words("received", slot * slots).reshape(len(xr), slots, slot)[:, :, :2 * R]
        parts += [rec[:, s] for s in range(slots)]
        spans = []
        for t in parts:
            d = unpack(t)
            g.require((d.holds(op.stats, op.gen) & (d.elem == want))[:, :, None],
                      "received", lambda v: "statistics of other rows, or never written")
            spans.append(op.bounds("c", d.code[:, 0]))
        lo = np.stack([s[0] for s in spans], 1)
        hi = np.stack([s[1] for s in spans], 1)
        o = np.argsort(lo, 1)
        lo, hi = np.take_along_axis(lo, o, 1), np.take_along_axis(hi, o, 1)
        ok = (lo[:, 0] == 0) & (hi[:, -1] == C) & (lo[:, 1:] == hi[:, :-1]).all(1)
        g.require(ok[:, None, None], "received", lambda v: "the statistics do not cover the row's columns once")
        own = np.argmax(o == 0, 1)  # the sums are added in column-block order: the vertex must know its place
        g.require((g.params[:, 3] == own)[:, None, None], "x",
                  lambda v: f"parameter 3 (its column block) is {g.params[v, 3]}, its columns are block {own[v]}")
    g.scratch("scratch")
    g.write("out", out_tags(op.out, op.gen, 0, xr, C, c0, n, 2))


def _attention_operands(g):
    """(q rows [V, R], head [V], first key [V], keys) of an attention vertex: q, k and v one head's columns, the
    keys consecutive rows of the query's image, v's rows k's; scratch fields left unread."""
    op = g.op
    D, S, Sk, H = op.head_dim, op.sq, op.sk, op.heads
    qr, qc, qd = expect(g, "q", 0)
    kr, kc, kd = expect(g, "k", 1)
    vr, vc, vd = expect(g, "v", 2)
    h = contiguous(g, "q", qc, 2) // D
    for f, c in (("q", qc), ("k", kc), ("v", vc)):
        g.require((c[:, 0, :1] == (h * D)[:, None])[:, :, None] & np.full((len(h), 1, 1), c.shape[2] * 2 == D), f,
                  lambda v, f=f: f"{f} is not head {h[v]}'s {D} columns")
        contiguous(g, f, c, 2)
    if op.rope:
        g.require(qd.code == 1, "q", lambda v: "q is not RoPE-rotated")
        g.require(kd.code == 1, "k", lambda v: "k is not RoPE-rotated")
    g.require(vd.code == 0, "v", lambda v: "v is rotated")
    b = qr[:, 0] // S
    g.require(((qr // S) == b[:, None])[:, :, None], "q", lambda v: "q rows span two images")
    t0 = kr[:, 0] - b * Sk
    g.require((kr == kr[:, :1] + np.arange(kr.shape[1]))[:, :, None] & ((kr[:, :1] // Sk) == b[:, None])[:, :, None],
              "k", lambda v: "keys are not consecutive rows of the query's image")
    g.require((vr == kr)[:, :, None], "v", lambda v: "v rows differ from k rows")
    g.scratch("scratch")
    g.scratch("state")
    return qr, h, t0, kr.shape[1]


def attention(g) -> None:
    op = g.op
    D, Sk, H = op.head_dim, op.sk, op.heads
    qr, h, t0, Rk = _attention_operands(g)
    if g.params[0, 2] == 0:
        g.require(((t0 == 0) & (Rk == Sk))[:, None, None], "k", lambda v: f"reads keys [{t0[v]}, +{Rk}) of {Sk}")
        g.write("out", out_tags(op.out, op.gen, 0, qr, H * D, h * D, D, 2))
    else:
        code = op.interval("s", t0, t0 + Rk)
        g.write("out", out_tags(op.state, op.gen, code, qr, H * (D + 2), h * (D + 2), D + 2, 4))


def carry(g) -> None:
    """A ring step carrying the softmax state: the running state of the same query rows and head (none on the
    first step) continues over this panel's keys, which must start where the summed keys end (wrapping at the
    image's last key); the last step's keys complete the image and it writes the output."""
    op = g.op
    D, Sk, H = op.head_dim, op.sk, op.heads
    qr, h, t0, Rk = _attention_operands(g)
    first, last = g.params[:, 2], g.params[:, 4]
    g.require(((first == first[0]) & (last == last[0]))[:, None, None], "carry", lambda v: "mixed first and last steps")
    want = out_tags(op.state, op.gen, 0, qr, H * (D + 2), h * (D + 2), D + 2, 4)
    if first[0]:
        lo, hi = t0, t0 + Rk
    else:
        tags = g.read("carry")
        d = unpack(tags)
        g.require(d.holds(op.state, op.gen), "carry",
                  lambda v: g.describe(tags[v], f"{g.tensors.name(op.state)} iteration {op.gen}"))
        g.require(d.elem == unpack(want).elem, "carry", lambda v: "the running state holds other query rows or heads")
        g.require(d.code == d.code[:, :1, :1], "carry", lambda v: "mixed key runs")
        lo, hi = op.bounds("s", d.code[:, 0, 0])
        g.require((hi % Sk == t0)[:, None, None], "k", lambda v: f"keys [{t0[v]}, +{Rk}) do not continue the summed "
                  f"run [{lo[v]}, {hi[v]}) of {Sk}")
        hi = hi + Rk
    if last[0]:
        g.require(((hi - lo) == Sk)[:, None, None], "carry", lambda v: f"the last step covers {hi[v] - lo[v]} of {Sk} keys")
        g.write("out", out_tags(op.out, op.gen, 0, qr, H * D, h * D, D, 2))
    else:
        g.require(((hi - lo) < Sk)[:, None, None], "k", lambda v: "a key panel summed twice")
        g.write("carry", out_tags(op.state, op.gen, op.interval("s", lo, hi), qr, H * (D + 2), h * (D + 2), D + 2, 4))


def merge(g) -> None:
    op = g.op
    D, H = op.head_dim, op.heads
    d, lo, hi = _partial_pair(g, "state", "received", op.state, "s", op.sk)
    if g.params[0, 0]:
        g.require((hi - lo == op.sk)[:, None, None], "state", lambda v: f"merges keys [{lo[v]}, {hi[v]})")
        w = H * (D + 2)
        rows, h = d.elem[:, :, 0] // w, (d.elem[:, 0, 0] % w) // (D + 2)
        g.write("out", out_tags(op.out, op.gen, 0, rows, H * D, h * D, D, 2))
    else:
        g.write("out", pack(op.state, op.gen, np.broadcast_to(op.interval("s", lo, hi)[:, None, None], d.elem.shape),
                            d.elem))


def rope(g, per_angle: int = 1) -> None:
    """Rotated q and k columns; every table row the rows' token positions (every `per_angle`-th column of the
    interleaved table: 2 for unique angles)."""
    op = g.op
    xt = g.read("x")
    d = unpack(xt)
    g.require(d.holds(op.out, op.gen) & (d.code == 0), "x",
              lambda v: g.describe(xt[v], f"{g.tensors.name(op.out)} iteration {op.gen}, not yet rotated"))
    rows, cols = d.elem[:, :, 0] // op.n, d.elem % op.n
    g.require((g.params[:, 0] == rows[:, 0])[:, None, None], "x",
              lambda v: f"parameter 0 (first row) is {g.params[v, 0]}, the block's first row is {rows[v, 0]}")
    g.require((g.params[:, 3] == cols[:, 0, 0])[:, None, None], "x",
              lambda v: f"parameter 3 (first column) is {g.params[v, 3]}, the block's is {cols[v, 0, 0]}")
    S, prefix, D = g.params[:, 1], g.params[:, 2], op.rope_dim
    t = rows % S[:, None]
    for f, tid in (("sin", op.rope_tables[0]), ("cos", op.rope_tables[1])):
        st = unpack(g.read(f))
        want = (t - prefix[:, None])[:, :, None] * D + np.arange(0, D, per_angle)[None, None, :]
        need = (t >= prefix[:, None])[:, :, None]
        g.require(~need | (st.valid & (st.tensor == tid) & (st.elem == want)), f,
                  lambda v, f=f: f"the {f} table rows are not the rows' token positions")
    p = g.params
    inwin = ((cols >= p[:, 4, None, None]) & (cols < p[:, 5, None, None])) | \
        ((cols >= p[:, 6, None, None]) & (cols < p[:, 7, None, None]))
    g.write("x", np.where(inwin, pack(d.tensor, d.gen, 1, d.elem), xt))


def rope_unique(g) -> None:
    rope(g, 2)


RULES = {"AmpGemmF16": gemm, "AmpGemmF8": gemm, "AmpGemmAccF16": accumulate, "AmpGemmAccF8": accumulate,
         "AmpGemmAccF8Out": accumulate_out,
         "ReducePartialsF32": reduce, "LayerNormF16": layernorm,
         "LayerNormStatsF16": layernorm_stats, "AddF16": add, "GeluF16": unary, "CastF16ToF8": unary,
         "Copy": unary, "AttentionStreamingF16": attention, "AttentionMaterializedF16": attention,
         "AttentionCarryF16": carry,
         "SoftmaxStateMergeF32": merge, "RopeF16": rope, "RopeUniqueF16": rope_unique}
