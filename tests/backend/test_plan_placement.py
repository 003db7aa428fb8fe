"""Placing whole plans: every tile's buffers at addresses, the artefact checked independently, edits rejected,
and a proven placement failure turned into a planning cut."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from ipuplan.backend.placement import Buffer, Instance, place, violations
from ipuplan.backend.placement.greedy import best_fit, first_fit
from ipuplan.backend.placement.problem import Placement
from ipuplan.backend.placement.tiles import PlanPlacement, placement_doc, slack
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
    import ipuplan.job.solve as job
    real = tiles.place_plan
    seen = []

    def failing_once(p, chosen, **kw):
        pp = real(p, chosen, **kw)
        if not seen:
            multi = sorted(lit for lit in chosen if lit[0] == "impl" and len(p.impls[lit[1]]) > 1)
            seen.append(multi[0])
            pp.failed, pp.reason, pp.cut = 0, "tile 0: (forced by the test)", [multi[0]]
        return pp

    monkeypatch.setattr(job, "place_plan", failing_once)  # where the solve job calls it
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
    import ipuplan.job.solve as job
    real = tiles.place_plan

    def no_nodes(p, chosen, **kw):
        pp = real(p, chosen, **kw)
        pp.unknown, pp.reason = 0, "tile 0: the node budget of 0 ran out (forced by the test)"
        return pp

    monkeypatch.setattr(job, "place_plan", no_nodes)
    assert run_main("solve", MODELS / "vit-small.yaml", "-o", tmp_path) == 3
    v = json.loads((tmp_path / "verdict.json").read_text())
    assert v["verdict"] == "UNKNOWN" and "placement" in v["unknown"]["reason"]
    assert not (tmp_path / "plan.json").exists()


def test_a_placement_the_time_limit_stops_is_unknown_and_not_solved_again(monkeypatch, tmp_path):
    import ipuplan.backend.placement.tiles as tiles
    import ipuplan.job.solve as job
    real, solves, deadlines = tiles.place_plan, [], []
    real_solve = job.solve

    def timed_out(p, chosen, **kw):
        deadlines.append(kw["deadline"])
        pp = real(p, chosen, **kw)
        pp.unknown, pp.timed_out, pp.reason = 0, True, "tile 0: the --time-limit ran out (forced by the test)"
        return pp

    def counting(*a, **kw):
        solves.append(kw["deadline"])
        return real_solve(*a, **kw)

    monkeypatch.setattr(job, "place_plan", timed_out)
    monkeypatch.setattr(job, "solve", counting)
    assert run_main("solve", MODELS / "vit-small.yaml", "-o", tmp_path) == 3
    v = json.loads((tmp_path / "verdict.json").read_text())
    assert "--time-limit ran out" in v["unknown"]["reason"]
    assert len(solves) == 1 and deadlines == solves  # one job-wide deadline, no solve with more headroom


# capacity 8: first fit fails in every order ([4, steps 1-2] then [3, 3] and [2, 3] beside [3, steps 2-3]),
# yet a placement exists (0, 0, 3, 5)
_STUBBORN = Instance(8, (Buffer("a", 4, 1, 2), Buffer("b", 3, 3, 3), Buffer("c", 2, 3, 3), Buffer("d", 3, 2, 3)))
# 9 bytes live at step 0 on 8
_FULL = Instance(8, (Buffer("a", 5, 0, 0), Buffer("b", 4, 0, 0)))


def _plan_of(monkeypatch, insts, replays=False, **consts):
    """place_plan over hand-built tile groups (one tile each), with the canonical searches given no nodes and
    (unless `replays`) no replays of one group's placement on another, so that only CP-SAT can decide, and
    `consts` set on the module."""
    import numpy as np

    import ipuplan.backend.placement.greedy as greedy
    import ipuplan.backend.placement.tiles as tiles
    groups = [tiles.TileGroup(np.array([t]), inst) for t, inst in enumerate(insts)]
    monkeypatch.setattr(tiles, "tile_groups", lambda p, chosen: groups)
    monkeypatch.setattr(tiles, "tile_literals", lambda p, chosen, tile: [("tile", tile)])
    monkeypatch.setattr(tiles, "QUICK_NODES", 0)
    if not replays:
        monkeypatch.setattr(greedy, "NEIGHBOURS", 0)
    for k, v in consts.items():
        monkeypatch.setattr(tiles, k, v)
    assert first_fit(_STUBBORN) is None and best_fit(_STUBBORN) is None
    return tiles.place_plan(None, set(), node_budget=0)


def test_the_exact_engines_take_every_group_first_fit_leaves_within_their_budget(monkeypatch):
    pp = _plan_of(monkeypatch, [_STUBBORN] * 12)  # more than the 8 groups a plan once gave them
    assert pp.placed and pp.methods == ["CP-SAT"] * 12 and pp.work > 0
    assert all(violations(_STUBBORN, o) == [] for o in pp.offsets)


def test_a_group_the_first_round_leaves_undecided_gets_a_longer_run(monkeypatch):
    pp = _plan_of(monkeypatch, [_STUBBORN] * 3, CPSAT_FIRST=0.0, CPSAT_SECONDS=0.0)
    assert pp.placed and pp.methods == ["CP-SAT"] * 3
    pp = _plan_of(monkeypatch, [_STUBBORN] * 3, CPSAT_FIRST=0.0, CPSAT_SECONDS=0.0, HARD_SECONDS=0.0)
    assert not pp.placed and pp.unknown == 0 and pp.failed is None


def test_the_budget_spent_leaves_the_plan_undecided(monkeypatch):
    pp = _plan_of(monkeypatch, [_STUBBORN] * 5, EXACT_BUDGET=0.0)
    assert pp.unknown == 0 and "ran out with 5 groups open" in pp.reason and pp.offsets == [None] * 5


def test_a_group_proven_unplaceable_is_the_cut_and_ends_the_placement(monkeypatch):
    # the overfull group is the tightest (slack -1): taken first, it ends the placement before the others
    pp = _plan_of(monkeypatch, [_STUBBORN, _FULL, _STUBBORN])
    assert pp.failed == 1 and pp.cut == [("tile", 1)] and "tile 1" in pp.reason
    assert pp.offsets == [None, None, None] and pp.work == 0


# _STUBBORN with a byte to spare at its fullest step
_LOOSE = Instance(9, _STUBBORN.buffers)


def test_slack_is_the_free_bytes_at_the_fullest_step():
    assert slack(_STUBBORN) == 0 and slack(_FULL) == -1 and slack(_LOOSE) == 1
    assert slack(Instance(8, ())) == 8


def test_the_tightest_groups_go_first_and_an_undecided_one_stops_the_rest(monkeypatch):
    import ipuplan.backend.placement.tiles as tiles
    seen = []

    def undecided_on_stubborn(inst, seconds, deadline=None):
        seen.append(inst)
        return Placement([None] * len(inst.buffers), False, False, 0, "CP-SAT", "undecided (forced by the test)")

    monkeypatch.setattr(tiles, "place_cpsat", undecided_on_stubborn)
    monkeypatch.setattr(tiles, "first_fit", lambda inst: None)  # either would place _LOOSE
    monkeypatch.setattr(tiles, "best_fit", lambda inst: None)
    pp = _plan_of(monkeypatch, [_LOOSE, _STUBBORN, _LOOSE], CPSAT_FIRST=0.0, CPSAT_SECONDS=0.0)
    # the first engines leave tile 1 (the tightest) undecided, its longer run too: the loose groups never start
    assert pp.unknown == 1 and "tile 1" in pp.reason and seen == [_STUBBORN]
    assert pp.offsets == [None, None, None]


@pytest.mark.parametrize("exact_groups", [32, 1], ids=["exact engines", "sweep"])
def test_the_wall_clock_stops_the_placement_undecided_and_says_so(monkeypatch, exact_groups):
    import time
    import ipuplan.backend.placement.tiles as tiles
    groups = [tiles.TileGroup(np.array([t]), _STUBBORN) for t in range(3)]
    monkeypatch.setattr(tiles, "tile_groups", lambda p, chosen: groups)
    monkeypatch.setattr(tiles, "QUICK_NODES", 0)
    monkeypatch.setattr(tiles, "EXACT_GROUPS", exact_groups)  # 1: three groups are more than the exact engines take
    pp = tiles.place_plan(None, set(), node_budget=0, deadline=time.perf_counter() - 1)
    assert pp.unknown == 0 and pp.timed_out and "--time-limit ran out" in pp.reason and pp.work == 0
    if exact_groups == 1:
        assert "left 3 of 3" in pp.reason
    pp = tiles.place_plan(None, set(), node_budget=0, deadline=time.perf_counter() + 600)
    assert pp.placed and not pp.timed_out


def test_more_groups_than_the_exact_engines_take_are_undecided_once_the_sweep_is_spent(monkeypatch):
    pp = _plan_of(monkeypatch, [_STUBBORN] * 4, EXACT_GROUPS=3, SWEEP_BUDGET=0.0)
    assert pp.unknown == 0 and pp.work == 0 and "the cheap placements and a short search left 4 of 4 tile groups" in pp.reason
    assert "at most 3 per plan" in pp.reason


def test_the_sweep_places_more_groups_than_the_exact_engines_take(monkeypatch):
    import ipuplan.backend.placement.tiles as tiles
    given = []
    real = tiles._exact
    monkeypatch.setattr(tiles, "_exact", lambda groups, left, *rest: given.append(list(left)) or real(groups, left,
                                                                                                        *rest))
    pp = _plan_of(monkeypatch, [_STUBBORN] * 4, EXACT_GROUPS=3)
    assert pp.placed and pp.methods == ["CP-SAT"] * 4 and given == [[]] and pp.work > 0
    assert all(violations(_STUBBORN, o) == [] for o in pp.offsets)


def test_the_group_the_sweep_places_is_replayed_on_its_neighbours(monkeypatch):
    # one CP-SAT run for the five
    pp = _plan_of(monkeypatch, [_STUBBORN] + _KIN + [_STUBBORN], replays=True, EXACT_GROUPS=1)
    assert pp.placed and pp.methods == ["CP-SAT"] + ["replay of tile 0"] * 4


def test_a_group_the_sweep_proves_unplaceable_is_the_cut(monkeypatch):
    pp = _plan_of(monkeypatch, [_STUBBORN, _FULL, _STUBBORN], EXACT_GROUPS=1)
    assert pp.failed == 1 and pp.cut == [("tile", 1)] and "CP-SAT proves no placement" in pp.reason
    assert pp.offsets == [None, None, None]


def test_the_sweep_stops_at_its_budget_and_counts_its_undecided_runs(monkeypatch):
    import ipuplan.backend.placement.tiles as tiles
    runs = []

    def undecided(inst, seconds, deadline=None):
        runs.append(seconds)
        return Placement([None] * len(inst.buffers), False, False, 0, "CP-SAT", "undecided (forced by the test)",
                         work=0.01)

    monkeypatch.setattr(tiles, "place_cpsat", undecided)
    pp = _plan_of(monkeypatch, [_STUBBORN] * 5, EXACT_GROUPS=1, SWEEP_SECONDS=0.01, SWEEP_BUDGET=0.025)
    assert len(runs) == 3 and runs[-1] == pytest.approx(0.005)  # the last run gets what the budget has left
    assert pp.unknown is not None and pp.work == pytest.approx(0.03)
    assert "a sweep of short CP-SAT runs and a short search left 5 of 5 tile groups" in pp.reason


# _STUBBORN's neighbours: the same buffers, a byte or two more or less here and there; first fit and best fit
# place none of them, while _STUBBORN's own placement, replayed, places each
_KIN = [Instance(8, (Buffer("a", 4, 1, 2), Buffer("b", 2, 3, 3), Buffer("c", 3, 3, 3), Buffer("d", 3, 2, 3))),
        Instance(9, (Buffer("a", 4, 1, 2), Buffer("b", 2, 3, 3), Buffer("c", 3, 3, 3), Buffer("d", 4, 2, 3))),
        Instance(10, (Buffer("a", 5, 1, 2), Buffer("b", 4, 3, 3), Buffer("c", 2, 3, 3), Buffer("d", 4, 2, 3)))]


def test_a_group_the_exact_engines_place_is_replayed_on_its_neighbours(monkeypatch):
    assert all(first_fit(i) is None and best_fit(i) is None for i in _KIN)
    # all are equally tight (slack 0): tile 0 goes to CP-SAT first, and its address order places the rest
    pp = _plan_of(monkeypatch, [_STUBBORN] + _KIN + [_STUBBORN] * 2, replays=True)
    assert pp.placed and pp.methods == ["CP-SAT"] + ["replay of tile 0"] * 5
    assert all(violations(g.inst, o) == [] for g, o in zip(pp.groups, pp.offsets))
    assert pp.summary()["by_replay"] == 5 and pp.summary()["by_cpsat"] == 1
    pp = _plan_of(monkeypatch, [_STUBBORN] + _KIN + [_STUBBORN] * 2)
    assert pp.placed and pp.methods == ["CP-SAT"] * 6


def test_a_group_the_short_search_proves_unplaceable_is_the_cut(monkeypatch):
    pp = _plan_of(monkeypatch, [_LOOSE, _FULL, _LOOSE], QUICK_NODES=5_000)
    # until the proof was heeded, a plan with such a group counted as placed
    assert not pp.placed and pp.failed == 1 and pp.cut == [("tile", 1)] and "tile 1" in pp.reason
    assert "no placement of the 2 buffers" in pp.reason and pp.offsets[1] is None and pp.work == 0
