"""The checker's own decision space: every candidate's per-tile bytes, tables and fragments, and the groups
that say which combinations of candidates are plans. Built from model + target + recorded choices with
the checker's walk, rules and byte counts; a plan is one literal per group, a certificate is a proof that
no such selection satisfies a set of rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..ir.graph import OpKind, Role
from .exchange import fragments
from .rules import Derived, derive, matrix_of
from .tiles import block_owners, tile_bytes


@dataclass
class _Op:
    key: str
    op: object
    graph: object
    trips: int
    x: int
    c: int
    reads: list = field(default_factory=list)  # (index, kind, key, window)


@dataclass(frozen=True)
class Program:
    """The schedule as the checker reads it from the IR: ops with exchange/compute steps, last uses."""

    ops: list
    params: dict  # key -> (value, iteration count)
    ties: list  # (carried value's producer, body result's producer)
    last: dict  # op key -> last step its output is live
    consumers: dict

    @property
    def nsteps(self) -> int:
        return 2 * len(self.ops)

    @property
    def steps(self) -> list[str]:
        return [f"{o.key}:{s}" for o in self.ops for s in ("x", "c")]


def walk(g) -> Program:
    """Steps, ops, buffer last-use, params with iteration counts, carried ties: from the IR alone."""
    ops: list[_Op] = []
    params = {v.name: (v, 1) for v in g.values if v.role in (Role.PARAM, Role.CONST)}
    inputs = {v.name for v in g.values if v.role is Role.INPUT}
    env = {n: ("param", n, None) for n in params} | {n: ("input", n, None) for n in inputs}
    ties = []
    body = [None]

    def go(graph, scope, trips, env):
        for op in graph.ops:
            if op.kind is OpKind.REPEAT:
                a = op.attrs
                nc, ns = len(a.carried), len(a.sequences)
                benv = {bi: env[o] for (bi, _), o in zip(a.carried, op.inputs[:nc])}
                for bi, o in zip(a.sequences, op.inputs[nc:nc + ns]):
                    params[o] = (a.body.value(bi), a.count)
                    benv[bi] = ("param", o, None)
                benv |= {bi: env[o] for bi, o in zip(a.invariants, op.inputs[nc + ns:])}
                start = 2 * len(ops)
                go(a.body, scope + op.name + "/", trips * a.count, benv)
                body[0] = (start, 2 * len(ops) - 1)
                for (bi, bo), o in zip(a.carried, op.outputs):
                    env[o] = benv[bo]
                    ties.append((benv[bi][1], benv[bo][1]))
            elif op.kind is OpKind.SLICE:
                k, key, w = env[op.inputs[0]]
                base = w[0] if w else 0
                env[op.outputs[0]] = (k, key, (base + op.attrs.start, base + op.attrs.stop))
            elif op.kind is OpKind.RESHAPE:
                env[op.outputs[0]] = env[op.inputs[0]]
            else:
                o = _Op(scope + op.name, op, graph, trips, 2 * len(ops), 2 * len(ops) + 1)
                o.reads = [(i, *env[n]) for i, n in enumerate(op.inputs)]
                env[op.outputs[0]] = ("act", o.key, None)
                ops.append(o)

    go(g, "", 1, env)
    nsteps = 2 * len(ops)
    last = {o.key: o.c for o in ops}
    consumers: dict[str, list[_Op]] = {o.key: [] for o in ops}
    for o in ops:
        for _, kind, key, _ in o.reads:
            if kind == "act":
                last[key] = max(last[key], o.c)
                consumers[key].append(o)
    for outer, res in ties:
        last[res] = max(last[res], body[0][1])
    for k, cs in consumers.items():
        if not cs:
            last[k] = nsteps - 1
    return Program(ops, params, ties, last, consumers)


@dataclass
class Space:
    """Literals, what each puts on every tile, and the structure a selection must have.

    Literals: ("impl", op, i); ("pair", op, input, a, b, mode) for producer layout a and consumer layout b
    of an edge; ("home", param). Exactly one literal of every group is true; a home is true when any
    implementation that stages its parameter is (`implies`); carried values keep one layout (`conflicts`).
    """

    prog: Program
    tiles: int
    groups: dict = field(default_factory=dict)  # group name -> [literal]
    implies: list = field(default_factory=list)  # (literal, home literal)
    conflicts: list = field(default_factory=list)  # (literal, literal) never both true
    lits: list = field(default_factory=list)
    mem: list = field(default_factory=list)  # per data term: literal index, "std"/"il", first, last, what
    vecs: list = field(default_factory=list)
    xlit: list = field(default_factory=list)  # per exchange term: literal index
    tables: list = field(default_factory=list)
    frags: list = field(default_factory=list)
    derived: dict = field(default_factory=dict)  # (op, i) -> Derived
    ends: dict = field(default_factory=dict)  # edge group -> (producer, consumer, input, src layout of each
    #                                            producer candidate, dst layout of each consumer candidate)
    index: dict = field(default_factory=dict)  # literal -> position in lits

    def lit(self, key: tuple) -> int:
        if key not in self.index:
            self.index[key] = len(self.lits)
            self.lits.append(key)
        return self.index[key]

    def add(self, key: tuple, lay_or_vec, first: int, last: int, what: str, times: int = 1, mem=None) -> None:
        if isinstance(lay_or_vec, dict):
            vec, mem = tile_bytes(lay_or_vec, self.tiles) * times, lay_or_vec["mem"]
        else:
            vec = lay_or_vec
        self.mem.append((self.lit(key), mem, first, last, what))
        self.vecs.append(vec)

    def moved(self, key: tuple, fs: np.ndarray, fr: np.ndarray, send_b: int, recv_b: int, patch_b: int = 0) -> None:
        tab = send_b * fs + recv_b * fr + patch_b * (fs > 0)
        if tab.any() or (fs + fr).any():
            self.xlit.append(self.lit(key))
            self.tables.append(tab.astype(np.int64))
            self.frags.append((fs + fr).astype(np.int64))

    @cached_property
    def arrays(self):
        """(data [terms, tiles], literal per data term, first, last, is_interleaved, tables [x, tiles],
        fragments [x, tiles], literal per exchange term), built once the space is complete."""
        T = self.tiles
        D = np.stack(self.vecs) if self.vecs else np.zeros((0, T), np.int64)
        meta = np.array([(li, f, la, m == "il") for li, m, f, la, _ in self.mem], np.int64).reshape(-1, 4)
        X = np.stack(self.tables) if self.tables else np.zeros((0, T), np.int64)
        F = np.stack(self.frags) if self.frags else np.zeros((0, T), np.int64)
        return (D, meta[:, 0], meta[:, 1], meta[:, 2], meta[:, 3].astype(bool), X, F, np.array(self.xlit, np.int64))


def build_space(g, target, batch: int, candidates: dict[str, list[dict]], relays: bool) -> Space:
    """Every candidate of every op, derived by the checker's rules; raises ValueError naming a bad one."""
    prog = walk(g)
    T = target.tiles
    sp = Space(prog, T)
    index = {o.key: o for o in prog.ops}
    missing = [o.key for o in prog.ops if o.key not in candidates]
    extra = sorted(set(candidates) - set(index))
    if missing or extra:
        raise ValueError(f"choices do not match the graph's ops (missing {missing[:3]}, unknown {extra[:3]})")
    nsteps = prog.nsteps
    sb, rb, pb = target.send_fragment_bytes, target.recv_fragment_bytes, target.patch_word_bytes
    homes: dict[str, list] = {}
    for o in prog.ops:
        for i, choice in enumerate(candidates[o.key]):
            try:
                d = derive(o, choice, g, prog.params, prog.consumers, index, target, batch)
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"choice {i} for {o.key}: {e}") from None
            sp.derived[(o.key, i)] = d
            lit = ("impl", o.key, i)
            sp.lit(lit)
            _internal(sp, lit, d, choice, T, sb, rb)
            sp.add(lit, d.out, o.x if d.out_from_exchange else o.c, prog.last[o.key], f"{o.key} (output)")
            if d.scratch is not None:
                sp.add(lit, d.scratch, o.c, o.c, f"{o.key} (scratch)", mem="std")
            if d.rope is not None:
                sp.add(lit, d.rope, 0, nsteps - 1, f"{o.key} (RoPE tables)")
            for key, lay, mode in d.params:
                count = prog.params[key][1]
                if mode == "resident":
                    sp.add(lit, lay, 0, nsteps - 1, f"{key} (resident x{count})", times=count)
                else:
                    sp.add(lit, lay, o.x, o.c, f"{key} (staged)")
                    homes.setdefault(key, []).append(lit)
                    sp.moved(lit, *fragments(home_layout(key, prog.params, T), None, lay, T), sb, rb,
                             pb if count > 1 else 0)
            for idx, kind, key, _ in o.reads:
                need = d.needs.get(idx)
                if kind == "input" and need is not None:
                    sp.add(lit, need, 0, o.c, f"{key} (host input)")
        sp.groups[o.key] = [("impl", o.key, i) for i in range(len(candidates[o.key]))]
    for key, users in homes.items():
        h = ("home", key)
        sp.add(h, home_layout(key, prog.params, T), 0, nsteps - 1, f"{key} (home x{prog.params[key][1]})",
               times=prog.params[key][1])
        sp.implies += [(u, h) for u in users]
    _edges(sp, prog, candidates, relays, sb, rb)
    for outer, res in prog.ties:
        for i in range(len(candidates[outer])):
            for j in range(len(candidates[res])):
                if sp.derived[(outer, i)].out != sp.derived[(res, j)].out:
                    sp.conflicts.append((("impl", outer, i), ("impl", res, j)))
    return sp


