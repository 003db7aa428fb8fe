"""Solve + check on real models: FIT plans pass the independent checker, mutated plans fail it,
plans are deterministic, and verdicts map to exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import MODELS, ROOT, TARGET
from ipuplan.checker import check_plan
from ipuplan.checker.certificate import check_certificate
from ipuplan.formats import digest

SMALL = ROOT / "targets" / "small64.yaml"
GOLDEN = ROOT / "tests" / "golden"


def _target(tmp_path: Path, tiles: int) -> Path:
    from tests_helpers import target_with_tiles
    return target_with_tiles(tmp_path, tiles)


def _solve(cli, out: Path, *args) -> tuple[int, dict]:
    r = cli("solve", *args, "-o", out)
    name = "plan.json" if (out / "plan.json").exists() else "verdict.json"
    return r.code, json.loads((out / name).read_text())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([16, 32, 64]), st.integers(1, 4), st.sampled_from([0, 300_000, 480_000, 540_000]))
@example(16, 4, 520_000)  # INFEASIBLE: the certificate branch always runs
@example(64, 2, 0)  # FIT
def test_every_verdict_passes_its_checker(cli, tmp_path, tiles, batch, headroom):
    """Every FIT plan passes the plan checker; every INFEASIBLE certificate passes the certificate checker
    and every tampered copy of it fails."""
    t = _target(tmp_path, tiles)
    out = tmp_path / f"o{tiles}-{batch}-{headroom}"
    code, doc = _solve(cli, out, MODELS / "vit-small.yaml", "--batch", batch, "--target", t, "--headroom", headroom,
                       "--no-explain")
    assert code in (0, 1), doc
    if code == 0:
        rep = check_plan(doc)
        assert rep.ok, rep.violations
        assert doc["peaks"]["total"]["bytes"] <= doc["accounting"]["usable_bytes"] - headroom
        return
    assert doc["verdict"] == "INFEASIBLE" and doc["core"]["constraints"]
    cert = json.loads((out / "certificate.json").read_text())
    rep = check_certificate(cert)
    assert rep.ok, rep.violations
    for name, bad in tampered(cert):
        assert not check_certificate(bad).ok, name


def tampered(cert: dict):
    """Edited bytes (with and without a matching digest), a dropped row, other inputs."""
    def fixed(c):
        c["digest"] = digest(c)
        return c
    c = copy.deepcopy(cert)
    c["batch"] += 1
    yield "edited without digest", c
    if cert["rows"]:
        c = copy.deepcopy(cert)
        c["rows"][0]["capacity"] += 8
        yield "edited capacity", fixed(c)
        c = copy.deepcopy(cert)
        c["rows"][0]["cheapest_bytes"] += 8
        yield "edited cheapest bytes", fixed(c)
        if cert["rows_minimal"]:
            c = copy.deepcopy(cert)
            c["rows"] = c["rows"][1:]
            yield "dropped row", fixed(c)
    for what in ("model", "target"):
        c = copy.deepcopy(cert)
        c["inputs"][what]["sha256"] = "0" * 64
        yield f"{what} hash", fixed(c)
    c = copy.deepcopy(cert)
    c["layers"] += 1
    yield "depth changed (digest recomputed)", fixed(c)
    for key, bad in (("exchange_table_budget", 0), ("support_reserve", 10 ** 7), ("headroom", -1)):
        c = copy.deepcopy(cert)
        c["options"][key] = bad
        yield f"option {key}={bad}", fixed(c)


@pytest.fixture(scope="module")
def small_plan(tmp_path_factory):
    from tests_helpers import run_main
    out = tmp_path_factory.mktemp("plan")
    assert run_main("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "-o", out) == 0
    return json.loads((out / "plan.json").read_text())


def test_checker_accepts_the_plan(small_plan):
    assert check_plan(small_plan).ok


def test_checker_rejects_overflow(small_plan):
    bad = copy.deepcopy(small_plan)
    bad["options"]["headroom"] = 637_872 - small_plan["peaks"]["total"]["bytes"] + 8  # 8 bytes short
    rep = check_plan(bad)
    assert not rep.ok and any(v.startswith("memory[point=") for v in rep.violations), rep.violations


def test_checker_rejects_swapped_choice(small_plan):
    bad = copy.deepcopy(small_plan)
    mms = [k for k, c in bad["choices"].items() if c["kind"] == "matmul"]
    a, b = mms[0], mms[1]
    bad["choices"][a], bad["choices"][b] = bad["choices"][b], bad["choices"][a]
    rep = check_plan(bad)
    assert not rep.ok and any(a in v or b in v or "peaks" in v for v in rep.violations)


def test_checker_rejects_tampered_peak_and_grid(small_plan):
    bad = copy.deepcopy(small_plan)
    bad["peaks"]["total"]["bytes"] -= 8
    assert any("peaks.total" in v for v in check_plan(bad).violations)
    bad = copy.deepcopy(small_plan)
    mm = next(k for k, c in bad["choices"].items() if c["kind"] == "matmul")
    bad["choices"][mm]["pm"] = 10_000
    assert any(".pm: 10000 is invalid" in v for v in check_plan(bad).violations)


def test_checker_rejects_changed_model(small_plan, tmp_path):
    bad = copy.deepcopy(small_plan)
    bad["inputs"]["model"]["sha256"] = "0" * 64
    assert any("sha256" in v for v in check_plan(bad).violations)


def _golden(plan: dict, name: str) -> None:
    keep = {k: plan[k] for k in ("verdict", "model", "batch", "layers", "choices", "peaks", "cycles")}
    text = json.dumps(keep, indent=1) + "\n"
    path = GOLDEN / name
    import os
    if os.environ.get("IPUPLAN_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), "plan changed; regenerate with IPUPLAN_UPDATE_GOLDEN=1 if intended"


def test_plan_golden(small_plan):
    _golden(small_plan, "vit-small-b2-small64.plan.json")


def test_grid_catalogue_keeps_its_plans(tmp_path):
    """`--catalogue grid` is the earlier space: its golden plan is the one recorded before the shaped catalogue
    existed (the breakdown has gained `exchange_beyond_bytes`, nothing else changed)."""
    from tests_helpers import run_main
    assert run_main("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "--catalogue", "grid",
                    "-o", tmp_path) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["options"]["catalogue"] == "grid" and plan["options"]["relays"] is True
    _golden(plan, "vit-small-b2-small64.grid.plan.json")


def test_shaped_plan_is_faster_and_less_fragment_bound(small_plan, tmp_path):
    from tests_helpers import run_main
    assert run_main("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "--catalogue", "grid",
                    "-o", tmp_path) == 0
    grid = json.loads((tmp_path / "plan.json").read_text())["cycles"]
    shaped = small_plan["cycles"]
    assert shaped["modeled"] < grid["modeled"]
    assert shaped["breakdown"]["exchange_beyond_bytes"] < grid["breakdown"]["exchange_beyond_bytes"]


def test_infeasible_exit_code_and_core(cli, tmp_path):
    t = _target(tmp_path, 16)
    code, doc = _solve(cli, tmp_path / "inf", MODELS / "vit-small.yaml", "--batch", "2", "--target", t, "--headroom",
                       "540000")
    assert code == 1 and doc["verdict"] == "INFEASIBLE"
    assert set(doc["core"]["families"]) & {"liveness", "regions"}


def test_time_limit_gives_unknown_never_infeasible(cli, tmp_path):
    r = cli("solve", MODELS / "siglip.yaml", "--batch", "2", "--time-limit", "1", "-o", tmp_path / "u")
    assert r.code == 3, r.out
    assert "UNKNOWN" in r.out and not (tmp_path / "u" / "plan.json").exists()


def test_support_reserve_reproduces_seed_accounting(cli, tmp_path):
    code, doc = _solve(cli, tmp_path / "s", MODELS / "vit-small.yaml", "--batch", "2", "--support-reserve", "49152",
                       "--target", SMALL)
    assert code == 0
    assert doc["accounting"] == doc["accounting"] | {"mode": "seeds", "usable_bytes": 586_960, "support_bytes": 49_152}
    assert check_plan(doc).ok


@pytest.mark.slow
def test_full_siglip_batch2_builds_and_checks(cli, siglip_b2):
    """The default job at full size: FIT, placed, lowered to a package that validates and replays."""
    r, sig = siglip_b2
    assert r.code == 0 and "BUILT" in r.out, r.out
    doc = json.loads((sig / "plan.json").read_text())
    assert doc["layers"] == 27 and doc["peaks"]["total"]["bytes"] <= 637_872 and doc["slack"]["bytes"] > 0
    assert doc["placement"]["tiles"] == 1472 and (sig / "placement.json").exists()
    rep = check_plan(doc)
    assert rep.ok, rep.violations
    r = cli("check", sig)
    assert r.code == 0 and "CHECK PASSED" in r.out and "every buffer of all 1472 tiles at an address" in r.out
    assert "PACKAGE CHECK PASSED" in r.out and "iterations [0, 1, 26] of 27" in r.out


def test_package_checker_imports_no_backend_code():
    """The replay reads the package format; it never loads the lowering, the catalogue or the solver."""
    import subprocess
    import sys
    code = ("import sys, ipuplan.checker.package, ipuplan.checker.replay, ipuplan.package.io, ipuplan.package.validate; "
            "bad = [m for m in sys.modules if m.startswith(('ipuplan.solver', 'ipuplan.catalogue', "
            "'ipuplan.backend.lower.lower', 'ipuplan.backend.placement', 'ortools'))]; assert not bad, bad")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_checker_does_not_import_the_solver():
    import subprocess
    import sys
    code = ("import sys, ipuplan.checker, ipuplan.cli; "
            "bad = [m for m in sys.modules if m.startswith(('ortools', 'ipuplan.solver'))]; "
            "assert not bad, bad")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_plan_reports_tile_classes(small_plan):
    cl = small_plan["tile_classes"]
    assert cl and sum(c["stands_for"] for c in cl) == 64
    assert all(c["tiles"] >= 1 for c in cl)


def test_table_budget_too_small_is_infeasible_in_the_exchange_family(cli, tmp_path):
    code, doc = _solve(cli, tmp_path / "tb", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL,
                       "--exchange-table-budget", "64")
    assert code == 1 and doc["verdict"] == "INFEASIBLE"
    assert "exchange" in doc["core"]["families"]
    assert any(c.startswith("exchange[tables <= 64 B") for c in doc["core"]["constraints"])


def test_checker_verifies_exchange_figures(small_plan):
    bad = copy.deepcopy(small_plan)
    bad["exchange"]["tables"]["bytes"] -= 4
    assert any(v.startswith("plan.json.exchange:") for v in check_plan(bad).violations)
    bad = copy.deepcopy(small_plan)
    bad["options"]["exchange_table_budget"] = 16
    assert any("exchange[tables]" in v for v in check_plan(bad).violations)


def test_beam_strategy_plans_pass_the_checker(cli, tmp_path):
    code, doc = _solve(cli, tmp_path / "beam", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL,
                       "--strategy", "beam")
    assert code == 0 and doc["strategy"] == "beam" and doc["cycles"]["best_bound"] is None
    assert check_plan(doc).ok
    code2, opt = _solve(cli, tmp_path / "cp", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL)
    assert opt["cycles"]["modeled"] <= doc["cycles"]["modeled"]  # CP-SAT's optimum is never worse


def test_beam_rejects_a_model_that_fits(cli, tmp_path):
    """SigLIP at batch 2: the beam keeps no complete plan (REJECTED, exit 4) though CP-SAT finds one."""
    code, doc = _solve(cli, tmp_path / "sig", MODELS / "siglip.yaml", "--batch", "2", "--strategy", "beam")
    assert code == 4 and doc["verdict"] == "REJECTED" and "not a proof" in doc["rejection"]["note"]


def test_more_attention_groups_than_tiles_share_tiles(cli, tmp_path):
    """vit-small at batch 48 has 96 (batch x head) groups on 64 tiles: attention wraps, two groups per tile."""
    code, doc = _solve(cli, tmp_path / "g", MODELS / "vit-small.yaml", "--batch", "48", "--target", SMALL,
                       "--no-explain")
    assert code == 0, doc.get("verdict")
    att = doc["choices"]["encoder/attn"]
    assert (att["query_blocks"], att["key_splits"]) == (1, 1)
    assert cli("check", tmp_path / "g").code == 0


def test_cycle_breakdown_adds_up_to_the_objective(small_plan):
    c = small_plan["cycles"]
    b = c["breakdown"]
    assert b["compute"] + b["exchange"] + b["sync"] == c["modeled"]
    assert sum(d["total"] for d in b["by_kind"].values()) == c["modeled"]
    assert b["compute"] > 0 and b["exchange"] > 0 and b["sync"] > 0
    runs = b["slowest_steps"]
    assert runs and all(r["per_run"] == r["total"] == r["compute"] + r["exchange"] + r["sync"] for r in runs)
    assert [r["per_run"] for r in runs] == sorted((r["per_run"] for r in runs), reverse=True)
    assert all(r["step"].endswith((":x", ":c")) for r in runs)
