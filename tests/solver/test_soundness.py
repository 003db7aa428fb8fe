"""Solver soundness: on random tiny problems the CP-SAT verdict and optimum match brute-force enumeration.

The instances are planning problems built directly (random byte vectors over a few tiles, random live
ranges, edges with layout pairs, staged homes, carried ties), so every combination of choices can be
enumerated and checked on every tile and step, with no tile classes and no solver code.
"""

from __future__ import annotations

import itertools
import os
from types import SimpleNamespace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipuplan.catalogue import Impl
from ipuplan.layout import Layout, MemClass
from ipuplan.solver.ceiling import floor, free_optimum
from ipuplan.solver.problem import Accounting, Contribution, Edge, Pair, Problem, XContribution
from ipuplan.solver.solve import SolveOptions, Verdict, solve_problem


@st.composite
def problems(draw):
    T = draw(st.integers(1, 5))
    S = draw(st.integers(2, 5))
    n_ops = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vectors, contribs, cycles, xcontribs = [], [], {}, []

    def vec(scale):
        v = rng.integers(0, scale, T) * rng.integers(0, 2, T)
        vectors.append(v.astype(np.int64))
        return len(vectors) - 1

    def span():
        a, b = sorted(rng.integers(0, S, 2))
        return int(a), int(b)

    ops = [f"op{i}" for i in range(n_ops)]
    outs = [Layout(1, 4, 1, pr=1, pc=1, start=s) for s in range(4)]  # distinct layouts by start tile
    impls = {}
    for op in ops:
        k = draw(st.integers(1, 3))
        lst = []
        for i in range(k):
            lst.append(Impl(op, f"{op}.{i}", {}, outs[int(rng.integers(0, 3))], {}, (), (), 0, ()))
            lit = ("impl", op, i)
            cycles[lit] = int(rng.integers(0, 50))
            for _ in range(int(rng.integers(1, 3))):
                a, b = span()
                contribs.append(Contribution(lit, vec(60), MemClass(rng.choice(["std", "il"])), a, b, op))
            for _ in range(int(rng.choice([0, 0, 1, 2]))):  # an implementation may bring several exchanges
                xcontribs.append(XContribution(lit, vec(40), vec(12), 0, op))
        impls[op] = lst
    edges = []
    for c in range(1, n_ops):
        if rng.random() < 0.6:
            pidx = int(rng.integers(0, c))
            prod, cons = ops[pidx], ops[c]
            ns, nd = int(rng.integers(1, len(impls[prod]) + 1)), int(rng.integers(1, 3))
            e = Edge(f"b{pidx}", prod, cons, 0, None, [outs[0]] * ns, [outs[1]] * nd)
            e.src_of_impl = {i: int(rng.integers(0, ns)) for i in range(len(impls[prod]))}
            e.dst_of_impl = {j: int(rng.integers(0, nd)) for j in range(len(impls[cons]))}
            ei = len(edges)
            for a in range(ns):
                for b in range(nd):
                    conv = bool(rng.random() < 0.7)
                    modes = (["direct", "relay"] if rng.random() < 0.5 else ["direct"]) if conv else ["none"]
                    for mode in modes:
                        pr = Pair(ei, a, b, conv, int(rng.integers(0, 30)) if conv else 0, mode)
                        if conv:
                            lo, hi = span()
                            contribs.append(Contribution(pr.lit, vec(60), MemClass.STANDARD, lo, hi, "x"))
                            cycles[pr.lit] = pr.cycles
                            xcontribs.append(XContribution(pr.lit, vec(40), vec(12), lo, "x"))
                        e.pairs.append(pr)
            edges.append(e)
    ties = []
    if n_ops >= 2 and rng.random() < 0.3:
        ties = [("b0", "b1")]
    usable = int(rng.integers(40, 260))
    support = int(rng.integers(0, 30))
    element = int(rng.choice([0, 8, 16]))  # tables occupy whole elements of this size (0: their bytes)
    acct = Accounting(usable, support, int(rng.integers(support // 2, 90)), int(rng.integers(20, 200)), "test",
                      int(rng.integers(10, 90)), int(rng.integers(3, 30)), bool(rng.random() < 0.7), element,
                      int(rng.integers(0, 6)) if element else 0, int(rng.integers(0, 10)))
    nothing = SimpleNamespace(nbytes=0)
    sched = SimpleNamespace(steps=[f"s{t}" for t in range(S)], params={},
                            buffers={"b0": SimpleNamespace(producer=ops[0], value=nothing, first=0, last=0),
                                     "b1": SimpleNamespace(producer=ops[min(1, n_ops - 1)], value=nothing, first=0,
                                                           last=0)})
    target = SimpleNamespace(tiles=T, clock_hz=1_500_000_000)
    return Problem(None, target, acct, sched, impls, edges, vectors, contribs, cycles, 7, ties, 1, xcontribs)


def picks(p: Problem):
    """Every combination of implementation choices whose carried values keep one layout."""
    ops = list(p.impls)
    for combo in itertools.product(*(range(len(p.impls[o])) for o in ops)):
        pick = dict(zip(ops, combo))
        if not any(p.impls[p.sched.buffers[a].producer][pick[p.sched.buffers[a].producer]].out !=
                   p.impls[p.sched.buffers[b].producer][pick[p.sched.buffers[b].producer]].out for a, b in p.ties):
            yield pick


def enumerate_best(p: Problem):
    """The optimal objective over every combination of implementation choices, or None if none fits."""
    best = None
    for pick in picks(p):
        chosen = {("impl", o, i) for o, i in pick.items()}
        per_edge = [[pr.lit for pr in e.pairs if (pr.src, pr.dst) == (e.src_of_impl[pick[e.producer]],
                                                                      e.dst_of_impl[pick[e.consumer]])]
                    for e in p.edges]
        for modes in itertools.product(*per_edge):
            cost = _evaluate(p, chosen | set(modes))
            if cost is not None:
                best = cost if best is None else min(best, cost)
    return best


def _least_room(p: Problem) -> np.ndarray:
    """Region 0 less the support and the allocation of each tile's least tables: the sum over every op and
    every edge of its cheapest candidate's (or pair's) table bytes."""
    def tables(lit):
        return sum((p.vectors[x.tables] for x in p.xcontribs if x.lit == lit), np.zeros(p.target.tiles, np.int64))

    least = sum((np.min([tables(("impl", o, i)) for i in range(len(ims))], axis=0) for o, ims in p.impls.items()),
                np.zeros(p.target.tiles, np.int64))
    least = least + sum((np.min([tables(pr.lit) for pr in e.pairs], axis=0) for e in p.edges if e.pairs),
                        np.zeros(p.target.tiles, np.int64))
    if not p.acct.tables_in_memory:  # no regions in the placement: nothing is forced into region 1
        return np.full(p.target.tiles, np.iinfo(np.int64).max)
    return p.acct.region0 - p.acct.support - p.acct.table_alloc(least)


def _evaluate(p: Problem, chosen: set):
    """Cost of a full choice if it fits every tile and step, else None. Region 1 holds the interleaved data and
    every standard buffer larger than any selection leaves of region 0."""
    T, S = p.target.tiles, len(p.sched.steps)
    total = np.zeros((S, T), np.int64)
    il = np.zeros((S, T), np.int64)
    room = _least_room(p)
    for cb in p.contribs:
        if cb.lit in chosen:
            v = p.vectors[cb.vec]
            total[cb.first:cb.last + 1] += v
            il[cb.first:cb.last + 1] += v if cb.mem is MemClass.INTERLEAVED else np.where(v > room, v, 0)
    a = p.acct
    tables = sum((p.vectors[x.tables] for x in p.xcontribs if x.lit in chosen), np.zeros(T, np.int64))
    frags = sum((p.vectors[x.frags] for x in p.xcontribs if x.lit in chosen), np.zeros(T, np.int64))
    alloc = a.table_alloc(tables) if a.tables_in_memory else 0
    if a.support > a.region0 or (total + alloc > a.capacity).any() or (il > a.region1).any():
        return None
    if (tables > a.table_budget).any() or (frags > a.fragment_limit).any():
        return None
    if a.tables_in_memory and (alloc + a.support > a.region0).any():
        return None
    return p.constant_cycles + sum(c for k, c in p.cycles.items() if k in chosen)


@settings(max_examples=int(os.environ.get("IPUPLAN_SOUNDNESS_EXAMPLES", 220)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_verdict_and_optimum_match_enumeration(p):
    r = solve_problem(p, SolveOptions(relative_gap=0.0, workers=1, slack=False, explain=False))
    best = enumerate_best(p)
    if best is None:
        assert r.verdict is Verdict.INFEASIBLE
        assert r.core, "an infeasible problem names the constraints in conflict"
        cert = r.certificate
        assert cert is not None and cert["kind"] in ("counting", "farkas", "z3"), \
            "the core's exact rows are proved infeasible on their own"
    else:
        assert r.verdict is Verdict.FIT
        assert r.plan["cycles"]["modeled"] == best


def enumerate_free(p: Problem):
    """The cheapest combination of choices with every memory, table and fragment limit ignored (None: a tie no
    two implementations meet)."""
    best = None
    for pick in picks(p):
        cost = p.constant_cycles + sum(p.cycles.get(("impl", o, i), 0) for o, i in pick.items())
        for e in p.edges:
            a, b = e.src_of_impl[pick[e.producer]], e.dst_of_impl[pick[e.consumer]]
            cost += min(p.cycles.get(pr.lit, 0) for pr in e.pairs if (pr.src, pr.dst) == (a, b))
        best = cost if best is None else min(best, cost)
    return best


@settings(max_examples=int(os.environ.get("IPUPLAN_SOUNDNESS_EXAMPLES", 220)) // 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_the_ceiling_bounds_every_plan_and_is_the_memory_free_optimum(p):
    free = enumerate_free(p)
    if free is None:
        return
    c = free_optimum(p, seconds=30.0, workers=1)
    assert c.optimal and c.cycles == free, "the free optimum is the cheapest combination, memory ignored"
    assert floor(p) <= c.cycles, "the floor sums each literal's minimum; no combination is cheaper"
    best = enumerate_best(p)
    assert best is None or c.cycles <= best, "no plan that fits is faster than the ceiling"
