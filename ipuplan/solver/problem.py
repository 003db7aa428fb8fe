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
from .exchange.encoding import encode, relay_layout
from .schedule import Schedule, build_schedule, matrix


@dataclass(frozen=True)
class Accounting:
    """How much of each tile the plan may use and what is set aside in region 0.

    modeled (default): support = code + the sync words of every exchange superstep; each tile's exchange
    tables are counted from the plan's transfers (the exchange family). seeds (--support-reserve B): the seeds'
    586,960 B budget with a fixed B-byte reserve that holds the tables; they are limited but not added.
    """

    usable: int  # bytes a tile's plan may occupy in total
    support: int  # constant bytes in region 0 (code, runtime, descriptors, superstep words)
    region0: int
    region1: int
    element: int
    mode: str  # "modeled" or "seeds"
    table_budget: int
    fragment_limit: int
    tables_in_memory: bool

    @classmethod
    def for_target(cls, t: Target, support_reserve: int | None, supersteps: int = 0,
                   table_budget: int | None = None) -> "Accounting":
        budget = t.exchange_table_bytes_max if table_budget is None else table_budget
        if support_reserve is not None:
            return cls(t.seeds_planned_data_bytes, support_reserve, t.region0_bytes, t.region1_usable_bytes,
                       t.region1_element_bytes, "seeds", budget, t.exchange_fragments_max, False)
        return cls(t.usable_bytes, t.code_bytes + t.superstep_bytes * supersteps, t.region0_bytes,
                   t.region1_usable_bytes, t.region1_element_bytes, "modeled", budget, t.exchange_fragments_max,
                   True)


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
class XContribution:
    """Encoded exchange bytes and fragments per tile (vector indices) when literal `lit` is chosen."""

    lit: tuple
    tables: int
    frags: int
    step: int
    what: str


@dataclass
class Pair:
    """A producer-layout x consumer-layout combination of one edge, in one transport mode:
    "none" (same layout, nothing moves), "direct" or "relay" (gather onto relays, then multicast)."""

    edge: int
    src: int  # index into the edge's producer layouts
    dst: int  # index into the edge's consumer needs
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
    xcontribs: list[XContribution] = field(default_factory=list)

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


def build_problem(graph: Graph, target: Target, batch: int, support_reserve: int | None = None,
                  relays: bool = True, table_budget: int | None = None) -> Problem:
    sched = build_schedule(graph)
    ctx = Ctx(target, sched, batch)
    impls = build_catalogue(ctx)
    T = target.tiles
    vecs = _Vectors()
    contribs: list[Contribution] = []
    xcontribs: list[XContribution] = []
    cycles: dict[tuple, int] = {}
    homes: dict[str, list[tuple[str, int]]] = {}
    xfer_cache: dict = {}
    last_step = len(sched.steps) - 1
    constant = 0
    acct = Accounting.for_target(target, support_reserve, len(sched.ops), table_budget)

    def xfer(src, dst: Layout):
        key = (src, dst)
        if key not in xfer_cache:
            xfer_cache[key] = transfers(src, dst, T)
        return xfer_cache[key]

    def xcycles(*trs) -> int:
        send = sum(t.send for t in trs)
        recv = sum(t.recv for t in trs)
        frags = sum(np.maximum(t.frags_send, t.frags_recv) for t in trs)
        return cl.exchange_cycles(target, int(send.max()), int(recv.max()), int(frags.max()))

    def exchange(lit: tuple, step: int, what: str, trs, patched: bool = False) -> None:
        """Record a transfer's encoded tables and fragments (and their region-0 bytes)."""
        tab = sum(encode(target, t, patched)[0] for t in trs)
        frg = sum(encode(target, t)[1] for t in trs)
        if not tab.any() and not frg.any():
            return
        xcontribs.append(XContribution(lit, vecs.add(tab), vecs.add(frg), step, what))

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
                    tr = xfer(home, pu.layout)
                    cyc += xcycles(tr)
                    exchange(lit, sop.xstep, f"stage {pu.key} -> {sop.key}", [tr], patched=info.count > 1)
            for what, fs, fr in _internal_exchanges(im, T):
                tab = target.send_fragment_bytes * fs + target.recv_fragment_bytes * fr
                xcontribs.append(XContribution(lit, vecs.add(tab), vecs.add(fs + fr), sop.cstep, f"{sop.key} {what}"))
            cycles[lit] = cyc * sop.trips

    for pkey, users in homes.items():
        info = sched.params[pkey]
        r, c = matrix(info.value)
        home = home_layout(target, pkey, r, c, info.value.dtype.itemsize)
        contribs.append(Contribution(("home", pkey), vecs.add(home.tile_bytes(T) * info.count), MemClass.STANDARD,
                                     0, last_step, f"{pkey} (home x{info.count})"))

    edges = _edges(sched, impls, target, vecs, contribs, cycles, xfer, xcycles, exchange, relays)
    return Problem(graph, target, acct, sched, impls, edges, vecs.list, contribs, cycles, constant, homes,
                   sched.ties, batch, xcontribs)


def _internal_exchanges(im: Impl, tiles: int):
    """Exchanges inside one op: pk > 1 partial-sum reduction, cross-tile LayerNorm statistics, concat."""
    f = im.fields
    if f.get("kind") == "matmul" and f["pk"] > 1:
        out = im.out
        part = Layout(out.rows, out.cols, 4, pr=out.pr, pc=out.pc, replicas=f["pk"], row_stride=out.rstride,
                      col_stride=out.col_stride, rep_stride=1, row_groups=out.row_groups)
        senders = np.bincount(part.block_tiles(tiles)[1:].ravel(), minlength=tiles)
        receivers = np.bincount(out.block_tiles(tiles).ravel(), minlength=tiles) * (f["pk"] - 1)
        yield "reduction", senders.astype(np.int64), receivers.astype(np.int64)
    elif f.get("statistics") == "cross-tile":
        owners = np.bincount(im.out.block_tiles(tiles).ravel(), minlength=tiles).astype(np.int64)
        yield "statistics", owners, owners * (im.out.pc - 1)
    elif f.get("kind") == "concat":
        owners = np.bincount(im.out.block_tiles(tiles).ravel(), minlength=tiles).astype(np.int64)
        yield "concat", owners, owners * 2


def _edges(sched: Schedule, impls, target, vecs, contribs, cycles, xfer, xcycles, exchange, relays) -> list[Edge]:
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
                    if ref.window is None and src == dst:
                        e.pairs.append(Pair(ei, a, b, False))
                        continue
                    s = ColumnWindow(src, *ref.window) if ref.window else src
                    modes = ["direct"] + (["relay"] if relays and dst.replicas > 1 else [])
                    for mode in modes:
                        p = Pair(ei, a, b, True, mode=mode)
                        what = f"{ref.key} -> {sop.key}"
                        contribs.append(Contribution(p.lit, vecs.add(dst.tile_bytes(T)), dst.mem, sop.xstep,
                                                     sop.cstep, f"{what} (exchanged copy)"))
                        if mode == "direct":
                            trs = [xfer(s, dst)]
                        else:
                            relay = relay_layout(dst, T)
                            trs = [xfer(s, relay), xfer(relay, dst)]
                            contribs.append(Contribution(p.lit, vecs.add(relay.tile_bytes(T)), MemClass.STANDARD,
                                                         sop.xstep, sop.xstep, f"{what} (relay buffer)"))
                        p.cycles = xcycles(*trs) * sop.trips
                        cycles[p.lit] = p.cycles
                        exchange(p.lit, sop.xstep, f"{what} ({mode})", trs)
                        e.pairs.append(p)
            edges.append(e)
    return edges
