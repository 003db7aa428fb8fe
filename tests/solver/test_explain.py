"""Explanations and what-if answers on the small model: minimal cores, deficits, boundary pairs."""

from __future__ import annotations

import json

import pytest

from conftest import MODELS
from tests_helpers import target_with_tiles as _target

HEADROOM = "520000"  # held back on every tile: vit-small batch 4 no longer fits 16 tiles


def _status(ctx, assumptions, seconds):
    from ortools.sat.python import cp_model
    ctx.m.ClearAssumptions()
    ctx.m.AddAssumptions(assumptions)
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_time_in_seconds = seconds
    return s.Solve(ctx.m)


def test_every_guard_has_its_own_name(tmp_path):
    """A core names its constraints: two guards of one name (attention reads K and V of one kv buffer, two
    edges) would be one line of an explanation for two constraints."""
    from collections import Counter

    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.solve import build_model
    from ipuplan.target import load_target
    p = build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), 4), load_target(_target(tmp_path, 16)), 4)
    ctx = build_model(p, problem_classes(p), objective=False)
    assert sum(e.buf == "head.kv" and e.consumer == "head.attn" for e in p.edges) == 2, "the case has two such edges"
    names = Counter(info.name for _, info in ctx.guards)
    assert [n for n, k in names.items() if k > 1] == []


def test_minimal_core_every_member_necessary(tmp_path):
    """Removing any member of the reported core leaves a feasible sub-problem."""
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.solve import SolveOptions, Verdict, build_model, solve
    from ipuplan.solver.classes import problem_classes
    from ipuplan.target import load_target
    from ortools.sat.python import cp_model

    t = load_target(_target(tmp_path, 16))
    g = build_graph(load_model(MODELS / "vit-small.yaml"), 4)
    r = solve(g, t, SolveOptions(batch=4, headroom=int(HEADROOM)))
    assert r.verdict is Verdict.INFEASIBLE and r.core and r.stats["core_minimal"]
    p = r.problem
    ctx = build_model(p, problem_classes(p), objective=False)
    from ipuplan.solver.solve import _same_rows
    _same_rows(ctx, r.model_rows)
    lits = {info.name: v for v, info in ctx.guards}
    assert _status(ctx, [lits[c.name] for c in r.core], 30) == cp_model.INFEASIBLE
    for i in range(len(r.core)):
        rest = [lits[c.name] for j, c in enumerate(r.core) if j != i]
        assert _status(ctx, rest, 30) in (cp_model.FEASIBLE, cp_model.OPTIMAL), r.core[i].name


@pytest.mark.parametrize("up_front", [False, True])
def test_a_core_re_solved_either_way_is_sufficient(tmp_path, up_front):
    """The core's re-solve at max_lp's linearization level, with its LP constraints lazy (the solve's) or all up
    front (`as_max_lp`, bench/core_relaxation.py): the guards it returns, asserted alone, admit no plan."""
    from ortools.sat.python import cp_model

    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.solve import SolveOptions, build_model, infeasible_core
    from ipuplan.target import load_target

    o = SolveOptions(batch=4, headroom=int(HEADROOM))
    p = o.problem(build_graph(load_model(MODELS / "vit-small.yaml"), 4), load_target(_target(tmp_path, 16)))
    classes = problem_classes(p)
    core, cctx = infeasible_core(p, classes, o, Budget.start(30, 300), up_front=up_front)
    assert cctx is not None and 0 < len(core) < len(cctx.guards)
    ctx = build_model(p, classes, objective=False)
    lits = {info.name: v for v, info in ctx.guards}
    assert _status(ctx, [lits[g.name] for g in core], 30) == cp_model.INFEASIBLE


def test_explain_reports_deficit_and_contributors(cli, tmp_path):
    t = _target(tmp_path, 16)
    out = tmp_path / "inf"
    assert cli("solve", MODELS / "vit-small.yaml", "--batch", "4", "--target", t, "--headroom", HEADROOM,
               "-o", out).code == 1
    r = cli("explain", out)
    assert r.code == 0 and "INFEASIBLE" in r.out and "more on tile" in r.out and "live on that tile" in r.out
    ex = json.loads((out / "verdict.json").read_text())["core"]["explanation"]
    assert ex["deficit_bytes"] > 0 and ex["needs_usable_bytes"] == ex["usable_bytes"] + ex["deficit_bytes"]
    assert sum(c["bytes"] for c in ex["contributors"]) == ex["usable_bytes"] + ex["deficit_bytes"]


