"""What a package states, re-derived from its model, target, plan and placement (each re-checked first) and
compared: identity, target record, codelet catalogue, Repeat count, bindings, the buffer table, the step list,
table bytes (the checker's own count, and a recount from the runs), descriptor bytes recounted from the
vertices, the supervisor program's size, and every vertex parameter the op alone implies. Each difference is a
named violation; nothing here reads the backend that wrote the package."""

from __future__ import annotations

import struct
from collections import Counter

import numpy as np

import ipuplan.codelets as cl
from ..codelets.base import DTYPE_CODE
from ..ir.graph import OpKind, Role
from .plan import steps_of


class Mismatch(Exception):
    """The first statement of a package that its sources do not imply."""


def _f32_bits(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", float(x)))[0]


def compare(prog, m: dict, plan: dict, placement: dict, graph, target, derived) -> None:
    """Raise Mismatch on the first difference between the package and what its sources imply; `derived` is the
    plan check's report (its own per-tile table bytes and op kinds)."""
    try:
        _compare(prog, m, plan, placement, graph, target, derived)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise Mismatch(f"a record is malformed ({type(e).__name__}: {e})") from None


def _compare(prog, m, plan, placement, graph, target, derived) -> None:
    _identity(m, plan, graph, prog, target)
    _target(m, target)
    _codelets(prog, m)
    _bindings(prog, graph)
    _buffers(prog, placement, target)
    _steps(prog, m)
    runs = _run_words(prog, target)
    _tables(prog, target, derived.tables, runs)
    _descriptors(prog, placement, target, derived.tables, runs)
    _program(prog, target, derived.op_kinds, steps_of(plan.get("options", {}).get("catalogue")))
    ops = _ops(graph)
    for s in _compute_sets(prog):
        _params(s, ops, plan)


def _identity(m, plan, graph, prog, target) -> None:
    for k in ("model", "batch", "layers", "precision", "fuse_qkv", "fp8_scales"):
        if m.get(k) != plan.get(k):
            raise Mismatch(f"manifest {k} is {m.get(k)!r}, the plan's is {plan.get(k)!r}")
    reps = [op.attrs.count for op in graph.ops if op.kind is OpKind.REPEAT]
    want = reps[0] if reps else 1
    if prog.count != want:
        raise Mismatch(f"Repeat count {prog.count}: the model's graph repeats its body {want} times")
    if (m.get("body") is None) != (not reps):
        raise Mismatch("a Repeat body is stated for a graph without one, or missing for one with it")
    if m.get("modeled_cycles") != plan.get("cycles", {}).get("modeled"):
        raise Mismatch(f"modeled cycles {m.get('modeled_cycles')!r}, the plan's are "
                       f"{plan.get('cycles', {}).get('modeled')!r}")
    if prog.tiles != target.tiles:
        raise Mismatch(f"{prog.tiles} tiles, the target has {target.tiles}")


def _target(m, t) -> None:
    # derived here from the target, not taken from the package writer's projection (package/io.target_record)
    mm = t.memory_map
    want = {"name": t.name, "tiles": t.tiles, "base": mm.base, "region0_end": mm.executable_limit,
            "loadable_end": mm.base + t.usable_bytes, "region0_element_bytes": t.region0_element_bytes,
            "region1_element_bytes": t.region1_element_bytes, "transfer_max_words": t.encoding.transfer_max_words,
            "instruction_bytes": t.instruction_bytes,
            "encoding": {k: getattr(t.encoding, k) for k in ("transfer_max_words", "send_max_words",
                                                               "sendoff_max_words", "recv_piece_words",
                                                               "send_delay_words", "row_words")},
            "reservations": [[r.name, r.start, r.end] for r in mm.reservations],
            "code_window": list(mm.code_window)}
    got = m.get("target")
    if not isinstance(got, dict) or set(got) != set(want):
        raise Mismatch("the target record's fields are not the target's")
    for k, v in want.items():
        if got[k] != v:
            raise Mismatch(f"target record {k} is {got[k]!r}; the target file {t.name} gives {v!r}")


def _compute_sets(prog):
    out = [s for s in prog.steps if s.kind == "compute"]
    return out + ([prog.carry] if prog.carry is not None else [])


def _codelets(prog, m) -> None:
    used = {v.codelet for s in _compute_sets(prog) for v in s.vertices}
    unknown = sorted(used - set(cl.BY_NAME))
    if unknown:
        raise Mismatch(f"codelet {unknown[0]} is not one of ipuplan's codelets")
    stated = {c.get("name"): c for c in m.get("codelets", [])}
    if set(stated) != used:
        raise Mismatch(f"the codelet catalogue lists {sorted(stated)}; the vertices use {sorted(used)}")
    for name, rec in stated.items():
        c = cl.BY_NAME[name]
        want = {"name": name, "fields": list(c.fields), "params": c.params, "code_bytes": c.code_bytes,
                "interleaved": list(c.interleaved)}
        if rec != want:
            k = next(k for k in want if rec.get(k) != want[k])
            raise Mismatch(f"codelet {name}: the package states {k} {rec.get(k)!r}, the codelet is {want[k]!r}")


def _bindings(prog, graph) -> None:
    want = {}
    for v in graph.values:
        if v.role in (Role.PARAM, Role.CONST):
            want[v.name] = (v.role.value, v.dtype.short, v.scale, tuple(v.shape), 1)
        elif v.role is Role.INPUT:
            want[v.name] = ("input", v.dtype.short, v.scale, tuple(v.shape), 1)
    for op in graph.ops:
        if op.kind is OpKind.REPEAT:
            a = op.attrs
            nc, ns = len(a.carried), len(a.sequences)
            for bi, outer in zip(a.sequences, op.inputs[nc:nc + ns]):
                v = a.body.value(bi)
                want[outer] = (graph.value(outer).role.value, v.dtype.short, v.scale, tuple(v.shape), a.count)
    for name in graph.outputs:
        v = graph.value(name)
        want[name] = ("output", v.dtype.short, v.scale, tuple(v.shape), 1)
    got = {}
    for b in prog.bindings:
        if b.name in got:
            raise Mismatch(f"binding {b.name} appears twice")
        got[b.name] = (b.role, b.dtype, int(b.scale), tuple(b.shape), int(b.count))
    if set(got) != set(want):
        extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
        raise Mismatch(f"bindings: {'unknown ' + extra[0] if extra else 'no binding for ' + missing[0]}")
    for name, w in want.items():
        if got[name] != w:
            k = next(i for i in range(5) if got[name][i] != w[i])
            what = ("role", "dtype", "scale", "shape", "count")[k]
            raise Mismatch(f"binding {name}: {what} {got[name][k]!r}, the model's value has {w[k]!r}")


def _buffers(prog, placement: dict, target) -> None:
    """The buffer table is the placement's, tile group by tile group, at the target's base."""
    bt = prog.buffers
    base = placement["base"]
    owner = np.full(target.tiles, -1, np.int64)
    for gi, g in enumerate(placement["groups"]):
        for lo, hi in g["tiles"]:
            owner[lo:hi + 1] = gi
    if len(bt.group_of_tile) != target.tiles:
        raise Mismatch(f"the buffer table's group map covers {len(bt.group_of_tile)} tiles, the target has "
                       f"{target.tiles}")
    # the same partition of tiles: package group -> placement group one to one
    pairs = np.unique(np.stack([bt.group_of_tile, owner]), axis=1)
    if len(np.unique(pairs[0])) != pairs.shape[1] or len(np.unique(pairs[1])) != pairs.shape[1]:
        t = int(np.flatnonzero(bt.group_of_tile != bt.group_of_tile[0])[0]) if pairs.shape[1] > 1 else 0
        raise Mismatch(f"the buffer table groups tiles unlike the placement (near tile {t})")
    to_place = dict(zip(pairs[0].tolist(), pairs[1].tolist()))
    names = bt.names
    stated: dict[int, list] = {}
    for i in np.argsort(bt.group, kind="stable"):
        g = int(bt.group[i])
        if g not in to_place:
            raise Mismatch(f"buffer {names[bt.name[i]]!r} belongs to group {g}, which no tile uses")
        stated.setdefault(g, []).append((names[bt.name[i]], int(bt.addr[i]) - base, int(bt.size[i]),
                                          int(bt.first[i]), int(bt.last[i])))
    for g, pg in to_place.items():
        group = placement["groups"][pg]
        tile = group["tiles"][0][0]
        got = Counter(stated.get(g, []))
        want = Counter(tuple(b) for b in group["buffers"])
        if got != want:
            extra, missing = sorted(got - want), sorted(want - got)
            if extra:
                n, a, s, f, last = extra[0]
                raise Mismatch(f"tile {tile}: buffer {n!r} at {a + base:#x} (+{s}, steps {f}-{last}) is not the "
                               f"placement's" + (f"; the placement has {missing[0]!r}" if missing else ""))
            n, a, s, f, last = missing[0]
            raise Mismatch(f"tile {tile}: the placement's buffer {n!r} at {a + base:#x} (+{s}, steps {f}-{last}) "
                           f"is missing from the package")


def _steps(prog, m) -> None:
    """Every compute set and exchange once, in step order, in the section its step lies in."""
    seen = Counter((s.kind, s.step, s.op, s.name) for s in prog.steps)
    dup = [k for k, n in seen.items() if n > 1]
    if dup:
        k = dup[0]
        raise Mismatch(f"step {k[1]} ({k[2]} {k[3]}): the {k[0]} appears {seen[k]} times")
    body = m.get("body")
    last = -1
    for s in prog.steps:
        if s.step < last:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}) comes after step {last}")
        last = s.step
        want = "prologue" if body is None or s.step < body[0] else ("body" if s.step <= body[1] else "epilogue")
        if s.section.value != want:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}) is in the {s.section.value}; its step lies in the {want}")
    for s in _compute_sets(prog):
        for v in s.vertices:
            rows = np.concatenate([v.tile[:, None], v.addr, v.stride], axis=1)
            if len(np.unique(rows, axis=0)) != len(rows):
                raise Mismatch(f"step {s.step} ({s.op} {s.name}): a {v.codelet} vertex appears more than once")


