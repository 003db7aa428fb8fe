"""Replay a package symbolically against the model: the host writes every parameter, constant and input
element's tag where the bindings say; exchanges and local copies move tags; every compute set's vertices
are checked and write tags by the codelets' meaning (semantics.py); the Repeat runs its first two
iterations, then its last (the body's addresses are linear in the iteration, so the second and the last
cover every stride); finally the output binding must hold exactly the model's output elements."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import numpy as np

from ...ir.graph import OpKind
from ..space import walk
from .semantics import RULES, ReplayError
from .tags import Memory, pack, regenerate, unpack


class Tensors:
    """Every tensor a tag may name: activations, inputs, parameters and each op's partial sums, softmax
    states and statistics; with the column count of its [rows, cols] matrix."""

    def __init__(self):
        self.names: list[str] = ["scratch"]
        self.cols: list[int] = [1]
        self.index: dict[str, int] = {"scratch": 0}

    def add(self, name: str, cols: int) -> int:
        if name not in self.index:
            self.index[name] = len(self.names)
            self.names.append(name)
            self.cols.append(cols)
        return self.index[name]

    def name(self, tid: int) -> str:
        return self.names[tid] if 0 <= tid < len(self.names) else f"#{tid}"


def _cols(shape) -> int:
    return shape[-1] if shape else 1


@dataclass
class OpInfo:
    key: str
    kind: str
    o: object  # the checker walk's op
    out: int
    n: int  # output columns
    gen: int = 0
    partial: int = 0
    state: int = 0
    stats: int = 0
    k: int = 0
    bias: bool = False
    out_esize: int = 2
    heads: int = 0
    head_dim: int = 0
    sq: int = 0
    sk: int = 0
    rope: bool = False
    rope_tables: tuple = ()
    rope_dim: int = 0
    inputs: list = field(default_factory=list)  # per input: (tensor, gen, column offset, cols, esize, rows)
    intervals: dict = field(default_factory=dict)

    def input(self, i: int):
        return self.inputs[i][:4]

    def esize(self, i: int) -> int:
        return self.inputs[i][4]

    def in_rows(self, i: int) -> int:
        return self.inputs[i][5]

    def interval(self, kind: str, lo, hi) -> np.ndarray:
        """Codes (1..255) of [lo, hi) intervals of kind k (k-slices), s (key splits) or c (columns)."""
        table = self.intervals.setdefault(kind, [None, None])  # code 0: none; 1: RoPE flag
        out = []
        for a, b in zip(np.atleast_1d(lo).tolist(), np.atleast_1d(hi).tolist()):
            if (a, b) not in table:
                table.append((a, b))
                if len(table) > 255:
                    raise ReplayError(f"{self.key}: more than 253 distinct {kind} intervals")
            out.append(table.index((a, b)))
        return np.asarray(out, np.int64)

    def bounds(self, kind: str, codes) -> tuple[np.ndarray, np.ndarray]:
        table = self.intervals.get(kind, [None, None])
        c = np.asarray(codes)
        if ((c < 2) | (c >= len(table))).any():
            raise ReplayError(f"{self.key}: an interval code no vertex of this op wrote")
        lo = np.array([table[x][0] for x in c.ravel()], np.int64).reshape(c.shape)
        hi = np.array([table[x][1] for x in c.ravel()], np.int64).reshape(c.shape)
        return lo, hi


class Group:
    """Equally shaped vertices of one codelet in one compute set, as a rule sees them."""

    def __init__(self, mem: Memory, v, sel: np.ndarray, fields: list[str], op: OpInfo, tensors: Tensors, where: str,
                 iteration: int):
        self.mem, self.v, self.sel, self.fields, self.op, self.tensors = mem, v, sel, fields, op, tensors
        self.where, self.iteration = where, iteration
        self.params = v.params[sel]
        self.tile = v.tile[sel]

    def _f(self, field: str) -> int:
        return self.fields.index(field)

    def used(self, field: str) -> np.ndarray:
        return self.v.addr[self.sel, self._f(field)] >= 0

    def rows(self, field: str) -> int:
        return int(self.v.rows[self.sel[0], self._f(field)])

    def nbytes(self, field: str) -> int:
        return int(self.v.row_bytes[self.sel[0], self._f(field)])

    def _addr(self, f: int) -> np.ndarray:
        return self.v.addr[self.sel, f] + self.iteration * self.v.stride[self.sel, f]

    def _slabs(self, field: str, rows: int | None = None, words: int | None = None):
        """(first word, rows, words per row, pitch in words) of every vertex's slab of `field`, each checked to be
        bound, word-aligned and inside its tile's memory."""
        f = self._f(field)
        if not self.used(field).all():
            self.fail(int(np.flatnonzero(~self.used(field))[0]), field, "is not bound")
        a = self._addr(f)
        pitch = self.v.pitch[self.sel, f]
        if ((a % 4) != 0).any() or ((pitch % 4) != 0).any():
            self.fail(int(np.flatnonzero((a % 4 != 0) | (pitch % 4 != 0))[0]), field, "is not word-aligned")
        R = self.rows(field) if rows is None else rows
        W = -(-self.nbytes(field) // 4) if words is None else words
        start, p, inside = self.mem.slabs(self.tile, a, R, W, pitch)
        if not inside.all():
            self.fail(int(np.flatnonzero(~inside)[0]), field, "reaches outside the tile's memory")
        return start, R, W, p

    def read(self, field: str, rows: int | None = None) -> np.ndarray:
        return self.mem.gather(*self._slabs(field, rows))

    def write(self, field: str, tags: np.ndarray) -> None:
        start, R, W, p = self._slabs(field)
        if tags.shape != (len(start), R, W):
            self.fail(0, field, f"holds {(R, W)} words per vertex, the codelet writes {tags.shape[1:]}")
        self.mem.scatter(start, p, tags)

    def read_words(self, field: str, n: int) -> np.ndarray:
        return self.mem.gather(*self._slabs(field, 1, n)).reshape(len(self.tile), n)

    def write_words(self, field: str, tags: np.ndarray) -> None:
        start, _, W, p = self._slabs(field, 1, tags.shape[1])
        self.mem.scatter(start, p, tags.reshape(len(start), 1, W))

    def scratch(self, field: str) -> None:
        if self.used(field).any():
            start, R, W, p = self._slabs(field)
            self.mem.scatter(start, p, np.full((len(start), R, W), pack(0, 0, 0, 0), np.uint64))

    def require(self, ok, field: str, why) -> None:
        ok = np.asarray(ok)
        flat = ok.reshape(ok.shape[0], -1).all(1) if ok.ndim else np.full(len(self.tile), bool(ok))
        if not flat.all():
            v = int(np.flatnonzero(~flat)[0])
            self.fail(v, field, why(v))

    def fail(self, v: int, field: str, problem: str):
        raise ReplayError(f"tile {int(self.tile[v])} {self.where} vertex {int(self.sel[v])}"
                          + (f" iteration {self.iteration}" if self.iteration else "") + f": field {field} {problem}")

    def describe(self, tags: np.ndarray, want: str) -> str:
        d = unpack(tags.ravel())
        bad = np.flatnonzero(~d.valid | (d.tensor != d.tensor[0]))
        k = int(bad[0]) if len(bad) else 0
        if not d.valid[k]:
            return f"reads bytes never written (expected {want})"
        t = int(d.tensor[k])
        cols = self.tensors.cols[t]
        return (f"reads {self.tensors.name(t)} iteration {int(d.gen[k])} element ({int(d.elem[k]) // cols}, "
                f"{int(d.elem[k]) % cols}), expected {want}")


class Replay:
    def __init__(self, prog, manifest: dict, graph):
        self.prog, self.m, self.graph = prog, manifest, graph
        self.walk = walk(graph)
        self.tensors = Tensors()
        t = manifest["target"]
        self.mem = Memory(prog.tiles, t["base"], t["loadable_end"])
        self.count = prog.count
        self.ops = {o.key: o for o in self.walk.ops}
        self.body_ops = {o.key for o in self.walk.ops if o.trips > 1}
        self.ties = dict(self.walk.ties)  # outer -> body result
        for key, (v, _) in self.walk.params.items():
            self.tensors.add(key, _cols(v.shape))
        for v in graph.values:
            if v.role.value == "input":
                self.tensors.add(v.name, _cols(v.shape))
        for o in self.walk.ops:
            self.tensors.add(o.key, _cols(o.graph.value(o.op.outputs[0]).shape))
        self.infos: dict[tuple[str, int], OpInfo] = {}
        self._intervals: dict[str, dict] = {}

    def gen_of(self, key: str, consumer_in_body: bool, it: int) -> tuple[str, int]:
        """The tensor and iteration an activation read means at iteration `it`."""
        if consumer_in_body and key in self.ties and it >= 1:
            return self.ties[key], it - 1
        if key in self.body_ops:
            return key, it if consumer_in_body else self.count - 1
        return key, 0

    def info(self, key: str, it: int) -> OpInfo:
        if (key, it) in self.infos:
            return self.infos[(key, it)]
        if key not in self.ops:
            raise ReplayError(f"compute set of {key!r}: the model has no such op")
        o = self.ops[key]
        tz = self.tensors
        in_body = key in self.body_ops
        outv = o.graph.value(o.op.outputs[0])
        n = _cols(outv.shape)
        inf = OpInfo(key, o.op.kind.value, o, tz.index[key], n, it if in_body else 0,
                     out_esize=outv.dtype.itemsize, intervals=self._intervals.setdefault(key, {}))
        for i, kind, ref, window in o.reads:
            v = o.graph.value(o.op.inputs[i])
            rows = prod(v.shape[:-1]) if len(v.shape) > 1 else 1
            cat = None
            if kind == "param":
                gen = it if self.walk.params[ref][1] > 1 else 0
                tid = tz.index[ref]
            elif kind == "input":
                gen, tid = 0, tz.index[ref]
            else:
                root, gen = self.gen_of(ref, in_body, it)
                tid = tz.index[root]
                cat = self.concat(root, in_body, it)
            inf.inputs.append((tid, gen, window[0] if window else 0, tz.cols[tid], v.dtype.itemsize, rows, cat))
        k = o.op.kind
        if k is OpKind.MATMUL:
            xv = o.graph.value(o.op.inputs[0])
            inf.k, inf.bias = _cols(xv.shape), len(o.op.inputs) > 2
            inf.partial = tz.add(f"{key} (partial sums)", n)
            for c in self.walk.consumers.get(key, []):
                if c.op.kind is OpKind.ATTENTION and c.op.attrs.rope:
                    inf.rope_tables = (tz.index[c.reads[3][2]], tz.index[c.reads[4][2]])
                    inf.rope_dim = c.op.attrs.head_dim
        if k is OpKind.ATTENTION:
            a = o.op.attrs
            inf.heads, inf.head_dim, inf.rope = a.heads, a.head_dim, a.rope
            inf.sq = o.graph.value(o.op.inputs[0]).shape[1]
            inf.sk = o.graph.value(o.op.inputs[1]).shape[1]
            inf.state = tz.add(f"{key} (softmax state)", a.heads * (a.head_dim + 2))
        if k is OpKind.LAYERNORM:
            inf.stats = tz.add(f"{key} (statistics)", 2)
        self.infos[(key, it)] = inf
        return inf

    def concat(self, key: str, in_body: bool, it: int):
        """A concatenation on the token axis owns no computation: its inputs' rows are its rows. Returns
        (total tokens, [(tensor, iteration, tokens, first token)]) or None."""
        o = self.ops.get(key)
        if o is None or o.op.kind is not OpKind.CONCAT:
            return None
        parts, off = [], 0
        for _, kind, ref, _ in o.reads:
            root, gen = self.gen_of(ref, key in self.body_ops, it)
            n = o.graph.value(o.op.inputs[len(parts)]).shape[1]
            parts.append((self.tensors.index[root], gen, n, off))
            off += n
        return off, parts

    # --- host -------------------------------------------------------------------------------------

    def bind(self, b, gens: range, read: bool = False):
        s = b.slabs
        esize = {"f32": 4, "f16": 2, "f143": 1, "f152": 1}[b.dtype]
        grain = max(1, 4 // esize)
        nw = -(-s.n * esize // 4)
        runs = np.repeat(np.arange(len(s.e0)), s.rows)
        k = np.arange(len(runs)) - np.repeat(np.cumsum(s.rows) - s.rows, s.rows)
        words = nw[runs]
        wr = np.repeat(np.arange(len(runs)), words)
        q = np.arange(len(wr)) - np.repeat(np.cumsum(words) - words, words)
        elem = (s.e0[runs] + k * s.estride[runs])[wr] + q * grain
        off = (k * s.pitch[runs])[wr] + 4 * q
        tid = self.tensors.index.get(b.name)
        rw = runs[wr]
        replicas = []  # (tile, address at iteration 0, stride, elements) of each replica's words
        for r in range(s.tile.shape[1] if not read else 1):
            tile = s.tile[rw, r]
            ok = tile >= 0
            sel = slice(None) if ok.all() else np.flatnonzero(ok)
            replicas.append((tile[sel], s.addr[rw, r][sel] + off[sel], s.stride[rw, r][sel], elem[sel]))
        if read:
            tile, addr, _, e = replicas[0]
            return self.mem.word_index(tile, addr), e
        for it in gens:
            for tile, addr, stride, e in replicas:
                self.mem.tags[self.mem.word_index(tile, addr + it * stride)] = pack(tid, it, 0, e)

    # --- steps ------------------------------------------------------------------------------------

    def copy(self, v, it: int, where: str):
        """Local copies and the carry: bytes move, whatever they hold (read all, then write)."""
        n = -(-v.row_bytes[:, 0] // 4)
        bad = self.mem.move(v.tile, v.addr[:, 0] + it * v.stride[:, 0], n, v.tile, v.addr[:, 1] + it * v.stride[:, 1])
        if bad >= 0:
            raise ReplayError(f"{where}: tile {int(v.tile[bad])} copy {bad} reaches outside the tile's memory")

    def exchange(self, s, it: int, where: str):
        """Every run's words, read at the iteration's source address, land on each of its destinations."""
        bad = self.mem.move(s.src, s.src_addr + it * s.src_stride, s.nbytes // 4, s.dst, s.dst_addr)
        if bad >= 0:
            raise ReplayError(f"{where}: run {bad} from tile {int(s.src[bad])} reaches outside a tile's memory")

    def compute(self, cs, it: int, where: str):
        cat = {c["name"]: c["fields"] for c in self.m["codelets"]}
        for v in cs.vertices:
            # a Copy is the broadcast op's own computation only in its compute set; local copies of its operands
            # (and of any op's) move bytes whatever they hold
            if v.codelet == "Copy" and (cs.op not in self.ops or self.ops[cs.op].op.kind is not OpKind.BROADCAST
                                        or cs.name != OpKind.BROADCAST.value):
                self.copy(v, it, where)
                continue
            rule = RULES.get(v.codelet)
            if rule is None:
                raise ReplayError(f"{where}: codelet {v.codelet} has no meaning the checker knows")
            info = self.info(cs.op, it)
            fields = cat[v.codelet]
            key = np.concatenate([v.rows, v.row_bytes, (v.addr >= 0)], 1)
            _, inv = np.unique(key, axis=0, return_inverse=True)
            for gi in range(int(inv.max()) + 1 if len(inv) else 0):
                sel = np.flatnonzero(np.asarray(inv).ravel() == gi)
                rule(Group(self.mem, v, sel, fields, info, self.tensors, where, it))

    def run(self) -> dict:
        prog = self.prog
        for b in prog.bindings:
            if b.role in ("param", "const"):
                self.bind(b, range(b.count))
            elif b.role == "input":
                self.bind(b, range(1))
        sec = {"prologue": [], "body": [], "epilogue": []}
        for i, s in enumerate(prog.steps):
            sec[s.section.value].append((i, s))
        iters = list(range(self.count)) if self.count <= 3 else [0, 1, self.count - 1]
        checked = 0

        def do(steps, it):
            nonlocal checked
            for i, s in steps:
                where = f"step {i} ({s.op} {s.name})"
                if s.kind == "exchange":
                    self.exchange(s, it if s.section.value == "body" else 0, where)
                else:
                    self.compute(s, it if s.section.value == "body" else 0, where)
                    checked += sum(len(v) for v in s.vertices)

        do(sec["prologue"], 0)
        prev = None
        for it in iters:
            if prev is not None:
                if it != prev + 1:
                    self.relabel(prev, it - 1)
                if prog.carry is not None:
                    for v in prog.carry.vertices:
                        self.copy(v, 0, "carry")
            do(sec["body"], it)
            prev = it
        do(sec["epilogue"], 0)
        return {"vertices_checked": checked, "iterations_replayed": iters, **self.output()}

    def relabel(self, old: int, new: int):
        """Skip iterations: what iteration `old` produced in the body stands for what `new` would have."""
        body = np.array(sorted(self.tensors.index[k] for k in self.body_ops)
                        + [self.tensors.index[n] for n in self.tensors.names if n.split(" (")[0] in self.body_ops
                           and " (" in n], np.int64)
        regenerate(self.mem.tags, old, new, body)

    def output(self) -> dict:
        outs = [b for b in self.prog.bindings if b.role == "output"]
        if len(outs) != len(self.graph.outputs):
            raise ReplayError(f"the package binds {len(outs)} outputs, the model has {len(self.graph.outputs)}")
        for b in outs:
            root = _root(self.graph, b.name, self.ties)
            key, gen = self.gen_of(root, False, 0)
            idx, elem = self.bind(b, range(1), read=True)
            d = unpack(self.mem.tags[idx])
            ok = d.holds(self.tensors.index[key], gen) & (d.elem == elem)
            if not ok.all():
                k = int(np.flatnonzero(~ok)[0])
                raise ReplayError(f"output {b.name}: word {k} holds {self.tensors.name(int(d.tensor[k]))} element "
                                  f"{int(d.elem[k])}{'' if d.valid[k] else ' (never written)'}, expected {key} "
                                  f"element {int(elem[k])}")
        return {"outputs": [b.name for b in outs]}


def _root(graph, name: str, ties: dict) -> str:
    """The op whose buffer a graph output reads (through reshapes; a Repeat's output is its body result)."""
    for op in graph.ops:
        if name in op.outputs:
            if op.kind in (OpKind.RESHAPE, OpKind.SLICE):
                return _root(graph, op.inputs[0], ties)
            if op.kind is OpKind.REPEAT:
                raise ReplayError(f"output {name} is a Repeat result: not a buffer the checker can name")
            return op.name
    raise ReplayError(f"graph output {name} is produced by no op")


def replay(prog, manifest: dict, graph) -> dict:
    return Replay(prog, manifest, graph).run()
