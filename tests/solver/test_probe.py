"""The plan-first probe (solver/probe.py): its hints point at each op's leanest implementation, a probe plan stands
(and passes the checker) when the cycle search ends without one, and a probe INFEASIBLE goes to the certificate."""

from __future__ import annotations

import json

import pytest
from ortools.sat.python import cp_model

from conftest import MODELS, ROOT
from ipuplan.checker import check_plan

SMALL = ROOT / "targets" / "small64.yaml"


def _problem(batch: int = 2):
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    return build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), batch), load_target(SMALL), batch, None,
                         False, None, 0, Catalogue.SHAPED)


def test_the_leanest_implementation_has_the_fewest_own_bytes():
    from ipuplan.solver.probe import leanest, own_bytes
    p = _problem()
    lean = leanest(p)
    assert set(lean) == set(p.impls)
    for op, impls in p.impls.items():
        sizes = [own_bytes(im, p.target.tiles) for im in impls]
        assert sizes[lean[op]] == min(sizes)
        assert len(set(sizes)) == 1 or max(sizes) > sizes[lean[op]]


def test_the_probes_plan_stands_when_the_cycle_search_finds_none(monkeypatch, cli, tmp_path):
    """The cycle search made to end UNKNOWN: the verdict is still FIT, with the probe's plan, and it checks."""
    import ipuplan.solver.solve as solve_mod
    real = solve_mod.solve_rounds

    def cycles_find_nothing(ctx, opts, report, budget, what, keep_free=False):
        status, solver, rounds, added = real(ctx, opts, report, budget, what, keep_free)
        return (cp_model.UNKNOWN, solver, rounds, 0) if what == "cycles" else (status, solver, rounds, added)
    monkeypatch.setattr(solve_mod, "solve_rounds", cycles_find_nothing)
    r = cli("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "-o", tmp_path)
    assert r.code == 0, r.out + r.err
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert check_plan(plan).ok
    stats = json.loads((tmp_path / "solve-stats.json").read_text())
    assert stats["probe"] == "OPTIMAL" and stats["status"] == "UNKNOWN"


def test_a_probe_infeasible_is_certified(monkeypatch, cli, tmp_path):
    """Batch 4 of vit-small with 600 KB per tile held back has no plan: the probe's INFEASIBLE takes the
    certificate path and the certificate checks. One worker refutes this model while loading it, so the
    interleaved probe never runs (OR-tools 9.15's interleaved search aborts the process on such a model)."""
    import ipuplan.solver.probe as probe_mod
    import ipuplan.solver.rounds as rounds_mod
    real_rounds, real_run = probe_mod.solve_rounds, rounds_mod.run_cpsat
    probing = []

    def in_the_probe(ctx, opts, report, budget, what, **kw):
        probing.append(what == "plan")
        try:
            return real_rounds(ctx, opts, report, budget, what, **kw)
        finally:
            probing.pop()

    def never_interleaved(solver, model, *a, **k):
        assert not (probing and probing[-1] and solver.parameters.interleave_search), \
            "the interleaved probe ran on a model one worker refutes"
        return real_run(solver, model, *a, **k)
    monkeypatch.setattr(probe_mod, "solve_rounds", in_the_probe)
    monkeypatch.setattr(rounds_mod, "run_cpsat", never_interleaved)
    r = cli("solve", MODELS / "vit-small.yaml", "--batch", "4", "--target", SMALL, "--headroom", "600000",
            "-o", tmp_path)
    stats = json.loads((tmp_path / "solve-stats.json").read_text())
    assert r.code == 1 and stats["probe"] == "INFEASIBLE", r.out + r.err
    r = cli("check", tmp_path)
    assert r.code == 0 and "CERTIFICATE VERIFIED" in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("share", [0.25])
def test_the_probe_spends_at_most_its_share(share):
    from ipuplan.solver import probe
    assert probe.SHARE == share and probe.MAX_EFFORT <= 120.0


def _undecided(monkeypatch, which):
    """Make the place_plan calls whose 1-based numbers `which` accepts undecided; returns the chosen sets placed."""
    import ipuplan.backend.placement.tiles as tiles
    import ipuplan.job.solve as job
    real = tiles.place_plan
    placed: list[set] = []

    def some_are_undecided(p, chosen, node_budget=tiles.NODE_BUDGET, report=None, deadline=None):
        pp = real(p, chosen, node_budget, report, deadline)
        placed.append(set(chosen))
        if which(len(placed)):
            pp.unknown, pp.reason = 0, "made undecided by the test"
        return pp
    monkeypatch.setattr(job, "place_plan", some_are_undecided)  # where the solve job calls it
    return placed


def _solve_vit(cli, out):
    r = cli("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "-o", out)
    assert r.code == 0, r.out + r.err
    plan = json.loads((out / "plan.json").read_text())
    assert check_plan(plan, json.loads((out / "placement.json").read_text()), base=out).ok
    return r, plan


def test_the_placement_falls_back_on_the_probes_plan(monkeypatch, cli, tmp_path):
    """vit-small b2: when the fastest plan's placement is made undecided, the probe's plan is placed instead,
    FIT says so, and the plan with its placement checks (a probe plan within KEEP_WITHIN of the fastest: no retry)."""
    import ipuplan.job.solve as job
    monkeypatch.setattr(job, "KEEP_WITHIN", 1e9)
    placed = _undecided(monkeypatch, lambda n: n == 1)
    r, plan = _solve_vit(cli, tmp_path)
    assert len(placed) == 2 and placed[0] != placed[1], "the fastest plan first, then the probe's"
    fb = plan["placement"]["fell_back"]
    assert fb["reason"] == "made undecided by the test" and fb["cycles"] < plan["cycles"]["modeled"]
    assert "retry" not in fb and plan["placement"]["headroom_added"] == 0
    assert "was not placed" in r.out


def test_a_much_slower_probe_plan_is_kept_while_the_planner_retries(monkeypatch, cli, tmp_path):
    """The probe's plan placed but slower than the fastest by more than KEEP_WITHIN: the planner solves once more
    with 8 KiB more headroom; its placed plan is faster, so it is the answer (recorded headroom, no fallback)."""
    import ipuplan.job.solve as job
    monkeypatch.setattr(job, "KEEP_WITHIN", 0.0)
    placed = _undecided(monkeypatch, lambda n: n == 1)
    r, plan = _solve_vit(cli, tmp_path)
    assert len(placed) == 3, "the fastest plan, the probe's, then the retry's fastest"
    assert "fell_back" not in plan["placement"] and plan["placement"]["headroom_added"] == job.HEADROOM_STEP
    assert plan["accounting"]["headroom_bytes"] == job.HEADROOM_STEP
    assert "the retry's plan is placed" in r.err + r.out


def test_the_probe_plan_in_hand_stands_when_the_retry_places_nothing(monkeypatch, cli, tmp_path):
    """The same, but nothing the retry finds places: the probe's plan in hand is the answer, saying so."""
    import ipuplan.job.solve as job
    monkeypatch.setattr(job, "KEEP_WITHIN", 0.0)
    placed = _undecided(monkeypatch, lambda n: n != 2)
    r, plan = _solve_vit(cli, tmp_path)
    assert len(placed) == 4, "the fastest plan, the probe's; the retry's fastest and its probe's, both undecided"
    fb = plan["placement"]["fell_back"]
    assert fb["retry"] == {"headroom_added": job.HEADROOM_STEP, "cycles": None}
    assert plan["placement"]["headroom_added"] == 0 and plan["accounting"]["headroom_bytes"] == 0
    assert "found no placed plan" in r.out


def test_an_op_without_implementations_is_unknown_not_a_crash(cli, tmp_path, monkeypatch):
    """A catalogue without an implementation of some op (here the positional add's entry made to offer none)
    has no plan; that proves nothing about the model, so UNKNOWN (exit 3) with the op named, not INFEASIBLE and
    not a traceback."""
    from ipuplan import catalogue
    from ipuplan.ir.graph import OpKind
    full = catalogue.CATALOGUE[OpKind.ADD]
    monkeypatch.setitem(catalogue.CATALOGUE, OpKind.ADD,
                        lambda ctx, sop: [] if sop.key == "embed.pos" else full(ctx, sop))
    r = cli("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "-o", tmp_path / "o")
    assert r.code == 3, r.out + r.err
    assert "no implementation of embed.pos at batch 2 on 64 tiles" in r.out
    doc = json.loads((tmp_path / "o" / "verdict.json").read_text())
    assert doc["verdict"] == "UNKNOWN" and "embed.pos" in doc["unknown"]["reason"]


REFUTED_BY_MAX_LP = """
from ipuplan.catalogue import Catalogue
from ipuplan.model import build_graph, load_model
from ipuplan.model.stage import Stage
from ipuplan.solver.solve import SolveOptions, solve
from ipuplan.target import load_target
g = build_graph(load_model("models/siglip.yaml"), 7, Stage.of(21, 6, 27))
r = solve(g, load_target("targets/c600.yaml"), SolveOptions(batch=7, headroom=16384, slack_effort=0, effort=20,
                                                             explain=False, time_limit=50))
print("VERDICT", r.verdict.value, r.stats.get("probe"))
"""


@pytest.mark.slow
def test_a_model_max_lp_refutes_on_loading_does_not_abort_the_process():
    """SigLIP b7's last 6 layers and head with 16 KiB of headroom: OR-tools 9.15's interleaved search aborts the
    process (CHECK `heuristics.fixed_search != nullptr`) when its max_lp subsolver proves the model infeasible while
    loading it, which the default one-worker configuration does not within its effort. The precheck runs one worker
    with max_lp's relaxation first, so the solve answers (CP-SAT's INFEASIBLE, here without a certificate of its
    own: UNKNOWN, once the 50-s guard stops the search for one) instead of the process dying."""
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", REFUTED_BY_MAX_LP], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "VERDICT" in p.stdout and "INFEASIBLE" in p.stdout.split("VERDICT")[1]


@pytest.mark.slow
def test_the_precheck_is_not_cut_short_by_a_large_models_loading():
    """siglip-large-384 b20 in the compact catalogue: loading the model with max_lp's relaxation takes 11.5
    deterministic seconds and refutes it. A precheck capped at 10 ended UNKNOWN, and the two-worker search that
    followed aborted the process (the CHECK above); capped at 120 and ending after a few conflicts instead, the
    precheck answers."""
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.rounds import build_model, refuted_on_loading
    from ipuplan.solver.solve import SolveOptions
    from ipuplan.target import load_target
    opts = SolveOptions(batch=20, catalogue=Catalogue.COMPACT, slack_effort=0)
    p = build_problem(build_graph(load_model(MODELS / "siglip-large-384.yaml"), 20), load_target(ROOT / "targets" /
                      "c600.yaml"), 20, catalogue=Catalogue.COMPACT)
    classes = problem_classes(p)
    refuted, solver = refuted_on_loading(build_model(p, classes, objective=True), opts, Budget.start(400, 1800))
    assert refuted and solver.deterministic_time > 10


@pytest.mark.slow
def test_the_precheck_loads_the_model_as_max_lp_does():
    """siglip-base-256 b116 in the compact catalogue: its root LP is infeasible when max_lp's constraints are all
    added up front, so max_lp's loading refutes it, and inside the probe's two-worker interleaved search that
    refutation aborted the process (the CHECK above). A precheck at linearization level 2 alone adds them lazily
    and ran out of conflicts undecided; with max_lp's parameters it refutes the model, and the probe answers."""
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.probe import probe
    from ipuplan.solver.rounds import build_model
    from ipuplan.solver.solve import SolveOptions
    from ipuplan.target import load_target
    from ortools.sat.python import cp_model
    opts = SolveOptions(batch=116, catalogue=Catalogue.COMPACT, slack_effort=0)
    p = opts.problem(build_graph(load_model(MODELS / "siglip-base-256.yaml"), opts.batch),
                     load_target(ROOT / "targets" / "c600.yaml"))
    ctx = build_model(p, problem_classes(p), objective=True, free=opts.slack)
    status, plan = probe(ctx, opts, None, Budget.start(400, 1800))
    assert status == cp_model.INFEASIBLE and plan is None


def test_a_hinted_probe_starts_from_the_given_plan():
    """A hint of (op, label) pairs (what `what-if memory` passes: the least-overflowing plan) replaces the leanest
    implementations as the probe's start: with a complete, feasible hint the probe's plan is that plan, here the
    cycle search's fastest, which differs from the leanest; a label this catalogue does not build leaves the
    op to the leanest."""
    import dataclasses
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.probe import leanest, probe, start
    from ipuplan.solver.rounds import build_model
    from ipuplan.solver.solve import SolveOptions, solve_problem
    from ipuplan.catalogue import Catalogue
    p = _problem()
    opts = SolveOptions(batch=2, workers=1, slack=False, effort=30.0, catalogue=Catalogue.SHAPED)
    fast = solve_problem(p, opts)
    labels = {k[1]: p.impls[k[1]][k[2]].label for k in fast.chosen if k[0] == "impl"}
    lean = leanest(p)
    assert any(p.impls[op][lean[op]].label != lab for op, lab in labels.items())
    hinted = dataclasses.replace(opts, hint=tuple(labels.items()))
    ctx = build_model(p, problem_classes(p), objective=True, free=False)
    stats: dict = {}
    status, chosen = probe(ctx, hinted, None, Budget.start(30.0, 600.0), stats)
    assert chosen is not None and stats["probe_hinted_ops"] == len(p.impls)
    assert {k[1]: p.impls[k[1]][k[2]].label for k in chosen if k[0] == "impl"} == labels
    op = next(iter(p.impls))
    picks, hit = start(p, tuple(labels.items()) + ((op, "no such implementation"),))
    assert hit == len(p.impls) - 1 and picks[op] == lean[op]