@pytest.mark.parametrize("catalogue", ["shaped", "grid"])
def test_what_if_memory_is_confirmed_by_a_fit(cli, tmp_path, catalogue):
    """The budget at which the least-overflowing plan fits, confirmed by a FIT; in the grid catalogue the exact
    boundary's other side (one byte less) is certified within the default effort. In the shaped one that proof
    is a z3 re-proof over a larger selection space that the default effort may not finish: the probe is then
    UNKNOWN, said so, never INFEASIBLE without a certificate. The what-if probes spend the solve's effort: 10
    deterministic seconds in the shaped case, where the one-byte-less probe spends all of it (at 20 it is UNKNOWN
    too, and the fit is confirmed at the same budget, 704,272 B)."""
    t = _target(tmp_path, 16)
    out = tmp_path / "inf"
    effort = ("--effort", "10") if catalogue == "shaped" else ()
    cli("solve", MODELS / "vit-small.yaml", "--batch", "4", "--target", t, "--headroom", HEADROOM, "--catalogue",
        catalogue, *effort, "-o", out)
    r = cli("explain", out, "--what-if", "memory", "--json")
    assert r.code == 0, r.err
    w = json.loads(r.out)["what_if"]
    assert w["confirmed_fit"] and w["needs_usable_bytes"] > w["usable_bytes"]
    below = w["one_byte_less"]
    if w["exact"] and catalogue == "grid":
        assert below["verdict"] == "INFEASIBLE"
        assert below["evidence"].startswith("certificate checked")
    if below:
        assert below["verdict"] == "INFEASIBLE" and below["evidence"].startswith("certificate checked") or \
            below["verdict"] == "UNKNOWN" and below["evidence"].startswith("no certificate")


def test_what_if_memory_seeks_the_least_overflow_a_solve_left_out(cli, tmp_path):
    """An UNKNOWN (here the wall clock ran out at once) and an INFEASIBLE solved with --no-explain carry no
    least-overflowing plan; `--what-if memory` seeks it itself, names the tile, step and what is live there,
    and reaches the budget the explained INFEASIBLE reaches (the elastic optimum is unique when proven)."""
    t = _target(tmp_path, 16)
    dirs = {}
    for name, extra in (("unknown", ("--time-limit", "0.001")), ("infeasible", ("--no-explain",)),
                        ("explained", ())):
        dirs[name] = tmp_path / name
        cli("solve", MODELS / "vit-small.yaml", "--batch", "4", "--target", t, "--headroom", HEADROOM,
            "--catalogue", "grid", *extra, "-o", dirs[name])
    verdicts = {k: json.loads((d / "verdict.json").read_text()) for k, d in dirs.items()}
    assert [v["verdict"] for v in verdicts.values()] == ["UNKNOWN", "INFEASIBLE", "INFEASIBLE"]
    assert "deficit_bytes" not in verdicts["infeasible"]["core"].get("explanation", {})
    w = {k: json.loads(cli("explain", d, "--what-if", "memory", "--json").out)["what_if"] for k, d in dirs.items()}
    for k in ("unknown", "infeasible"):
        lo = w[k]["least_overflowing"]
        assert lo["deficit_bytes"] == w[k]["deficit_bytes"] > 0 and lo["contributors"] and 0 <= lo["tile"] < 16
        assert w[k]["confirmed_fit"], w[k]
    ops = len(verdicts["explained"]["core"]["explanation"]["choices"])
    # the confirming solve starts from the least-overflowing plan: every op's implementation hinted
    assert ops and all(x["confirm_hinted_ops"] == ops for x in w.values()), w
    assert w["explained"]["least_overflowing"] is None  # the solve's own explanation was used
    if all(x["exact"] for x in w.values()):
        assert len({x["needs_usable_bytes"] for x in w.values()}) == 1, w
    r = cli("explain", dirs["unknown"], "--what-if", "memory", "--time-limit", "300")
    assert r.code == 0 and "the least-overflowing plan:" in r.out and "live on that tile then" in r.out, r.out


def test_what_if_batch_boundary_pair(cli, tmp_path):
    t = _target(tmp_path, 64)
    out = tmp_path / "b"
    # the grid catalogue keeps the four boundary proofs quick; what-if under the shaped default is exercised by
    # test_what_if_memory_is_confirmed_by_a_fit[shaped]
    cli("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", t, "--headroom", "505000",
        "--catalogue", "grid", "-o", out)
    r = cli("explain", out, "--what-if", "batch", "--json")
    assert r.code == 0, r.err
    w = json.loads(r.out)["what_if"]
    lo, hi = w["largest_fit"], w["smallest_infeasible"]
    assert lo and hi == lo + 1
    assert json.loads((tmp_path / "b" / "what-if" / f"batch-{lo}" / "plan.json").read_text())["verdict"] == "FIT"
    assert json.loads((tmp_path / "b" / "what-if" / f"batch-{hi}" / "verdict.json").read_text())["verdict"] == "INFEASIBLE"
    assert w["fit_evidence"] == "plan and placement checked" and w["infeasible_evidence"].startswith("certificate checked")


