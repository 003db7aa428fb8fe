"""Lower a placed plan, op by op in schedule order: the exchange step (local copies, then the direct
transfers, relay gathers and parameter staging, then the relays' multicasts), then the compute step (the op
kind's rule, with its internal exchanges in between); the Repeat body once, its carry between iterations."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...codelets import vector
from ...ir.graph import OpKind
from ...solver.profile import step_costs
from .buffers import LoweringError, placed_buffers
from .compute import RULES
from .context import Ctx, VertexBuilder
from .exchange import Runs, cell_runs, table_words
from .host import bindings
from .program import ComputeSet, Exchange, Program, Section, Vertices


def _copies(runs: Runs) -> Vertices:
    """One Copy vertex per local run and destination."""
    v = runs.dst >= 0
    r, k = np.nonzero(v)
    b = VertexBuilder(vector.COPY, len(r))
    n = runs.nbytes[r]
    one = np.ones_like(n)
    b.tile[:] = runs.src[r]
    for f, addr, stride in ((0, runs.src_addr[r], runs.src_stride[r]), (1, runs.dst_addr[r, k], 0 * n)):
        b.cols["addr"][:, f], b.cols["rows"][:, f], b.cols["row_bytes"][:, f] = addr, one, n
        b.cols["pitch"][:, f], b.cols["stride"][:, f] = n, stride
    b.params[:, 0] = n
    return b.build()


def _exchange(step: int, sec: Section, op: str, name: str, runs: Runs) -> Exchange:
    return Exchange(step, sec, op, name, runs.src, runs.src_addr, runs.nbytes, runs.src_stride, runs.dst,
                    runs.dst_addr)


def _repeat_count(graph) -> int:
    reps = [op.attrs.count for op in graph.ops if op.kind is OpKind.REPEAT]
    return reps[0] if reps else 1


def lower(p, chosen: set, pp) -> Program:
    """The device program of a FIT plan `chosen` of problem `p`, placed by `pp`."""
    if p.acct.mode != "modeled":
        raise LoweringError("only plans under the memory map (not --support-reserve) have real addresses")
    t = p.target
    T, enc, ib = t.tiles, t.encoding, t.instruction_bytes
    cw = vector.copy_list_words(t)
    placed, table = placed_buffers(p, chosen, pp, t.memory_map.base)
    cx = Ctx(p, chosen, placed)
    sched = p.sched
    body = sched.body

    def section(step: int) -> Section:
        if body is None or step < body[0]:
            return Section.PROLOGUE
        return Section.BODY if step <= body[1] else Section.EPILOGUE

    by_step = defaultdict(list)
    accounted = np.zeros(T, np.int64)
    for x in p.xcontribs:
        if x.lit in chosen:
            by_step[x.step].append(x)
            accounted += p.vectors[x.tables]
    tables = np.zeros(T, np.int64)
    steps = []
    for sop in sched.ops:
        op, im = sop.key, cx.impl[sop.key]
        sx, sc = sop.xstep, sop.cstep
        phases: list[list[Runs]] = [[], []]
        local: list[Runs] = []
        for x in by_step[sx]:
            for k, tr, (sw, dw) in zip(x.phases, x.transfers, x.ends):
                ex, loc = cell_runs(tr, cx.buf(sw), cx.buf(dw), enc, x.patched)
                phases[k].append(ex)
                local.append(loc)
                tables += table_words(ex, loc, T, enc, x.patched, cw) * ib
        loc = Runs.concat(local)
        if len(loc.src):
            steps.append(ComputeSet(sx, section(sx), op, "local copies", (_copies(loc),)))
        for k, name in enumerate(("operands", "relay multicast")):
            runs = Runs.concat(phases[k])
            if len(runs.src):
                steps.append(_exchange(sx, section(sx), op, name, runs))
        for item in RULES[sop.op.kind](cx, sop, im):
            if item[0] == "compute":
                steps.append(ComputeSet(sc, section(sc), op, item[1], tuple(item[2])))
                continue
            inner = im.internal[item[1]]
            runs = [cell_runs(m.transfer, cx.buf(m.src), cx.buf(m.dst), enc, False) for m in inner.moves]
            ex, loc = Runs.concat([r[0] for r in runs]), Runs.concat([r[1] for r in runs])
            for e, lc in runs:
                tables += table_words(e, lc, T, enc, False, cw) * ib
            if len(loc.src):
                steps.append(ComputeSet(sc, section(sc), op, f"{inner.what} (local)", (_copies(loc),)))
            steps.append(_exchange(sc, section(sc), op, inner.what, ex))
    modeled = _modeled_steps(p, chosen)
    over = tables > accounted
    if over.any():
        tile = int(np.flatnonzero(over)[0])
        raise LoweringError(f"tile {tile}: the lowered exchange tables take {int(tables[tile]):,} B, the plan "
                            f"accounted {int(accounted[tile]):,} B")
    carry = _carry(cx, body) if body else None
    return Program(T, tuple(steps), tuple(sched.steps), _repeat_count(sched.graph), carry, table, bindings(cx),
                   tables, {"accounted_tables": accounted, "body": list(body) if body else None,
                                                   "modeled_steps": modeled})


def _modeled_steps(p, chosen: set) -> list[list[int]]:
    """Each plan step's modeled cycles in one run (compute, exchange, sync): the same per-superstep costs the
    plan's breakdown reports (solver.profile.step_costs); summed over the program they are its modeled cycles."""
    return [[c.compute, c.exchange, c.sync] for c in step_costs(p, chosen)]


def _carry(cx: Ctx, body) -> ComputeSet | None:
    """Between two iterations, each carried value's body result is copied over the buffer the body reads
    (the tie makes both the same layout: block for block, the same bytes at the same offsets)."""
    verts = []
    for outer, res in cx.p.sched.ties:
        src, dst = cx.buf(f"{res} (output)"), cx.buf(f"{outer} (output)")
        if src.layout != dst.layout:
            raise LoweringError(f"carried {outer} and {res} differ in layout")
        a, b = src.blocks(cx.T), dst.blocks(cx.T)
        nb = np.broadcast_to(src.layout.block_bytes()[None], a.tile.shape).ravel()
        v = VertexBuilder(vector.COPY, len(nb))
        v.tile[:] = a.tile.ravel()
        for f, blk in ((0, a), (1, b)):
            v.cols["addr"][:, f], v.cols["rows"][:, f] = blk.addr.ravel(), 1
            v.cols["row_bytes"][:, f], v.cols["pitch"][:, f] = nb, nb
        v.params[:, 0] = nb
        verts.append(v.build())
    if not verts:
        return None
    return ComputeSet(body[0], Section.BODY, "repeat", "carry", tuple(verts))
