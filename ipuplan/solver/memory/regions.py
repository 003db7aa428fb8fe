"""Family `memory/regions`: what each memory region can hold, per tile class and step.

Region 0 holds the support (fixed reservations, code, supervisor program), the exchange tables (whole
elements) and may hold standard data; region 1 holds all interleaved data and may hold standard data.
With s0 the standard bytes placed in region 0 at a step (a split variable per class and step), the region
limits are
    support + A_k + s0 <= region0,   interleaved + (standard - s0) <= region1.
Eliminating s0 leaves `support + A_k <= region0`, `interleaved + F <= region1` and the liveness family's
total bound, which is what is emitted (F: the free bytes the slack objective keeps, 0 otherwise; keeping them
in region 1 too leaves the placement room for the interleaved buffers, whose element rules are the tightest). This is a relaxation of pinning every buffer to one region for its
whole life: a verdict of INFEASIBLE therefore holds for every region assignment and placement; a FIT
plan's buffers get their regions and addresses from the placement, which may still refuse it.
"""

from __future__ import annotations

from ...layout import MemClass
from ..model import SLACK_MAX, ModelCtx
from .liveness import live_rows


def add_regions(ctx: ModelCtx) -> None:
    p, m, a = ctx.p, ctx.m, ctx.p.acct
    g0 = ctx.guard(f"region0[support {a.support:,} B <= {a.region0:,} B]", "regions", ("region0",))
    one = m.NewConstant(1)
    m.Add(a.support * one <= a.region0).OnlyEnforceIf(g0)
    ctx.constraints += 1
    if a.tables_in_memory and a.support + int(a.table_alloc(a.table_budget)) > a.region0:
        for c in ctx.classes:
            g = ctx.guard(f"region0[code + exchange tables, {c.describe()}]", "regions", ("tables", c.index))
            alloc = ctx.table_alloc(c.index, ctx.tables[c.index])
            m.Add(alloc + a.support <= a.region0 + ctx.over("memory")).OnlyEnforceIf(g)
            ctx.constraints += 1
    reach = SLACK_MAX if ctx.free is not None else 0
    for c, t, terms, prog, top in live_rows(ctx, MemClass.INTERLEAVED, a.region1 - reach):
        g = ctx.guard(f"region1[interleaved, point={p.steps[t]}, {c.describe()}]", "regions", ("il", t, c.index))
        resident = ctx.resident(("il", c.index), prog)
        m.Add(ctx.weighted_sum(*terms) + resident + ctx.kept_free() <= a.region1 + ctx.over("memory")).OnlyEnforceIf(g)
        ctx.constraints += 1
