"""The planning problem as data: choice groups, pair groups, and every per-tile byte contribution with
the steps it is live at, plus cycle costs. Built with numpy; no solver types here."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import codelets as cl
from ..ir.graph import Graph
from ..layout import Layout, MemClass, transfers
from ..layout.geometry import ColumnWindow
from ..target import Target
from .catalogue import Ctx, Impl, ParamMode, build_catalogue
from .schedule import Schedule, build_schedule, matrix


@dataclass(frozen=True)
class Accounting:
    """How much of each tile the plan may use and what is set aside for code and exchange tables."""

    usable: int  # bytes a tile's plan may occupy in total
    support: int  # bytes set aside in region 0 for code, exchange tables and runtime
    region0: int
    region1: int
    element: int  # interleaved arena granularity
    mode: str  # "placeholder" or "seeds"

    @classmethod
    def for_target(cls, t: Target, support_reserve: int | None) -> "Accounting":
        if support_reserve is not None:  # the seeds' budget: 586,960 B of planned data incl. the reserve
            return cls(t.seeds_planned_data_bytes, support_reserve, t.region0_bytes, t.region1_usable_bytes,
                       t.region1_element_bytes, "seeds")
        return cls(t.usable_bytes, t.seeds_support_reserve_bytes, t.region0_bytes, t.region1_usable_bytes,
                   t.region1_element_bytes, "placeholder")


@dataclass
class Contribution:
    """`vec` bytes per tile of class `mem`, live at steps [first, last], when literal `lit` is chosen."""

    lit: tuple
    vec: int  # index into Problem.vectors
    mem: MemClass
    first: int
    last: int
    what: str  # for explanations: tensor / role


@dataclass
class Pair:
    """A producer-layout x consumer-layout combination of one edge; `cost` set when they differ."""

    edge: int
    src: int  # index into the edge's producer layouts
    dst: int  # index into the edge's consumer needs
    convert: bool
    cycles: int = 0


@dataclass
class Edge:
    """Buffer `buf` (a window of it) read by op `consumer` at input `index`."""

    buf: str
    producer: str
    consumer: str
    index: int
    window: tuple[int, int] | None
    src_layouts: list[Layout] = field(default_factory=list)
    dst_layouts: list[Layout] = field(default_factory=list)
    src_of_impl: dict[int, int] = field(default_factory=dict)  # producer impl -> src layout index
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
    homes: dict[str, list[tuple[str, int]]]  # param -> staged users (op, impl)
    ties: list[tuple[str, str]]
    batch: int

    @property
    def steps(self) -> list[str]:
        return self.sched.steps


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


def home_layout(t: Target, key: str, rows: int, cols: int, elem: int) -> Layout:
    """A parameter's compact home: one iteration's bytes split evenly over every tile, the starting
    tile spread by name so remainders do not pile up on tile 0."""
    start = sum(key.encode()) * 37 % t.tiles
    return Layout(rows, cols, elem, pr=t.tiles, flat=True, start=start)


def build_problem(graph: Graph, target: Target, batch: int, support_reserve: int | None = None) -> Problem:
    sched = build_schedule(graph)
    ctx = Ctx(target, sched, batch)
    impls = build_catalogue(ctx)
    T = target.tiles
    vecs = _Vectors()
    contribs: list[Contribution] = []
    cycles: dict[tuple, int] = {}
    homes: dict[str, list[tuple[str, int]]] = {}
    xfer_cache: dict = {}
    last_step = len(sched.steps) - 1
    constant = 0

    def xcycles(src, dst: Layout) -> int:
        key = (src, dst)
        if key not in xfer_cache:
            tr = transfers(src, dst, T)
            xfer_cache[key] = cl.exchange_cycles(target, int(tr.send.max()), int(tr.recv.max()),
                                                 int(max(tr.frags_send.max(), tr.frags_recv.max())))
        return xfer_cache[key]

    for sop in sched.ops:
        buf = sched.buffers[sop.out_key]
        constant += sop.trips * (target.compute_set_cycles + target.exchange_sync_cycles)
        for i, im in enumerate(impls[sop.key]):
            lit = ("impl", sop.key, i)
            cyc = im.cycles + im.extra_exchange
            first = sop.xstep if im.out_from_exchange else sop.cstep
            contribs.append(Contribution(lit, vecs.add(im.out.tile_bytes(T)), im.out.mem, first, buf.last,
                                         f"{sop.key} (output)"))
            if im.scratch.any():
                contribs.append(Contribution(lit, vecs.add(im.scratch), MemClass.STANDARD, sop.cstep, sop.cstep,
                                             f"{sop.key} (scratch)"))
            if im.rope_tables is not None:
                contribs.append(Contribution(lit, vecs.add(im.rope_tables.tile_bytes(T)), MemClass.STANDARD, 0,
                                             last_step, f"{sop.key} (RoPE tables)"))
            for idx, need in im.needs.items():
                ref = dict(sop.reads)[idx]
                if ref.kind == "act" and ref.key in sched.buffers and not sched.buffers[ref.key].producer:
                    # a host input is written straight into the layout its consumer needs
                    contribs.append(Contribution(lit, vecs.add(need.tile_bytes(T)), need.mem, 0, sop.cstep,
                                                 f"{ref.key} (host input)"))
            for pu in im.params:
                info = sched.params[pu.key]
                per = pu.layout.tile_bytes(T)
                if pu.mode is ParamMode.RESIDENT:
                    contribs.append(Contribution(lit, vecs.add(per * info.count), pu.layout.mem, 0, last_step,
                                                 f"{pu.key} (resident x{info.count})"))
                else:
                    r, c = matrix(info.value)
                    home = home_layout(target, pu.key, r, c, info.value.dtype.itemsize)
                    homes.setdefault(pu.key, []).append((sop.key, i))
                    contribs.append(Contribution(lit, vecs.add(per), pu.layout.mem, sop.xstep, sop.cstep,
                                                 f"{pu.key} (staged)"))
                    cyc += xcycles(home, pu.layout)
            cycles[lit] = cyc * sop.trips

    for pkey, users in homes.items():
        info = sched.params[pkey]
        r, c = matrix(info.value)
        home = home_layout(target, pkey, r, c, info.value.dtype.itemsize)
        contribs.append(Contribution(("home", pkey), vecs.add(home.tile_bytes(T) * info.count), MemClass.STANDARD,
                                     0, last_step, f"{pkey} (home x{info.count})"))

    edges = _edges(sched, impls, target, vecs, contribs, cycles, xcycles)
    return Problem(graph, target, Accounting.for_target(target, support_reserve), sched, impls, edges, vecs.list,
                   contribs, cycles, constant, homes, sched.ties, batch)


def _edges(sched: Schedule, impls, target, vecs, contribs, cycles, xcycles) -> list[Edge]:
    T = target.tiles
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
            for a, src in enumerate(e.src_layouts):
                for b, dst in enumerate(e.dst_layouts):
                    same = ref.window is None and src == dst
                    p = Pair(ei, a, b, not same)
                    if not same:
                        s = ColumnWindow(src, *ref.window) if ref.window else src
                        p.cycles = xcycles(s, dst) * sop.trips
                        lit = ("pair", ei, a, b)
                        contribs.append(Contribution(lit, vecs.add(dst.tile_bytes(T)), dst.mem, sop.xstep,
                                                     sop.cstep, f"{ref.key} -> {sop.key} (exchanged copy)"))
                        cycles[lit] = p.cycles
                    e.pairs.append(p)
            edges.append(e)
    return edges
