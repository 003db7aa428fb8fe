"""The checker's own decision space: every candidate's per-tile bytes, tables and fragments, and the groups
that say which combinations of candidates are plans. Built from model + target + recorded choices with
the checker's walk, rules and byte counts; a plan is one literal per group, a certificate is a proof that
no such selection satisfies a set of rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..codelets import vector
from ..ir.graph import OpKind, Role
from .exchange import Counts, grid_transfer, stream_transfer
from .geometry import L, block_bytes, per_block, tile_bytes
from .rules import Ctx, derive
from .validate import Invalid, canonical


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
    of an edge. Exactly one literal of every group is true; carried values keep one layout (`conflicts`).
    """

    prog: Program
    tiles: int
    whole_rows: bool = False  # exchanges move full-width cells as whole stored rows (the shaped catalogue)
    groups: dict = field(default_factory=dict)  # group name -> [literal]
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
    xends: list = field(default_factory=list)  # (literal, Counts, `what` sent from, `what` received into)
    apart: list = field(default_factory=list)  # (literal, `what`, `what`) never in one memory element

    def lit(self, key: tuple) -> int:
        if key not in self.index:
            self.index[key] = len(self.lits)
            self.lits.append(key)
        return self.index[key]

    def add(self, key: tuple, lay: dict, first: int, last: int, what: str, times: int = 1) -> None:
        mem = "std" if lay["mem"] == "any" else lay["mem"]
        self.mem.append((self.lit(key), mem, first, last, what))
        self.vecs.append(tile_bytes(dict(lay, mem=mem), self.tiles, times))

    def moved(self, key: tuple, counts: list[Counts], target, ends, patched: bool = False) -> None:
        """Exchanges of literal `key`; `ends[i]`: the buffers transfer i sends from and receives into."""
        self.xends += [(key, c, s, d) for c, (s, d) in zip(counts, ends)]
        tab = sum(c.table_bytes(target, patched) for c in counts)
        frg = sum(c.send_pieces + c.recv_pieces for c in counts)
        if np.any(tab) or np.any(frg):
            self.xlit.append(self.lit(key))
            self.tables.append(np.asarray(tab, np.int64))
            self.frags.append(np.asarray(frg, np.int64))

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


def home_of(key: str, staged: dict, T: int, home: tuple = ("spread", 1)) -> dict:
    """A staged parameter's home, starting on a tile spread by name: "spread", the staged layout's blocks (as
    stored) end to end split over all tiles; "blocks", one replica of the staged layout in standard memory,
    its blocks (split in `chunks` columns) on consecutive tiles."""
    start = sum(key.encode()) * 37 % T
    kind, chunks = home
    if kind == "spread":
        return canonical(L(1, int(block_bytes(staged).sum()), 1, pr=T, start=start, flat=True))
    pc = staged["pc"] * chunks
    return canonical(dict(staged, pc=pc, replicas=1, start=start, row_stride=pc, col_stride=1, rep_stride=0,
                          group_stride=0, mem="std"))