@pytest.mark.parametrize("truth,want", [
    # value -> verdict of its probe; the answer: (largest FIT, smallest INFEASIBLE, unknown in between)
    ({1: True, 2: True, 3: False, 4: False}, (2, 3, [])),
    ({1: True, 2: True, 3: None, 4: None, 8: False}, (2, None, [3, 4])),
    ({1: True, 2: True, 4: True, 5: True, 6: None, 8: False}, (5, 8, [6])),
    ({1: True, 2: True, 3: None, 4: False}, (2, 4, [3])),
    ({1: None}, (None, None, [1])),
])
def test_what_if_search_carries_unknown_probes(tmp_path, truth, want):
    """An UNKNOWN probe bounds the search like an INFEASIBLE one but proves nothing: the answer names it between
    the proven FIT and the proven INFEASIBLE (or none), instead of ending the search."""
    from ipuplan.job.solve import Job
    from ipuplan.job.whatif import search

    def probe(v, evidence):
        r = truth.get(v, False if v > max(truth) else True)
        evidence[v] = {True: "checked", False: "certificate checked", None: "UNKNOWN"}[r]
        return r
    r = search(Job("m.yaml", "t.yaml", batch=1), "batch", tmp_path, probe=probe)
    assert (r["largest_fit"], r["smallest_infeasible"], r["unknown"]) == want
    assert r["proven"] == (want[0] is not None and want[1] == want[0] + 1)


def test_what_if_speed_bounds_the_plan_and_accounts_for_the_difference(cli, tmp_path):
    """With bytes held back, the FIT is slower than the catalogue's memory-free optimum; the answer's per-op
    differences and the layout conversions add up to exactly that gap, and the floor is below both."""
    t = _target(tmp_path, 16)
    out = tmp_path / "s"
    assert cli("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", t, "--headroom", "400000",
               "-o", out).code == 0
    r = cli("explain", out, "--what-if", "speed", "--json")
    assert r.code == 0, r.err
    w = json.loads(r.out)["what_if"]
    plan = json.loads((out / "plan.json").read_text())["cycles"]["modeled"]
    assert w["ceiling_optimal"] and w["plan_cycles"] == plan
    assert w["floor_cycles"] <= w["ceiling_cycles"] < plan, "the held-back bytes cost this plan cycles"
    cv = w["conversions"]
    assert sum(x["extra_cycles"] for x in w["ops"]) + cv["plan_cycles"] - cv["ceiling_cycles"] == \
        plan - w["ceiling_cycles"]
    assert any(x["chosen_bytes"] < x["fastest_bytes"] for x in w["ops"]), "memory is what the faster choices lack"
    text = cli("explain", out, "--what-if", "speed")
    assert text.code == 0 and "no plan of the shaped catalogue is faster than" in text.out


def test_what_if_speed_refuses_a_plan_its_catalogue_does_not_build(cli, tmp_path):
    t = _target(tmp_path, 16)
    out = tmp_path / "s"
    assert cli("solve", MODELS / "vit-small.yaml", "--batch", "1", "--target", t, "-o", out).code == 0
    doc = json.loads((out / "plan.json").read_text())
    op = next(iter(doc["choices"]))
    doc["choices"][op]["label"] = "no such implementation"
    (out / "plan.json").write_text(json.dumps(doc))
    r = cli("explain", out, "--what-if", "speed")
    assert r.code == 2 and f"choices.{op}" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("confirmed", [True, False])
def test_what_if_memory_says_whether_the_budget_was_confirmed(capsys, confirmed):
    """A budget the solve on the grown target did not confirm (UNKNOWN there) is not announced as a plan that
    exists."""
    from ipuplan.cli import _print_what_if
    _print_what_if({"kind": "memory", "needs_usable_bytes": 653_464, "exact": False, "lower_bound_bytes": 637_872,
                    "confirmed_fit": confirmed, "confirm_verdict": "FIT" if confirmed else "UNKNOWN",
                    "fit_dir": "d/fit", "one_byte_less": None, "least_overflowing": None, "confirm_hinted_ops": 38})
    text = capsys.readouterr().out
    assert ("a plan exists" in text) == confirmed and ("not confirmed" in text) != confirmed
    assert "started from the least-overflowing plan (38 ops hinted)" in text
    assert confirmed or "UNKNOWN" in text
