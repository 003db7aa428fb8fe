"""Placing whole plans: every tile's buffers at addresses, the artefact checked independently, edits rejected,
and a proven placement failure turned into a planning cut."""

from __future__ import annotations

import copy
import json

import pytest

from ipuplan.backend.placement import Instance, place
from ipuplan.backend.placement.tiles import PlanPlacement, placement_doc
from ipuplan.checker.plan import check_plan
from ipuplan.model import build_graph, load_model
from ipuplan.solver.solve import SolveOptions, solve
from ipuplan.target import load_target
from tests.conftest import MODELS, TARGET
from tests.tests_helpers import run_main


@pytest.fixture(scope="module")
def placed(tmp_path_factory):
    d = tmp_path_factory.mktemp("vs")
    assert run_main("solve", MODELS / "vit-small.yaml", "--batch", "2", "-o", d) == 0
    return json.loads((d / "plan.json").read_text()), json.loads((d / "placement.json").read_text()), d


def test_fit_has_every_tile_placed_and_checked(placed, cli):
    plan, pl, d = placed
    assert plan["placement"]["tiles"] == 1472 and plan["placement"]["cuts"] == 0
    assert sorted(t for g in pl["groups"] for a, b in g["tiles"] for t in range(a, b + 1)) == list(range(1472))
    r = cli("check", d)
    assert r.code == 0 and "every buffer of all 1472 tiles at an address" in r.out


def _largest(pl):
    return max(pl["groups"], key=lambda g: len(g["buffers"]))


def _data(g, part="(output)"):
    return [b for b in g["buffers"] if part in b[0]]


EDITS = {
    "two live buffers overlap": lambda g: _data(g, "(resident")[1].__setitem__(1, _data(g, "(resident")[0][1]),
    "a buffer dropped": lambda g: g["buffers"].remove(_data(g)[0]),
    "a buffer the plan does not have": lambda g: g["buffers"].append(["ghost (output)", 300000, 8, 0, 1]),
    "misaligned": lambda g: _data(g)[0].__setitem__(1, _data(g)[0][1] + 4),
    "a fixed reservation moved": lambda g: [b for b in g["buffers"] if b[0] == "runtime state"][0].__setitem__(1, 49160),
    "a size edited": lambda g: _data(g)[0].__setitem__(2, _data(g)[0][2] + 8),
    "live steps edited": lambda g: _data(g)[0].__setitem__(4, _data(g)[0][4] + 1),
    "a tile placed twice": lambda g: g["tiles"].append(list(g["tiles"][0])),
    "across the region boundary": lambda g: _data(g)[0].__setitem__(1, 212992 - 8),
    "outside memory": lambda g: _data(g)[0].__setitem__(1, 637872),
    "not a record": lambda g: g["buffers"][0].__setitem__(1, "0x4c000"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_edited_placements_are_rejected(placed, edit):
    plan, pl, _ = placed
    bad = copy.deepcopy(pl)
    EDITS[edit](_largest(bad))
    rep = check_plan(plan, bad)
    assert not rep.ok, edit


def test_a_placement_that_ignores_element_conflicts_is_rejected(placed):
    """Re-place every tile group without its conflicts: first fit then packs send and receive buffers side by
    side, and the checker (deriving the conflicts itself) must notice."""
    from ipuplan.backend.placement.requests import tile_groups
    plan, _, _ = placed
    g = build_graph(load_model(str(MODELS / "vit-small.yaml")), 2)
    r = solve(g, load_target(str(TARGET)), SolveOptions(batch=2))
    groups = tile_groups(r.problem, r.chosen)
    assert any(gr.inst.conflicts for gr in groups)
    loose = [type(gr)(gr.tiles, Instance(gr.inst.capacity, gr.inst.buffers, frozenset(), gr.inst.barriers,
                                         gr.inst.elements)) for gr in groups]
    offs = [place(gr.inst).offsets for gr in loose]
    doc = placement_doc(r.problem, PlanPlacement(loose, offs, ["first fit"] * len(loose)))
    rep = check_plan(plan, doc)
    assert not rep.ok and any("share a memory element" in v for v in rep.violations), rep.violations[:3]


def test_a_proven_placement_failure_becomes_a_cut(monkeypatch, tmp_path):
    """The first plan's placement is made to fail on one tile; the planner must re-solve without that
    combination of choices, and the second plan is placed for real."""
    import ipuplan.backend.placement.tiles as tiles
    real = tiles.place_plan
    seen = []

    def failing_once(p, chosen, **kw):
        pp = real(p, chosen, **kw)
        if not seen:
            multi = sorted(lit for lit in chosen if lit[0] == "impl" and len(p.impls[lit[1]]) > 1)
            seen.append(multi[0])
            pp.failed, pp.reason, pp.cut = 0, "tile 0: (forced by the test)", [multi[0]]
        return pp

    monkeypatch.setattr(tiles, "place_plan", failing_once)
    assert run_main("solve", MODELS / "vit-small.yaml", "--batch", "2", "-o", tmp_path) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    op, i = seen[0][1], seen[0][2]
    assert plan["placement"]["cuts"] == 1
    assert plan["choices"][op]["impl"] != i
    assert check_plan(plan, json.loads((tmp_path / "placement.json").read_text())).ok


def test_seeds_accounting_places_in_one_flat_budget(tmp_path):
    assert run_main("solve", MODELS / "vit-small.yaml", "--support-reserve", "49152", "-o", tmp_path) == 0
    pl = json.loads((tmp_path / "placement.json").read_text())
    assert pl["base"] == 0 and pl["capacity"] == 586960
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert check_plan(plan, pl).ok


def test_verdict_unknown_when_a_tile_cannot_be_placed_within_the_node_budget(monkeypatch, tmp_path):
    import ipuplan.backend.placement.tiles as tiles
    real = tiles.place_plan

    def no_nodes(p, chosen, **kw):
        pp = real(p, chosen, **kw)
        pp.unknown, pp.reason = 0, "tile 0: the node budget of 0 ran out (forced by the test)"
        return pp

    monkeypatch.setattr(tiles, "place_plan", no_nodes)
    assert run_main("solve", MODELS / "vit-small.yaml", "-o", tmp_path) == 3
    v = json.loads((tmp_path / "verdict.json").read_text())
    assert v["verdict"] == "UNKNOWN" and "placement" in v["unknown"]["reason"]
    assert not (tmp_path / "plan.json").exists()