def relay_of(need: dict, T: int) -> dict:
    return canonical(dict(need, replicas=1, rep_stride=0, row_stride=0, group_stride=0, col_stride=1,
                          start=(need["start"] + T // 2) % T, mem="std", row_align=1, col_align=1))


def accepts(need: dict, src: dict) -> bool:
    """The consumer reads the producer's buffer itself: same layout (either memory class for "any")."""
    return need == src or (need["mem"] == "any" and dict(src, mem="any") == need)


def build_space(g, target, batch: int, candidates: dict[str, list[dict]], relays: bool, where: str,
                whole_rows: bool = False, compact: bool = False, steps=None) -> Space:
    """Every candidate of every op, derived by the checker's rules; raises Invalid naming a bad record
    (`where`: how the records are addressed, e.g. "plan.json: choices"). `whole_rows`: the shaped catalogue's
    exchanges, which move a cell spanning both blocks' stored width as whole rows, padding and all. `compact`:
    the compact catalogue's (in-place accumulation, rotating matmuls feeding rotary attention); `steps`: the
    most rotation steps the catalogue reserved (codelets.Steps; None: the rotating catalogue's)."""
    prog = walk(g)
    T = target.tiles
    sp = Space(prog, T, whole_rows=whole_rows)
    index = {o.key: o for o in prog.ops}
    missing = [o.key for o in prog.ops if o.key not in candidates]
    extra = sorted(set(candidates) - set(index))
    if missing or extra:
        raise Invalid(f"{where}: the ops do not match the model's (missing {missing[:3]}, unknown {extra[:3]})")
    cx = Ctx(g, prog, index, target, batch, compact, steps)
    nsteps = prog.nsteps
    carried = {res for _, res in prog.ties}
    for o in prog.ops:
        for i, choice in enumerate(candidates[o.key]):
            path = f"{where}.{o.key}" + (f"[{i}]" if len(candidates[o.key]) > 1 or where.endswith("candidates") else "")
            d = derive(cx, o, choice, path)
            _compare_output(o, choice, d, path)
            sp.derived[(o.key, i)] = d
            lit = ("impl", o.key, i)
            sp.lit(lit)
            sp.add(lit, d.out, o.x if d.out_from_exchange else o.c, prog.last[o.key], f"{o.key} (output)")
            span = {"compute": (o.c, o.c), "operand": (o.x, o.c), "program": (0, nsteps - 1)}
            for role, lay, life in d.bufs:
                sp.add(lit, lay, *span[life], f"{o.key} ({role})")
            if o.key in carried:  # between iterations one Copy vertex per block carries the result over
                sp.add(lit, per_block(d.out, vector.COPY.descriptor_bytes(target)), 0, nsteps - 1,
                       f"{o.key} (carry descriptors)")
            for counts in d.internal:
                src, dst = d.internal_ends
                sp.moved(lit, [counts], target, [(f"{o.key} ({src})", f"{o.key} ({dst})")])
            for moves in d.rounds:
                sp.moved(lit, [c for c, _, _ in moves], target, [(s, t) for _, s, t in moves])
            for a, b in d.apart:
                sp.apart.append((lit, a if a in ("x", "out") else f"{o.key} ({a})", b if b in ("x", "out") else
                                 f"{o.key} ({b})"))
            for key, lay, mode, where_home in d.params:
                count = prog.params[key][1]
                if mode == "resident":
                    sp.add(lit, lay, 0, nsteps - 1, f"{key} (resident x{count})", times=count)
                else:
                    home = home_of(key, lay, T, where_home)
                    sp.add(lit, home, 0, nsteps - 1, f"{key} (home x{count})", times=count)
                    sp.add(lit, lay, o.x, o.c, f"{key} (staged)")
                    move = stream_transfer(home, lay, T, target) if where_home[0] == "spread" else \
                        grid_transfer(home, None, lay, T, target, whole_rows=True)
                    sp.moved(lit, [move], target, [(f"{key} (home x{count})", f"{key} (staged)")], patched=count > 1)
            for idx, kind, key, _ in o.reads:
                need = d.needs.get(idx)
                if kind == "input" and need is not None:
                    sp.add(lit, need, 0, o.c, f"{key} (host input)")
        sp.groups[o.key] = [("impl", o.key, i) for i in range(len(candidates[o.key]))]
    _edges(sp, prog, candidates, relays, target)
    for outer, res in prog.ties:
        for i in range(len(candidates[outer])):
            for j in range(len(candidates[res])):
                if sp.derived[(outer, i)].out != sp.derived[(res, j)].out:
                    sp.conflicts.append((("impl", outer, i), ("impl", res, j)))
    return sp


def _compare_output(o, choice: dict, d, path: str) -> None:
    """A recorded output layout must be the derived one (element-wise outputs were read from it)."""
    rec = choice.get("output") if isinstance(choice, dict) else None
    if not isinstance(rec, dict):
        raise Invalid(f"{path}.output: missing")
    keys = set(d.out)
    if set(rec) != keys:
        raise Invalid(f"{path}.output: fields {sorted(set(rec) ^ keys)} are not those of a layout")
    try:
        rec = canonical(rec)
    except (TypeError, KeyError, ZeroDivisionError):
        raise Invalid(f"{path}.output: not a layout") from None
    for k in sorted(keys):
        if rec[k] != d.out[k]:
            raise Invalid(f"{path}.output.{k}: {rec[k]!r} disagrees with the layout {o.op.kind.value} derives "
                          f"({d.out[k]!r})")


def _edges(sp: Space, prog: Program, candidates, relays: bool, target) -> None:
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
                raise Invalid(f"{o.key} input {idx}: some candidates write it in place, others do not")
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
                    if isinstance(dst, tuple):  # written into rows of the op's output
                        lit = ("pair", o.key, idx, a, b, "direct")
                        group.append(lit)
                        sp.moved(lit, [grid_transfer(src, None, dst[1], T, target, rows=seg, whole_rows=sp.whole_rows)
                                       for seg in dst[2]],
                                 target, [(f"{key} (output)", f"{o.key} (output)")] * len(dst[2]))
                        continue
                    if window is None and accepts(dst, src):
                        group.append(("pair", o.key, idx, a, b, "none"))
                        continue
                    alloc = dict(dst, mem="std") if dst["mem"] == "any" else dst
                    for mode in ["direct"] + (["relay"] if relays and alloc["replicas"] > 1 else []):
                        lit = ("pair", o.key, idx, a, b, mode)
                        group.append(lit)
                        sp.add(lit, alloc, o.x, o.c, f"{name} (exchanged copy)")
                        out, copy, via = f"{key} (output)", f"{name} (exchanged copy)", f"{name} (relay buffer)"
                        if mode == "direct":
                            sp.moved(lit, [grid_transfer(src, window, alloc, T, target, whole_rows=sp.whole_rows)],
                                     target, [(out, copy)])
                        else:
                            relay = relay_of(alloc, T)
                            sp.add(lit, relay, o.x, o.x, via)
                            sp.moved(lit, [grid_transfer(src, window, relay, T, target, whole_rows=sp.whole_rows),
                                           grid_transfer(relay, None, alloc, T, target, whole_rows=sp.whole_rows)], target,
                                     [(out, via), (via, copy)])
            for gl in group:
                sp.lit(gl)
            sp.groups[name] = group
            sp.ends[name] = (key, o.key, idx, [srcs.index(sp.derived[(key, i)].out) for i in range(len(candidates[key]))],
                             [dsts.index(n) for n in needs])
