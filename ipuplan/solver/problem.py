"""The planning problem as data: choice groups, pair groups, and every per-tile byte contribution with
the steps it is live at, plus exchange tables, fragments and cycle costs. Built with numpy; no solver
types here. Every contribution carries the layout it allocates, so the backend places exactly these."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import ipuplan.codelets as cl
from ..catalogue import Catalogue, Ctx, HomeKind, Impl, Life, ParamMode, RowsInto, build_catalogue
from ..catalogue.schedule import Schedule, build_schedule
from ..catalogue.transport import home_layout, relay_layout
from ..ir.graph import Graph
from ..layout import ColumnWindow, Layout, MemClass, Transfer, transfers
from ..layout.geometry import per_block
from ..layout.transfer import stream_transfer
from ..target import Target


@dataclass(frozen=True)
class Accounting:
    """How much of each tile the plan may use and what is set aside.

    modeled (default): `support` = the memory map's fixed region-0 reservations and code window, code that
    overflows the window, and the supervisor program; each tile's exchange tables are counted from the
    plan's transfers and occupy whole region-0 elements (with the fetch guard). seeds (--support-reserve B):
    the seeds' 586,960 B budget with a fixed B-byte reserve that holds the tables (limited, not added).
    `headroom` bytes per tile are left free on top.
    """

    usable: int
    support: int
    region0: int
    region1: int
    mode: str  # "modeled" or "seeds"
    table_budget: int
    fragment_limit: int
    tables_in_memory: bool
    table_element: int  # tables are allocated in whole elements of this size (0: not rounded)
    table_guard: int
    headroom: int = 0
    support_parts: tuple[tuple[str, int], ...] = ()

    @property
    def capacity(self) -> int:
        """Bytes per tile for data and tables."""
        return self.usable - self.support - self.headroom

    def table_alloc(self, tables):
        """Region-0 bytes the tables occupy: whole elements covering the tables and the fetch guard."""
        t = np.asarray(tables, np.int64)
        if not self.table_element:
            return t
        return np.where(t > 0, -(-(t + self.table_guard) // self.table_element) * self.table_element, 0)

    @classmethod
    def for_target(cls, t: Target, support_reserve: int | None, program_bytes: int = 0, code_bytes: int = 0,
                   table_budget: int | None = None, headroom: int = 0) -> "Accounting":
        budget = t.exchange_table_bytes_max if table_budget is None else table_budget
        if support_reserve is not None:
            return cls(t.seeds_planned_data_bytes, support_reserve, t.region0_bytes, t.region1_usable_bytes, "seeds",
                       budget, t.exchange_fragments_max, False, 0, 0, headroom,
                       (("seeds' support reserve", support_reserve),))
        mm = t.memory_map
        overflow = max(0, code_bytes - mm.code_window_bytes)
        parts = tuple((r.name, r.size) for r in mm.reservations) + (
            ("code window", mm.code_window_bytes), ("code beyond the window", overflow),
            ("supervisor program", program_bytes))
        return cls(t.usable_bytes, sum(v for _, v in parts), t.region0_bytes, t.region1_usable_bytes, "modeled",
                   budget, t.exchange_fragments_max, True, t.region0_element_bytes, mm.table_guard_bytes, headroom,
                   parts)


@dataclass
class Contribution:
    """`vec` bytes per tile of class `mem`, live at steps [first, last], when literal `lit` is chosen;
    `layout` is what the backend allocates (times `times` consecutive copies: a parameter sequence)."""

    lit: tuple
    vec: int  # index into Problem.vectors
    mem: MemClass
    first: int
    last: int
    what: str
    layout: Layout | None = None
    times: int = 1


@dataclass
class XContribution:
    """Encoded exchange bytes and fragments per tile (vector indices) when literal `lit` is chosen; the
    transfer is kept for the backend."""

    lit: tuple
    tables: int
    frags: int
    step: int
    what: str
    transfers: tuple[Transfer, ...] = ()  # in phase order (a relay: gather, then multicast)
    patched: bool = False
    ends: tuple[tuple[str, str], ...] = ()  # per transfer: (`what` of the buffer sent from, of the one received into)
    phases: tuple[int, ...] = ()  # per transfer: its exchange phase (0 in one superstep; a relay's multicast is 1)


@dataclass
class Pair:
    """A producer-layout x consumer-layout combination of one edge, in one transport mode:
    "none" (the consumer reads the producer's buffer), "direct" or "relay" (gather onto relays, then
    multicast)."""

    edge: int
    src: int
    dst: int
    convert: bool
    cycles: int = 0
    mode: str = "none"

    @property
    def lit(self) -> tuple:
        return ("pair", self.edge, self.src, self.dst, self.mode)


@dataclass
class Edge:
    """Buffer `buf` (a window of it) read by op `consumer` at input `index`."""

    buf: str
    producer: str
    consumer: str
    index: int
    window: tuple[int, int] | None
    src_layouts: list[Layout] = field(default_factory=list)
    dst_layouts: list = field(default_factory=list)  # Layout or RowsInto
    src_of_impl: dict[int, int] = field(default_factory=dict)
    dst_of_impl: dict[int, int] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)


@dataclass
class Problem:
    graph: Graph
    target: Target
    acct: Accounting
    sched: Schedule
    impls: dict[str, list[Impl]]
    edges: list[Edge]
    vectors: list[np.ndarray]
    contribs: list[Contribution]
    cycles: dict[tuple, int]  # literal -> cycles (already multiplied by trips)
    constant_cycles: int
    ties: list[tuple[str, str]]
    batch: int
    xcontribs: list[XContribution] = field(default_factory=list)
    parts: dict = field(default_factory=dict)  # literal -> codelets.Cost (compute, exchange, sync), times trips
    staging: dict = field(default_factory=dict)  # impl literal -> the part of parts[lit] in the op's exchange step
    catalogue: Catalogue = Catalogue.SHAPED
    screened: dict = field(default_factory=dict)  # per GEMM: the grids the catalogue kept, and why

    @property
    def steps(self) -> list[str]:
        return self.sched.steps

    @property
    def unimplemented(self) -> list[str]:
        """Ops the catalogue has no implementation of at this instance: no plan exists in it."""
        return [k for k, v in self.impls.items() if not v]


class _Vectors:
    def __init__(self):
        self.list: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}

    def add(self, v: np.ndarray) -> int:
        v = np.ascontiguousarray(v, dtype=np.int64)
        k = v.tobytes()
        if k not in self.index:
            self.index[k] = len(self.list)
            self.list.append(v)
        return self.index[k]


def build_problem(graph: Graph, target: Target, batch: int, support_reserve: int | None = None,
                  relays: bool = True, table_budget: int | None = None, headroom: int = 0,
                  catalogue: Catalogue = Catalogue.SHAPED) -> Problem:
    sched = build_schedule(graph)
    cctx = Ctx(target, sched, batch, catalogue)
    impls = build_catalogue(cctx)
    whole = cctx.shaped  # whole stored rows (padding included) move as one run
    T = target.tiles
    enc, ib = target.encoding, target.instruction_bytes
    copy_words = cl.vector.copy_list_words(target)
    vecs = _Vectors()
    contribs: list[Contribution] = []
    xcontribs: list[XContribution] = []
    cycles: dict[tuple, int] = {}
    parts: dict[tuple, cl.Cost] = {}
    staging: dict[tuple, cl.Cost] = {}
    xfer_cache: dict = {}
    last_step = len(sched.steps) - 1
    constant = 0
    for sop in sched.ops:  # the program and code support is derived from the op kinds alone
        for im in impls[sop.key]:
            cs, xs = cl.program(sop.op.kind, cctx.steps)
            assert im.compute_sets + 1 <= cs and 2 + len(im.internal) <= xs, (sop.key, im.label)
    acct = Accounting.for_target(target, support_reserve, cl.program_bytes(target, [s.op.kind for s in sched.ops], cctx.steps),
                                 cl.code_bytes(target, cctx.rotating, cctx.compact), table_budget, headroom)

    def xfer(src, dst: Layout, rows=None) -> Transfer:
        key = (src, dst, rows)
        if key not in xfer_cache:
            xfer_cache[key] = transfers(src, dst, T, rows, enc, whole)
        return xfer_cache[key]

    def xcost(*trs: Transfer, patched: bool = False) -> cl.Cost:
        return cl.transfers_cost(target, trs, patched)

    def exchange(lit: tuple, step: int, what: str, trs: list[Transfer], ends, patched: bool = False,
                 phases: tuple[int, ...] | None = None) -> None:
        """Record transfers' encoded table bytes and pieces (each transfer its own rows); all in one exchange
        phase unless `phases` says otherwise."""
        tab = sum(t.table_words(enc, copy_words, patched) for t in trs) * ib
        frg = sum(t.send_pieces + t.recv_pieces for t in trs)
        if not tab.any() and not frg.any():
            return
        xcontribs.append(XContribution(lit, vecs.add(tab), vecs.add(frg), step, what, tuple(trs), patched,
                                       tuple(ends), tuple(phases) if phases is not None else (0,) * len(trs)))

    def add(lit, lay: Layout, first: int, last: int, what: str, times: int = 1) -> None:
        lay = lay.allocated()
        contribs.append(Contribution(lit, vecs.add(lay.tile_bytes(T) * times), lay.mem, first, last, what, lay,
                                     times))

    span = {Life.COMPUTE: lambda s: (s.cstep, s.cstep), Life.OPERAND: lambda s: (s.xstep, s.cstep),
            Life.PROGRAM: lambda s: (0, last_step)}
    carried = {res for _, res in sched.ties}
    for sop in sched.ops:
        buf = sched.buffers[sop.out_key]
        constant += sop.trips * (target.compute_set_cycles + target.exchange_sync_cycles)
        for i, im in enumerate(impls[sop.key]):
            lit = ("impl", sop.key, i)
            isync = len(im.internal) * target.exchange_sync_cycles  # one sync per internal exchange round
            beyond = sum(cl.transfers_cost(target, inner.transfers).beyond for inner in im.internal)
            cost = cl.Cost(im.cycles, im.extra_exchange - isync, isync, beyond)
            stage = cl.Cost()
            add(lit, im.out, sop.xstep if im.out_from_exchange else sop.cstep, buf.last, f"{sop.key} (output)")
            for b in im.bufs:
                add(lit, b.layout, *span[b.life](sop), f"{sop.key} ({b.role})")
            if sop.key in carried:  # between iterations one Copy vertex per block carries the result over
                cost += cl.Cost(cl.vector.carry_cycles(target, im.out.allocated().tile_bytes(T)))
                add(lit, per_block(im.out, cl.vector.COPY.descriptor_bytes(target)), 0, last_step,
                    f"{sop.key} (carry descriptors)")
            for idx, need in im.needs.items():
                ref = dict(sop.reads)[idx]
                if ref.kind == "act" and ref.key in sched.buffers and not sched.buffers[ref.key].producer:
                    add(lit, need, 0, sop.cstep, f"{ref.key} (host input)")  # the host writes it in place
            for pu in im.params:
                info = sched.params[pu.key]
                if pu.mode is ParamMode.RESIDENT:
                    add(lit, pu.layout, 0, last_step, f"{pu.key} (resident x{info.count})", info.count)
                else:
                    home = home_layout(T, pu.key, pu.layout, pu.home)
                    add(lit, home, 0, last_step, f"{pu.key} (home x{info.count})", info.count)
                    add(lit, pu.layout, sop.xstep, sop.cstep, f"{pu.key} (staged)")
                    tr = stream_transfer(home, pu.layout, T, enc) if pu.home.kind is HomeKind.SPREAD else \
                        xfer(home, pu.layout)
                    stage += xcost(tr, patched=info.count > 1)
                    exchange(lit, sop.xstep, f"stage {pu.key} -> {sop.key}", [tr],
                             [(f"{pu.key} (home x{info.count})", f"{pu.key} (staged)")], patched=info.count > 1)
            for inner in im.internal:
                exchange(lit, sop.cstep, f"{sop.key} {inner.what}", inner.transfers,
                         [(m.src, m.dst) for m in inner.moves])
            parts[lit] = (cost + stage) * sop.trips
            staging[lit] = stage * sop.trips
            cycles[lit] = parts[lit].total

    edges = _edges(sched, impls, T, add, cycles, parts, xfer, xcost, exchange, relays, target.exchange_sync_cycles)
    return Problem(graph, target, acct, sched, impls, edges, vecs.list, contribs, cycles, constant, sched.ties,
                   batch, xcontribs, parts, staging, catalogue, cctx.screened)


def _edges(sched: Schedule, impls, T: int, add, cycles, parts, xfer, xcost, exchange, relays,
           sched_sync: int) -> list[Edge]:
    edges: list[Edge] = []
    for sop in sched.ops:
        for idx, ref in sop.reads:
            if ref.kind != "act" or not sched.buffers[ref.key].producer:
                continue
            if all(im.needs.get(idx) is None for im in impls[sop.key]):
                continue
            e = Edge(ref.key, sched.buffers[ref.key].producer, sop.key, idx, ref.window)
            for i, im in enumerate(impls[e.producer]):
                if im.out not in e.src_layouts:
                    e.src_layouts.append(im.out)
                e.src_of_impl[i] = e.src_layouts.index(im.out)
            for j, im in enumerate(impls[sop.key]):
                need = im.needs[idx]
                if need not in e.dst_layouts:
                    e.dst_layouts.append(need)
                e.dst_of_impl[j] = e.dst_layouts.index(need)
            ei = len(edges)
            what = f"{ref.key} -> {sop.key}[{idx}]"  # the checker names buffers alike
            for a, src in enumerate(e.src_layouts):
                for b, dst in enumerate(e.dst_layouts):
                    if isinstance(dst, RowsInto):  # written straight into the consumer's output rows
                        p = Pair(ei, a, b, True, mode="direct")
                        trs = [xfer(src, dst.layout, seg) for seg in dst.segments]
                        parts[p.lit] = xcost(*trs) * sop.trips
                        p.cycles = cycles[p.lit] = parts[p.lit].total
                        exchange(p.lit, sop.xstep, f"{what} (into rows)", trs,
                                 [(f"{e.producer} (output)", f"{sop.key} (output)")] * len(trs))
                        e.pairs.append(p)
                        continue
                    if ref.window is None and dst.accepts(src):
                        e.pairs.append(Pair(ei, a, b, False))
                        continue
                    s = ColumnWindow(src, *ref.window) if ref.window else src
                    alloc = dst.allocated()
                    modes = ["direct"] + (["relay"] if relays and alloc.replicas > 1 else [])
                    for mode in modes:
                        p = Pair(ei, a, b, True, mode=mode)
                        add(p.lit, alloc, sop.xstep, sop.cstep, f"{what} (exchanged copy)")
                        if mode == "direct":
                            trs = [xfer(s, alloc)]
                        else:
                            relay = relay_layout(alloc, T)
                            trs = [xfer(s, relay), xfer(relay, alloc)]
                            add(p.lit, relay, sop.xstep, sop.xstep, f"{what} (relay buffer)")
                        # a relay is two supersteps: the second phase brings its own sync
                        cost = xcost(*trs) if mode == "direct" else \
                            xcost(trs[0]) + xcost(trs[1]) + cl.Cost(sync=sched_sync)
                        parts[p.lit] = cost * sop.trips
                        p.cycles = cycles[p.lit] = parts[p.lit].total
                        copy = f"{what} (exchanged copy)"
                        ends = ([(f"{e.producer} (output)", copy)] if mode == "direct" else
                                [(f"{e.producer} (output)", f"{what} (relay buffer)"), (f"{what} (relay buffer)", copy)])
                        exchange(p.lit, sop.xstep, f"{what} ({mode})", trs, ends,
                                 phases=(0,) if mode == "direct" else (0, 1))
                        e.pairs.append(p)
            edges.append(e)
    return edges