def _run_words(prog, t) -> np.ndarray:
    """Encoded exchange bytes per tile that the package's runs need at least: a row on every tile that takes
    part in an exchange program, the send words of each piece, the receive words per piece and destination
    (rows are counted per exchange program, so this is a lower bound of the per-transfer count)."""
    e, T = t.encoding, t.tiles
    need = np.zeros(T, np.int64)
    for s in prog.steps:
        if s.kind != "exchange" or not len(s.src):
            continue
        w = s.nbytes // 4
        send = 1 + e.send_delay_words + -(-np.maximum(w - e.send_max_words, 0) // e.sendoff_max_words)
        need += np.bincount(s.src, weights=send, minlength=T).astype(np.int64)
        d = s.dst[s.dst >= 0]
        recv = np.bincount(d, minlength=T)
        need += recv * e.recv_piece_words
        part = (np.bincount(s.src, minlength=T) + recv) > 0
        need += part * e.row_words
    return need * t.instruction_bytes


def _tables(prog, t, want, need) -> None:
    """tables/lowered is exactly the checker's own count of the plan's exchanges (and local copies), and at
    least what the package's runs encode."""
    low, T = prog.tables, t.tiles
    if low.shape != (T,):
        raise Mismatch(f"tables/lowered has shape {low.shape}, not [{T}]")
    diff = low != want
    if diff.any():
        i = int(np.flatnonzero(diff)[0])
        raise Mismatch(f"tile {i}: tables/lowered states {int(low[i]):,} B of exchange code; the plan's exchanges "
                       f"and local copies encode {int(want[i]):,} B")
    short = low < need
    if short.any():
        i = int(np.flatnonzero(short)[0])
        raise Mismatch(f"tile {i}: tables/lowered states {int(low[i]):,} B of exchange code; its runs encode at "
                       f"least {int(need[i]):,} B")


def _vertex_bytes(prog, t) -> np.ndarray:
    """Descriptor bytes per tile of every vertex the package holds: the codelet's descriptor, a word per field
    rewritten between Repeat iterations (a nonzero stride), in whole 8-byte units."""
    out = np.zeros(t.tiles, np.int64)
    for s in _compute_sets(prog):
        for v in s.vertices:
            per = cl.BY_NAME[v.codelet].descriptor_bytes(t) + 4 * (v.stride != 0).sum(1)
            out += np.bincount(v.tile, weights=-(-per // 8) * 8, minlength=t.tiles).astype(np.int64)
    return out


def _descriptors(prog, placement, t, tables, runs) -> None:
    """Every tile holds its vertices' descriptors and its runs' exchange code within what the plan reserved for
    both: the placement's descriptor buffers and its exchange tables (a local copy's Copy vertex is counted with
    the tables). Summed per tile, so no step name decides which budget a vertex uses."""
    T = t.tiles
    held = np.zeros(T, np.int64)
    for g in placement["groups"]:
        nb = sum(int(b[2]) for b in g["buffers"] if "descriptors" in str(b[0]))
        for lo, hi in g["tiles"]:
            held[lo:hi + 1] += nb
    desc = _vertex_bytes(prog, t)
    over = desc + runs > held + tables
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise Mismatch(f"tile {i}: its vertices' descriptors ({int(desc[i]):,} B) and exchange runs (at least "
                       f"{int(runs[i]):,} B) need {int(desc[i] + runs[i]):,} B; the plan reserved "
                       f"{int(held[i]):,} B of descriptors and {int(tables[i]):,} B of tables")


def _program(prog, t, kinds: dict, steps) -> None:
    """The supervisor program: every step belongs to a scheduled op, no op has more compute sets or exchanges
    than its kind provides for (codelets.program, for the rotation steps the plan's catalogue reserves), and the whole
    program, the Repeat's carry included, fits the program bytes the plan's support reserved."""
    sets, xs = Counter(), Counter()
    for s in prog.steps:
        if s.op not in kinds:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}) belongs to no op of the plan")
        (sets if s.kind == "compute" else xs)[s.op] += 1
    for op in set(sets) | set(xs):
        c, x = cl.program(kinds[op], steps)
        if sets[op] > c or xs[op] > x:
            raise Mismatch(f"op {op} ({kinds[op].value}) has {sets[op]} compute sets and {xs[op]} exchanges; "
                           f"its kind provides for at most {c} and {x}")
    words = (sum(sets.values()) + (prog.carry is not None)) * t.compute_set_words + sum(xs.values()) * t.exchange_words
    have = cl.program_bytes(t, list(kinds.values()), steps)
    if 4 * words > have:
        raise Mismatch(f"the supervisor program takes {4 * words:,} B; the plan reserved {have:,} B")


def _ops(graph) -> dict:
    """Step key -> (op, the graph that holds it), keys scoped by the Repeat that contains them."""
    out = {}

    def walk(g, scope):
        for op in g.ops:
            out[f"{scope}{op.name}"] = (op, g)
            if op.kind is OpKind.REPEAT:
                walk(op.attrs.body, f"{scope}{op.name}/")
    walk(graph, "")
    return out


def _choice(plan, s) -> dict:
    c = plan["choices"].get(s.op)
    if not isinstance(c, dict):
        raise Mismatch(f"step {s.step} ({s.op} {s.name}): the plan has no choice for op {s.op}")
    return c


def _rounds(pk: int) -> int:
    return max(0, (int(pk) - 1).bit_length())


def _gemm(op, g, s, plan, v):
    a = op.attrs
    x, w = g.value(op.inputs[0]), g.value(op.inputs[1])
    partial = int(_choice(plan, s)["pk"]) > 1  # k split over tiles: F32 partials, then reduction rounds
    return {0: a.x_scale + a.w_scale, 1: int(partial), 2: DTYPE_CODE[x.dtype.short], 3: DTYPE_CODE[w.dtype.short]}


def _accumulate(op, g, s, plan, v):
    """A rotating GEMM's step t of r: the first starts the accumulator, the last writes the output."""
    r = int(_choice(plan, s).get("rotate", 0))
    steps = [f"gemm step {t} of {r}" for t in range(1, r + 1)]
    if s.name not in steps:
        raise Mismatch(f"step {s.step} ({s.op} {s.name}): accumulating GEMM vertices outside the {r} steps of a "
                       f"rotating matmul")
    x, w = g.value(op.inputs[0]), g.value(op.inputs[1])
    return {0: op.attrs.x_scale + op.attrs.w_scale, 1: int(s.name == steps[0]), 2: int(s.name == steps[-1]),
            3: DTYPE_CODE[x.dtype.short], 4: DTYPE_CODE[w.dtype.short]}


def _reduce(op, g, s, plan, v):
    last = s.name == f"reduce round {_rounds(_choice(plan, s)['pk'])}"  # only the last round writes the output
    return {0: int(last), 1: op.attrs.x_scale + op.attrs.w_scale}


def _layernorm(op, g, s, plan, v):
    return {0: _f32_bits(op.attrs.eps), 1: g.value(op.inputs[0]).shape[-1],
            2: int(_choice(plan, s)["output"]["pc"])}


def _gelu(op, g, s, plan, v):
    return {0: int(op.attrs.approximate)}


def _cast(op, g, s, plan, v):
    return {0: op.attrs.scale, 1: DTYPE_CODE[g.value(op.outputs[0]).dtype.short],
            2: DTYPE_CODE[g.value(op.inputs[0]).dtype.short]}


def _attention(op, g, s, plan, v):
    from ..codelets.attention import STREAM_PANEL
    c = _choice(plan, s)
    states = int(c["key_splits"]) > 1 or bool(c.get("ring"))  # writes a softmax state for a merge
    return {0: _f32_bits(op.attrs.scale), 1: int(c["mode"] == "streaming"), 2: int(states), 3: STREAM_PANEL}


def _carry(op, g, s, plan, v):
    """A carrying ring step t of r: the first starts the running state, the last writes the output."""
    from ..codelets.attention import STREAM_PANEL
    r = int(_choice(plan, s).get("ring", 0))
    steps = [f"attention step {t} of {r}" for t in range(1, r + 1)]
    if s.name not in steps:
        raise Mismatch(f"step {s.step} ({s.op} {s.name}): carrying attention vertices outside the {r} steps of a ring")
    return {0: _f32_bits(op.attrs.scale), 1: 1, 2: int(s.name == steps[0]), 3: STREAM_PANEL,
            4: int(s.name == steps[-1])}


def _merge(op, g, s, plan, v):
    return {1: op.attrs.head_dim}


def _copy(op, g, s, plan, v):
    # bytes per row of the destination; a broadcast's first output row is the block's (the replay checks it)
    return {0: v.row_bytes[:, 1]} | ({} if op is not None and op.kind is OpKind.BROADCAST else {1: 0})


def _rope(op, g, s, plan, v):
    out = op.outputs[0]
    views = {out} | {o.outputs[0] for o in g.ops if o.kind is OpKind.SLICE and o.inputs[0] == out}
    att = [a for a in g.ops if a.kind is OpKind.ATTENTION and a.attrs.rope and views & set(a.inputs[:2])]
    if not att:
        raise Mismatch(f"step {s.step} ({s.op} {s.name}): RoPE vertices where no rotary attention reads {out}")
    a = att[0]
    return {1: g.value(a.inputs[1]).shape[1], 2: a.attrs.rope_prefix}


ANY = set(OpKind)
# codelet -> (the op kinds it implements, the parameter words its op and plan imply, the words that depend on
# the vertex's block and are checked by the replay against the tensor elements the vertex holds); every other
# parameter word is zero
EXPECT = {
    cl.gemm.GEMM[False].name: ({OpKind.MATMUL}, _gemm, ()),
    cl.gemm.GEMM[True].name: ({OpKind.MATMUL}, _gemm, ()),
    cl.gemm.REDUCE.name: ({OpKind.MATMUL}, _reduce, ()),
    cl.gemm.ACCUMULATE[False].name: ({OpKind.MATMUL}, _accumulate, ()),
    cl.gemm.ACCUMULATE[True].name: ({OpKind.MATMUL}, _accumulate, ()),
    cl.gemm.ACCUMULATE_OUT.name: ({OpKind.MATMUL}, _accumulate, ()),
    cl.vector.LAYERNORM.name: ({OpKind.LAYERNORM}, _layernorm, (3,)),  # the column block's index
    cl.vector.LAYERNORM_STATS.name: ({OpKind.LAYERNORM}, lambda *_: {}, ()),
    cl.vector.ADD.name: ({OpKind.ADD}, lambda *_: {}, ()),
    cl.vector.GELU.name: ({OpKind.GELU}, _gelu, ()),
    cl.vector.CAST.name: ({OpKind.CAST}, _cast, ()),
    cl.vector.COPY.name: (ANY, _copy, (1,)),  # local copies belong to any op; a broadcast is Copy vertices
    cl.vector.ROPE.name: ({OpKind.MATMUL}, _rope, (0, 3, 4, 5, 6, 7)),  # first row and column, q and k windows
    cl.vector.ROPE_UNIQUE.name: ({OpKind.MATMUL}, _rope, (0, 3, 4, 5, 6, 7)),
    cl.attention.STREAMING.name: ({OpKind.ATTENTION}, _attention, ()),
    cl.attention.MATERIALIZED.name: ({OpKind.ATTENTION}, _attention, ()),
    cl.attention.CARRY.name: ({OpKind.ATTENTION}, _carry, ()),
    cl.attention.MERGE.name: ({OpKind.ATTENTION}, _merge, (0,)),  # the last round's flag
}


def _params(s, ops, plan) -> None:
    hit = ops.get(s.op)
    for v in s.vertices:
        rule = EXPECT.get(v.codelet)
        if rule is None:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}): no parameter rule for codelet {v.codelet}")
        kinds, fn, block_cols = rule
        op, g = hit if hit is not None else (None, None)
        if op is None and v.codelet != cl.vector.COPY.name:  # only the Repeat's carry has no op of its own
            raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} vertices outside every op")
        if op is not None and op.kind not in kinds:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} does not implement a {op.kind.value} op")
        if v.codelet in (cl.attention.STREAMING.name, cl.attention.MATERIALIZED.name, cl.attention.CARRY.name):
            c = _choice(plan, s)
            want = cl.attention.CARRY if c.get("carry") else \
                cl.attention.STREAMING if c["mode"] == "streaming" else cl.attention.MATERIALIZED
            if v.codelet != want.name:
                raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} where the plan chose {want.name}")
        acc_names = {c.name for c in cl.gemm.ACCUMULATE.values()} | {cl.gemm.ACCUMULATE_OUT.name}
        if v.codelet in acc_names:
            in_place = _choice(plan, s).get("accumulate") == "out"
            want = cl.gemm.ACCUMULATE_OUT if in_place else cl.gemm.ACCUMULATE[g.value(op.inputs[0]).dtype.is_fp8]
            if v.codelet != want.name:
                raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} where the plan's rotating matmul "
                               f"{'accumulates in its output' if in_place else 'keeps an F32 accumulator'} "
                               f"({want.name})")
        if v.codelet in (cl.vector.ROPE.name, cl.vector.ROPE_UNIQUE.name):
            unique = _choice(plan, s).get("rope") == "unique"
            want = cl.vector.ROPE_UNIQUE if unique else cl.vector.ROPE
            if v.codelet != want.name:
                raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} where the plan's RoPE tables hold "
                               f"{'unique angles' if unique else 'every angle twice'} ({want.name})")
        gemms = cl.gemm.GEMM  # (the accumulating GEMMs' operand type is checked with their variant above)
        if v.codelet in (gemms[False].name, gemms[True].name) and \
                v.codelet != gemms[g.value(op.inputs[0]).dtype.is_fp8].name:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} for "
                           f"{g.value(op.inputs[0]).dtype.short} operands")
        P = cl.BY_NAME[v.codelet].params
        if v.params.ndim != 2 or v.params.shape[1] != P:
            raise Mismatch(f"step {s.step} ({s.op} {s.name}): {v.codelet} vertices carry {v.params.shape} "
                           f"parameter words, the codelet takes {P}")
        want = fn(op, g, s, plan, v)
        want |= {c: 0 for c in range(P) if c not in want and c not in block_cols}
        for col, w in want.items():
            bad = v.params[:, col] != w
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                w = int(np.broadcast_to(w, bad.shape)[k])
                raise Mismatch(f"tile {int(v.tile[k])} step {s.step} ({s.op} {s.name}) {v.codelet} vertex {k}: "
                               f"parameter {col} is {int(v.params[k, col])}, the op implies {w}")
