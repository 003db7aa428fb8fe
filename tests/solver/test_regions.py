"""The regions family on hand-built problems: a standard buffer larger than what region 0 can hold beside the
support and the tile's least exchange tables counts in region 1, on the class member with the least room."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ipuplan.catalogue import Impl
from ipuplan.layout import Layout, MemClass
from ipuplan.solver.classes import problem_classes
from ipuplan.solver.problem import Accounting, Contribution, Problem, XContribution
from ipuplan.solver.rounds import build_model
from ipuplan.solver.rows import Rows, region0_room
from ipuplan.solver.solve import SolveOptions, Verdict, solve_problem

# region 0: 60 B, 20 of them support; tables in whole 8 B elements, no guard; region 1: 100 B
ACCT = Accounting(usable=160, support=20, region0=60, region1=100, mode="test", table_budget=64, fragment_limit=16,
                  tables_in_memory=True, table_element=8, table_guard=0)
TABLES = np.array([8, 24])  # every implementation's exchange tables: rooms 60 - 20 - 8 = 32 and 60 - 20 - 24 = 16


def _problem(impls: list[tuple[int, int]], acct: Accounting = ACCT) -> Problem:
    """One op on two tiles with identical data bytes; implementation i holds std_i standard and il_i interleaved
    bytes on both tiles for the one step, costs 10 * (i + 1) cycles and brings the same tables."""
    vectors, contribs, xcontribs, cycles, lst = [], [], [], {}, []

    def vec(v) -> int:
        vectors.append(np.asarray(v, np.int64))
        return len(vectors) - 1

    for i, (std, il) in enumerate(impls):
        lit = ("impl", "op", i)
        lst.append(Impl("op", f"op.{i}", {}, Layout(1, 4, 1, pr=1, pc=1), {}, (), (), 0, ()))
        cycles[lit] = 10 * (i + 1)
        contribs.append(Contribution(lit, vec([std, std]), MemClass.STANDARD, 0, 0, f"op.{i} standard"))
        contribs.append(Contribution(lit, vec([il, il]), MemClass.INTERLEAVED, 0, 0, f"op.{i} interleaved"))
        xcontribs.append(XContribution(lit, vec(TABLES), vec([1, 1]), 0, "op"))
    sched = SimpleNamespace(steps=["s0"], params={}, buffers={})
    target = SimpleNamespace(tiles=2, clock_hz=1_500_000_000)
    return Problem(None, target, acct, sched, {"op": lst}, [], vectors, contribs, cycles, 0, [], 1, xcontribs)


def _solve(p: Problem):
    return solve_problem(p, SolveOptions(relative_gap=0.0, workers=1, slack=False, explain=False))


def test_room_is_region0_less_support_and_least_tables():
    assert region0_room(_problem([(30, 72)])).tolist() == [32, 16]
    seeds = Accounting(160, 20, 60, 100, "seeds", 64, 16, False, 0, 0)
    assert region0_room(_problem([(30, 72)], seeds)) is None


def test_a_standard_buffer_too_large_for_region_0_counts_in_region_1():
    # 30 B fit tile 0's room (32) but not tile 1's (16): on tile 1 region 1 needs 72 + 30 > 100, though the
    # tile's 102 + 24 B fit its 140 B of capacity and region 0's free bytes (16) plus region 1's (28) exceed
    # the standard 30 B: splitting bytes between the regions would admit it
    r = _solve(_problem([(30, 72), (10, 72)]))
    assert r.verdict is Verdict.FIT
    assert ("impl", "op", 1) in r.chosen and ("impl", "op", 0) not in r.chosen
    # 16 B fit tile 1's room: the fast implementation fits
    assert ("impl", "op", 0) in _solve(_problem([(16, 84), (10, 70)])).chosen


def test_the_class_row_is_that_of_the_member_with_the_least_room():
    p = _problem([(30, 72)])
    classes = problem_classes(p)
    assert len(classes) == 1 and classes[0].rep == 0  # identical data bytes: one class, tile 0 its representative
    ctx = build_model(p, classes, objective=False)
    names = [g.name for _, g in ctx.guards if g.family == "regions" and g.info[0] == "il"]
    assert names and all(n.endswith(", tile 1]") for n in names)


def test_infeasible_on_region_1_with_a_certificate_on_the_tile():
    r = _solve(_problem([(30, 72)]))
    assert r.verdict is Verdict.INFEASIBLE
    cert = r.certificate
    assert cert["kind"] in ("counting", "farkas", "z3")
    assert any(row["kind"] == "region1" and row["tile"] == 1 for row in cert["rows"])
    row = Rows(r.problem).row("region1", 1, 0)
    assert row.coef == {("impl", "op", 0): 102} and row.cap == 100
    assert Rows(r.problem).row("region1", 0, 0).coef == {("impl", "op", 0): 72}  # 30 B fit tile 0's room


def test_the_checker_derives_the_same_region_1_rows():
    """vit-small b3 on small64 (compact): the checker's own rooms and region-1 rows equal the solver's, with the
    rooms as they are and lowered until thousands of standard buffers count in region 1."""
    from conftest import MODELS, ROOT
    from ipuplan.catalogue import Catalogue
    from ipuplan.catalogue.records import regenerate_catalogue
    from ipuplan.checker.plan import Limits, steps_of
    from ipuplan.checker.rows import least_room, row_terms
    from ipuplan.checker.space import build_space
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target

    t, g = load_target(ROOT / "targets" / "small64.yaml"), build_graph(load_model(MODELS / "vit-small.yaml"), 3)
    p = build_problem(g, t, 3, None, True, None, 0, Catalogue.COMPACT)
    sp = build_space(g, t, 3, regenerate_catalogue(g, t, 3, "compact"), relays=True, where="test", whole_rows=True,
                     compact=True, steps=steps_of("compact"))
    lim = Limits.derive(t, {"relays": True, "catalogue": "compact", "headroom": 0}, [o.op.kind for o in sp.prog.ops],
                        "test")
    room = least_room(sp, lim)
    assert room.tolist() == region0_room(p).tolist()

    def named(k):  # the solver numbers an edge; the checker names its consumer and input
        return ("pair", p.edges[k[1]].consumer, p.edges[k[1]].index) + tuple(k[2:]) if k[0] == "pair" else k

    rows = Rows(p)
    for lower in (0, int(room.min()) - 2000):
        rows.room, rows._memo = region0_room(p) - lower, {}
        spilled = 0
        for tile in range(0, t.tiles, 7):
            for s in range(len(p.steps)):
                mine = {named(k): v for k, v in rows.row("region1", tile, s).coef.items() if v}
                coef, _, cap = row_terms(sp, lim, "region1", tile, s, room - lower)
                assert mine == {sp.lits[i]: int(coef[i]) for i in np.flatnonzero(coef)}, (tile, p.steps[s])
                live = (rows.first <= s) & (s <= rows.last) & ~rows.il
                spilled += int((live & (rows.D[:, tile] > rows.room[tile])).sum())
        assert (spilled > 1000) == (lower > 0)
