"""Family `memory/liveness`: at every step, the live bytes of every tile class fit the tile.

For class k (representative tile r) and step t, with c_l[r] the bytes of contribution l on tile r:
    sum_{l live at t} c_l[r] * lit_l  <=  usable - support
Constraints that cannot bind (their largest possible left side fits) are not emitted.
"""

from __future__ import annotations

from collections import defaultdict

from ...layout import MemClass
from ..model import ModelCtx


def _group(lit: tuple) -> tuple:
    """Literals in one group are mutually exclusive (one implementation / one pair per edge)."""
    if lit[0] in ("impl", "pair"):
        return lit[:2]
    return lit


def live_terms(ctx: ModelCtx, mem: MemClass | None):
    """Yield (class, step, {literal: bytes on the class's tile}, largest possible sum) for live steps."""
    p = ctx.p
    by_step: dict[int, list] = defaultdict(list)
    for cb in p.contribs:
        if mem is None or cb.mem is mem:
            for t in range(cb.first, cb.last + 1):
                by_step[t].append(cb)
    for c in ctx.classes:
        for t in range(len(p.steps)):
            terms: dict[tuple, int] = defaultdict(int)
            for cb in by_step.get(t, ()):
                v = int(p.vectors[cb.vec][c.rep])
                if v:
                    terms[cb.lit] += v
            if not terms:
                continue
            worst: dict[tuple, int] = defaultdict(int)
            for lit, v in terms.items():
                worst[_group(lit)] = max(worst[_group(lit)], v)
            yield c, t, terms, sum(worst.values())


def add_liveness(ctx: ModelCtx) -> None:
    p, m, a = ctx.p, ctx.m, ctx.p.acct
    cap = a.usable - a.support
    for c, t, terms, top in live_terms(ctx, None):
        if top <= cap:
            continue
        g = ctx.guard(f"memory[point={p.steps[t]}, {c.describe()}]", "liveness", ("total", t, c.index))
        m.Add(sum(v * ctx.lit(lit) for lit, v in terms.items()) <= cap).OnlyEnforceIf(g)
        ctx.constraints += 1
