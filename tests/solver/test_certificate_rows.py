"""The certificate builder's fast paths against its exact ones: the counting bounds of every memory row computed
at once equal `cheapest` of each row built alone, Farkas weights with the rules prebuilt equal those without, and
the exact margin summed in integers equals its sum in fractions."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS, ROOT

SMALL = ROOT / "targets" / "small64.yaml"


def _problem(catalogue: str, batch: int):
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    return build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), batch), load_target(SMALL), batch, None,
                         True, None, 0, Catalogue(catalogue))


@pytest.fixture(scope="module", params=[("shaped", 2), ("compact", 3)], ids=lambda v: f"{v[0]}-b{v[1]}")
def problem(request):
    return _problem(*request.param)


@pytest.mark.parametrize("tables", ["elements", "bytes", "not in memory"])
def test_memory_bounds_equal_cheapest_of_every_row(problem, tables):
    from ipuplan.solver.certificate import MemoryBounds, Rows, cheapest, groups
    from ipuplan.solver.classes import problem_classes
    acct = {"elements": problem.acct,
            "bytes": dataclasses.replace(problem.acct, table_element=0),
            "not in memory": dataclasses.replace(problem.acct, tables_in_memory=False)}[tables]
    p = dataclasses.replace(problem, acct=acct)
    rows, gs = Rows(p), groups(p)
    bounds = MemoryBounds(rows, gs)
    classes = problem_classes(p)
    nonzero = 0
    for c in classes:
        fast = bounds(int(c.rep))
        slow = [cheapest(p, rows.row("memory", int(c.rep), s), gs)[0] for s in range(len(p.steps))]
        assert fast.tolist() == slow, f"tile {c.rep}"
        nonzero += sum(v > 0 for v in slow)
    assert nonzero > len(classes), "the rows count bytes"
    if tables == "elements":
        with_tables = [r for r in (rows.row("memory", t, 0) for t in range(p.target.tiles)) if r.tcoef]
        assert with_tables, "some row allocates exchange tables in whole elements"


def test_farkas_with_the_rules_prebuilt_is_the_same_lp(tmp_path):
    """vit-small b4 on 16 tiles with 520,000 B held back (the counting certificate's case): its tightest row has
    Farkas weights; with the selection rules built once the weights, multipliers and margin are the same."""
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.certificate import Rows, _RuleSystem, cheapest, farkas, groups
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    from tests_helpers import target_with_tiles
    t = target_with_tiles(tmp_path, 16)
    p = build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), 4), load_target(t), 4, headroom=520_000,
                      catalogue=Catalogue.SHAPED)
    rows, gs = Rows(p), groups(p)
    row = max((rows.row("memory", tile, s) for tile in range(16) for s in range(len(p.steps))),
              key=lambda r: cheapest(p, r, gs)[0])
    plain, fast = farkas(p, [row]), farkas(p, [row], _RuleSystem(p))
    assert plain is not None and fast == plain


def _margin_in_fractions(rows, weights, rules, mult, fixed=frozenset()):
    """The exact margin's definition, summed term by term in fractions."""
    from fractions import Fraction
    c, d = {}, Fraction(0)
    for r, w in zip(rows, weights):
        for k, v in r.linear.items():
            c[k] = c.get(k, 0) + w * v
        d += w * r.cap
    for name, coefs, rhs, _ in rules:
        if m := mult.get(name):
            for k, v in coefs.items():
                c[k] = c.get(k, 0) + m * v
            d += m * rhs
    return sum((v for k, v in c.items() if v < 0 or k in fixed), Fraction(0)) - d


_floats = st.floats(0, 1e6, allow_subnormal=True) | st.floats(0, 1e-300, allow_subnormal=True)
_coefs = st.dictionaries(st.integers(0, 7), st.integers(-10**6, 10**6), max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_coefs, st.integers(-10**9, 10**9), _floats), max_size=5),
       st.lists(st.tuples(_coefs, st.integers(-3, 3), _floats), max_size=5),
       st.frozensets(st.integers(0, 7)))
def test_the_exact_margin_in_integers_is_the_sum_in_fractions(rows, rules, fixed):
    """Weights are the LP's floats taken exactly (subnormal ones too), coefficients and right-hand sides
    integers: the margin on one common denominator is the same fraction as the sum term by term."""
    from fractions import Fraction
    from ipuplan.solver.certificate import _exact_margin
    from ipuplan.solver.rows import Row
    rs = [Row("memory", 0, 0, coef, cap) for coef, cap, _ in rows]
    weights = [Fraction(w) for _, _, w in rows]
    named = [(f"r{i}", coef, rhs, False) for i, (coef, rhs, _) in enumerate(rules)]
    mult = {f"r{i}": Fraction(m) for i, (_, _, m) in enumerate(rules) if m}
    assert _exact_margin(rs, weights, named, mult, fixed) == _margin_in_fractions(rs, weights, named, mult, fixed)


def test_the_exact_margin_of_a_real_farkas_proof(tmp_path):
    """vit-small b4 on 16 tiles, 520,000 B held back: the margin `farkas` returns is the fraction sum's."""
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.certificate import Rows, _RuleSystem, cheapest, farkas, groups
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    from tests_helpers import target_with_tiles
    t = target_with_tiles(tmp_path, 16)
    p = build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), 4), load_target(t), 4, headroom=520_000,
                      catalogue=Catalogue.SHAPED)
    rows, gs = Rows(p), groups(p)
    top = sorted((rows.row("memory", tile, s) for tile in range(16) for s in range(len(p.steps))),
                 key=lambda r: -cheapest(p, r, gs)[0])[:3]
    system = _RuleSystem(p)
    weights, mult, margin = farkas(p, top, system)
    assert margin > 0 and margin == _margin_in_fractions(top, weights, system.rules, mult)
