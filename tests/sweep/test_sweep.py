"""`ipuplan sweep` on a local Ray instance of 2 workers: every case solved and checked in its own process, the
table, sweep.json and sweep.csv; a second run resumes (nothing solved again); a failed case is reported and
re-run only when asked."""

from __future__ import annotations

import csv
import json

import pytest

from ipuplan.errors import InputError
from ipuplan.sweep.cases import grid
from tests.conftest import MODELS, ROOT

SMALL = ROOT / "targets" / "small64.yaml"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from tests.tests_helpers import run_main
    d = tmp_path_factory.mktemp("sweep")
    code = run_main("sweep", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "1,2", "--set",
                    "headroom=0,600000", "--workers", "2", "-o", d)
    return code, d


def test_every_case_solved_checked_and_written(swept):
    code, d = swept
    assert code == 0
    doc = json.loads((d / "sweep.json").read_text())
    verdicts = sorted((c["batch"], c["settings"]["headroom"], c["verdict"], c["checked"]) for c in doc["cases"])
    assert verdicts == [(1, "0", "FIT", True), (1, "600000", "INFEASIBLE", True), (2, "0", "FIT", True),
                        (2, "600000", "INFEASIBLE", True)]
    rows = list(csv.DictReader(open(d / "sweep.csv")))
    assert len(rows) == 4 and {r["verdict"] for r in rows} == {"FIT", "INFEASIBLE"}
    for c in doc["cases"]:
        assert (d / "cases" / c["name"] / ("plan.json" if c["verdict"] == "FIT" else "certificate.json")).exists()


def test_a_second_run_resumes(swept, cli):
    code, d = swept
    before = {p: p.stat().st_mtime for p in (d / "cases").glob("*/case.json")}
    r = cli("sweep", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "1,2", "--set", "headroom=0,600000",
            "--workers", "2", "-o", d)
    assert r.code == 0 and "4 cases (4 resumed), 0 failed" in r.out
    # piped (not a terminal), the table is not wrapped: each case's row holds its model, batch and verdict
    import re
    rows = [ln for ln in r.out.splitlines() if "vit-small" in ln]
    assert len(rows) == 4 and all(re.search(r"vit-small.*small64.*headroom=\d+.*(FIT|INFEASIBLE)", ln) for ln in rows)
    assert {p: p.stat().st_mtime for p in (d / "cases").glob("*/case.json")} == before


def test_status_reads_the_directory_and_solves_nothing(swept, cli):
    code, d = swept
    before = {p: p.stat().st_mtime for p in d.rglob("*.json")}
    r = cli("sweep", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "1,2,3", "--set", "headroom=0,600000",
            "--status", "-o", d)
    assert r.code == 0 and "6 cases: 4 finished, 2 not finished, 0 failed" in r.out, r.out
    assert sum("not finished" in ln for ln in r.out.splitlines() if "vit-small" in ln) == 2
    assert {p: p.stat().st_mtime for p in d.rglob("*.json")} == before


def test_a_failed_case_is_reported_and_retried_on_request(swept, cli):
    code, d = swept
    name = json.loads((d / "sweep.json").read_text())["cases"][0]["name"]
    rec = json.loads((d / "cases" / name / "case.json").read_text())
    (d / "cases" / name / "case.json").write_text(json.dumps(dict(rec, status="failed", error="killed")))
    args = ("sweep", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "1,2", "--set", "headroom=0,600000",
            "--workers", "2", "-o", d)
    r = cli(*args)
    assert r.code == 1 and "1 failed" in r.out
    r = cli(*args, "--retry-failed")
    assert r.code == 0 and "3 resumed), 0 failed" in r.out


def test_grid_expands_and_rejects_bad_input(tmp_path):
    cases = grid([str(MODELS / "vit-small.yaml")], [str(SMALL)], "1,2,4", "2,full",
                 ["headroom=0,8192", "seed=1", "slack-effort=0"])
    assert len(cases) == 3 * 2 * 2 and len({c.name for c in cases}) == 12
    assert cases[0].solve_args()[-6:] == ["--headroom", "0", "--seed", "1", "--slack-effort", "0"]
    with pytest.raises(InputError, match="keys: headroom"):
        grid([str(MODELS / "vit-small.yaml")], [str(SMALL)], "1", None, ["colour=red"])
    with pytest.raises(InputError, match="not a comma-separated list"):
        grid([str(MODELS / "vit-small.yaml")], [str(SMALL)], "one", None, [])


def test_report_renders_the_sweep(swept, cli):
    code, d = swept
    r = cli("report", d, "-o", d / "sweep.html")
    assert r.code == 0
    from ipuplan.report import collect
    rows = {r["row"]: r for r in collect(d)["sweep"]["rows"]}
    assert rows["vit-small · small64 · full · headroom=0"]["largest_fit"] == 2
    assert rows["vit-small · small64 · full · headroom=600000"]["smallest_infeasible"] == 1
    assert "Modeled latency against batch" in (d / "sweep.html").read_text()
