"""Family `choice`: exactly one implementation per op; edge layout pairs follow from the two choices.

For op o: sum_i x[o,i] == 1. For edge e from producer p to consumer c, with u[p,a] = sum of x over p's
implementations whose output is layout a and v[c,b] likewise for the needed layout b, pair literals
z[e,a,b,mode] satisfy sum_{b,mode} z == u[p,a] and sum_{a,mode} z == v[c,b] (exact for one-hot
choices); a converting pair's modes are direct transfer or relay (gather, then multicast).
(A staged parameter's home belongs to the implementation that stages it.) A Repeat's carried value
keeps one layout: the loop's input and its body result are produced in the same layout.
"""

from __future__ import annotations

from .model import ModelCtx


def add_choice(ctx: ModelCtx) -> None:
    p, m = ctx.p, ctx.m
    for op, impls in p.impls.items():
        for i, im in enumerate(impls):
            ctx.x[("impl", op, i)] = m.NewBoolVar(f"x[{op}={im.label}]")
        g = ctx.guard(f"choice[{op}: one of {len(impls)}]", "choice", (op,))
        m.AddExactlyOne([ctx.x[("impl", op, i)] for i in range(len(impls))]).OnlyEnforceIf(g)
        ctx.constraints += 1
    for ei, e in enumerate(p.edges):
        # an input index: a consumer may read one buffer at two inputs (attention reads K and V of one kv)
        g = ctx.guard(f"choice[edge {e.buf} -> {e.consumer}[{e.index}]]", "choice", ("edge", ei))
        for pr in e.pairs:
            ctx.x[pr.lit] = m.NewBoolVar(f"z[{e.buf}->{e.consumer}:{pr.src},{pr.dst},{pr.mode}]")
        for a in range(len(e.src_layouts)):
            u = [ctx.x[("impl", e.producer, i)] for i, s in e.src_of_impl.items() if s == a]
            z = [ctx.x[pr.lit] for pr in e.pairs if pr.src == a]
            m.Add(sum(z) == sum(u)).OnlyEnforceIf(g)
        for b in range(len(e.dst_layouts)):
            v = [ctx.x[("impl", e.consumer, j)] for j, d in e.dst_of_impl.items() if d == b]
            z = [ctx.x[pr.lit] for pr in e.pairs if pr.dst == b]
            m.Add(sum(z) == sum(v)).OnlyEnforceIf(g)
        ctx.constraints += len(e.src_layouts) + len(e.dst_layouts)
    for outer, res in p.ties:
        po, pr_ = p.sched.buffers[outer].producer, p.sched.buffers[res].producer
        g = ctx.guard(f"choice[carried {outer} == {res}]", "choice", ("tie", outer, res))
        for i, a in enumerate(p.impls[po]):
            for j, b in enumerate(p.impls[pr_]):
                if a.out != b.out:
                    m.AddBoolOr([ctx.x[("impl", po, i)].Not(), ctx.x[("impl", pr_, j)].Not()]).OnlyEnforceIf(g)
                    ctx.constraints += 1