def home_layout(key: str, params: dict, T: int) -> dict:
    v, _ = params[key]
    r, c = matrix_of(v.shape)
    return {"rows": r, "cols": c, "elem": v.dtype.itemsize, "pr": T, "pc": 1, "replicas": 1,
            "start": sum(key.encode()) * 37 % T, "row_stride": 0, "col_stride": 1, "rep_stride": 0,
            "row_groups": 1, "flat": True, "mem": "std", "row_align": 1, "col_align": 1}


def relay_of(need: dict, T: int) -> dict:
    return dict(need, replicas=1, rep_stride=0, row_stride=0, col_stride=1, start=(need["start"] + T // 2) % T,
                mem="std")


def _edges(sp: Space, prog: Program, candidates, relays: bool, sb: int, rb: int) -> None:
    """Every activation read between ops: producer layouts x consumer layouts x transport modes."""
    T = sp.tiles
    for o in prog.ops:
        for idx, kind, key, window in o.reads:
            if kind != "act":
                continue
            needs = [sp.derived[(o.key, j)].needs.get(idx) for j in range(len(candidates[o.key]))]
            if all(n is None for n in needs):
                continue
            if any(n is None for n in needs):
                raise ValueError(f"{o.key} input {idx}: some candidates write it in place, others do not")
            srcs, dsts = [], []
            for i in range(len(candidates[key])):
                out = sp.derived[(key, i)].out
                if out not in srcs:
                    srcs.append(out)
            for n in needs:
                if n not in dsts:
                    dsts.append(n)
            name = f"{key} -> {o.key}[{idx}]"
            group = []
            for a, src in enumerate(srcs):
                for b, dst in enumerate(dsts):
                    if window is None and src == dst:
                        group.append(("pair", o.key, idx, a, b, "none"))
                        continue
                    for mode in ["direct"] + (["relay"] if relays and dst["replicas"] > 1 else []):
                        lit = ("pair", o.key, idx, a, b, mode)
                        group.append(lit)
                        sp.add(lit, dst, o.x, o.c, f"{name} (exchanged copy)")
                        if mode == "direct":
                            sp.moved(lit, *fragments(src, window, dst, T), sb, rb)
                        else:
                            relay = relay_of(dst, T)
                            sp.add(lit, relay, o.x, o.x, f"{name} (relay buffer)")
                            fs1, fr1 = fragments(src, window, relay, T)
                            fs2, fr2 = fragments(relay, None, dst, T)
                            sp.moved(lit, fs1 + fs2, fr1 + fr2, sb, rb)
            for g in group:
                sp.lit(g)
            sp.groups[name] = group
            sp.ends[name] = (key, o.key, idx, [srcs.index(sp.derived[(key, i)].out) for i in range(len(candidates[key]))],
                             [dsts.index(n) for n in needs])


def _internal(sp: Space, lit, d: Derived, choice: dict, T: int, sb: int, rb: int) -> None:
    """Exchanges inside one op: partial-sum reduction, cross-tile statistics, concat's direct writes."""
    if choice.get("kind") == "matmul" and choice["pk"] > 1:
        out, pk = d.out, choice["pk"]
        rs = out["row_stride"] or out["pc"]
        i = np.arange(out["pr"])[:, None] * rs
        j = np.arange(out["pc"])[None, :] * out["col_stride"]
        senders = np.zeros(T, np.int64)
        for r in range(1, pk):
            np.add.at(senders, ((out["start"] + r + i + j) % T).ravel(), 1)
        sp.moved(lit, senders, block_owners(out, T) * (pk - 1), sb, rb)
    elif choice.get("statistics") == "cross-tile":
        own = block_owners(d.out, T)
        sp.moved(lit, own, own * (d.out["pc"] - 1), sb, rb)
    elif choice.get("kind") == "concat":
        own = block_owners(d.out, T)
        sp.moved(lit, own, own * 2, sb, rb)
