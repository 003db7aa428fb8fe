"""The certificate builder's fast paths against its exact ones: the counting bounds of every memory row computed
at once equal `cheapest` of each row built alone, and Farkas weights with the rules prebuilt equal those without."""

from __future__ import annotations

import dataclasses

import pytest

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
    from ipuplan.solver.classes import tile_classes
    acct = {"elements": problem.acct,
            "bytes": dataclasses.replace(problem.acct, table_element=0),
            "not in memory": dataclasses.replace(problem.acct, tables_in_memory=False)}[tables]
    p = dataclasses.replace(problem, acct=acct)
    rows, gs = Rows(p), groups(p)
    bounds = MemoryBounds(rows, gs)
    classes = tile_classes([p.vectors[i] for i in sorted({cb.vec for cb in p.contribs})], p.target.tiles)
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
