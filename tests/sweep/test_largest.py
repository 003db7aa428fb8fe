"""`ipuplan sweep --largest-batch`: per combination, the largest batch with a checked plan and the smallest with a
checked certificate; probes are sweep cases (resumed, not solved twice); only checked verdicts bound the answer."""

from __future__ import annotations

import json

import pytest

from ipuplan.sweep import largest
from ipuplan.sweep.cases import grid
from tests.conftest import MODELS, ROOT

SMALL = ROOT / "targets" / "small64.yaml"


def _fake(verdicts: dict[int, tuple[str, bool | None]], calls: list[int]):
    """An `execute` whose case at batch b answers verdicts[b] = (verdict, checked), recording each call."""
    def execute(case, out, cwd):
        calls.append(case.batch)
        verdict, checked = verdicts[case.batch]
        rec = {"name": case.name, **case.record(), "status": "done", "verdict": verdict, "checked": checked,
               "images_per_s": 10.0 * case.batch if verdict == "FIT" else None,
               "certificate": "counting" if verdict == "INFEASIBLE" else None}
        from pathlib import Path
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "case.json").write_text(json.dumps(rec))
        return rec
    return execute


def _search(tmp_path, cap=64):
    model = MODELS / "vit-small.yaml"
    return largest.searches(grid([str(model)], [str(SMALL)], "1,2", None, ["headroom=0"]), cap)[0]


def test_doubling_then_bisection_to_a_proven_boundary(tmp_path, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(largest, "execute", _fake({b: ("FIT", True) if b <= 5 else ("INFEASIBLE", True)
                                                   for b in range(1, 65)}, calls))
    s = _search(tmp_path)
    assert s.template.batch == 1 and "headroom=0" in s.name and "-b1-" not in s.name
    r = largest.run_search(s, str(tmp_path), str(ROOT))
    assert calls == [1, 2, 4, 8, 6, 5]
    assert (r["largest_fit"], r["smallest_infeasible"], r["proven"], r["unknown"]) == (5, 6, True, [])
    assert r["images_per_s"] == 50.0 and r["best_batch"] == 5 and r["infeasible_certificate"] == "counting"
    # a second run reads every probe's case.json and solves nothing
    calls.clear()
    again = largest.run_search(s, str(tmp_path), str(ROOT))
    assert calls == [] and again["largest_fit"] == 5 and all(p.get("resumed") for p in again["probes"])


def test_unchecked_and_unknown_probes_prove_nothing(tmp_path, monkeypatch):
    calls: list[int] = []
    # batch 4's plan was not passed by the checker, 3's verdict is UNKNOWN, 8 is INFEASIBLE and checked
    verdicts = {1: ("FIT", True), 2: ("FIT", True), 3: ("UNKNOWN", None), 4: ("FIT", False), 8: ("INFEASIBLE", True)}
    monkeypatch.setattr(largest, "execute", _fake(verdicts, calls))
    r = largest.run_search(_search(tmp_path), str(tmp_path), str(ROOT))
    assert calls == [1, 2, 4, 3]
    assert (r["largest_fit"], r["smallest_infeasible"], r["proven"], r["unknown"]) == (2, None, False, [3, 4])
    assert r["unchecked"] == [4]


def test_the_cap_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(largest, "execute", _fake({b: ("FIT", True) for b in range(1, 9)}, []))
    r = largest.run_search(_search(tmp_path, cap=8), str(tmp_path), str(ROOT))
    assert (r["largest_fit"], r["capped"], r["proven"]) == (8, True, False)


def test_status_replays_the_search_over_finished_probes(tmp_path, monkeypatch, cli):
    """A sweep stopped while probing b8 (its probes to b4 finished): the status holds the bracket those probes
    prove and the probe the search waits on, and solves nothing."""
    calls: list[int] = []
    monkeypatch.setattr(largest, "execute", _fake({1: ("FIT", True), 2: ("FIT", True), 4: ("FIT", True)}, calls))
    s = _search(tmp_path)
    with pytest.raises(KeyError):  # the fake has no answer at b8: the search stops there, as a killed sweep does
        largest.run_search(s, str(tmp_path), str(ROOT))
    assert calls == [1, 2, 4, 8]
    monkeypatch.setattr(largest, "execute", None)  # status must not solve
    r = largest.status(s, tmp_path)
    assert (r["status"], r["waits_on"], r["largest_fit"], r["smallest_infeasible"]) == ("open", 8, 4, None)
    assert r["best_batch"] == 4 and [p["batch"] for p in r["probes"]] == [1, 2, 4]
    # b8 INFEASIBLE (checked), b6 UNKNOWN: the search waits on b5, the bracket is 4 .. 8 with 6 unknown between
    for b, (v, checked) in {8: ("INFEASIBLE", True), 6: ("UNKNOWN", None)}.items():
        _fake({b: (v, checked)}, [])(s.case(b), str(tmp_path / "cases" / s.case(b).name), str(ROOT))
    r = largest.status(s, tmp_path)
    assert (r["waits_on"], r["largest_fit"], r["smallest_infeasible"], r["unknown"]) == (5, 4, 8, [6])
    before = sorted(p.name for p in tmp_path.iterdir())
    out = cli("sweep", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "1,2", "--set", "headroom=0",
              "--largest-batch", "--status", "-o", tmp_path)
    assert out.code == 0 and "1F 2F 4F 6U 8I 5…" in out.out and "1 searches (1 open)" in out.out, out.out
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no sweep.json written
    # the search finished: closed, not waiting
    _fake({5: ("FIT", True)}, [])(s.case(5), str(tmp_path / "cases" / s.case(5).name), str(ROOT))
    r = largest.status(s, tmp_path)
    assert (r["status"], r.get("waits_on"), r["largest_fit"], r["unknown"]) == ("done", None, 5, [6])
    bad = cli("sweep", MODELS / "vit-small.yaml", "--largest-batch", "--status", "-o", tmp_path / "nothing")
    assert bad.code == 2 and "holds no sweep" in bad.out + bad.err and not (tmp_path / "nothing").exists()


@pytest.mark.parametrize("cap", [0])
def test_a_bad_cap_is_bad_input(cli, tmp_path, cap):
    r = cli("sweep", MODELS / "vit-small.yaml", "--target", SMALL, "--largest-batch", "--batch-cap", str(cap),
            "-o", tmp_path / "s")
    assert r.code == 2 and "--batch-cap" in r.out + r.err


def test_largest_batch_sweep_end_to_end(cli, tmp_path):
    """vit-small on the 8-tile cut of small64: with 300,000 B of headroom every batch to the cap fits; with
    400,000 B not even one image (a checked counting certificate)."""
    t8 = tmp_path / "t8.yaml"
    t8.write_text(SMALL.read_text().replace("tiles: 64 ", "tiles: 8 ", 1))
    r = cli("sweep", MODELS / "vit-small.yaml", "--target", t8, "--batch", "1", "--set", "headroom=300000,400000",
            "--largest-batch", "--batch-cap", "4", "--workers", "2", "-o", tmp_path / "s")
    assert r.code == 0, r.out + r.err
    doc = json.loads((tmp_path / "s" / "sweep.json").read_text())
    got = {s["settings"]["headroom"]: (s["largest_fit"], s["capped"], s["smallest_infeasible"]) for s in doc["searches"]}
    assert got == {"300000": (4, True, None), "400000": (None, False, 1)}
    assert sorted((c["batch"], c["verdict"], c["checked"]) for c in doc["cases"]) == [
        (1, "FIT", True), (1, "INFEASIBLE", True), (2, "FIT", True), (4, "FIT", True)]
    assert "4 (the cap)" in r.out and "1 (counting)" in r.out
    from ipuplan.report import collect
    rows = {r["row"]: r for r in collect(tmp_path / "s")["sweep"]["rows"]}
    assert rows["vit-small · t8 · full · headroom=300000"]["largest_fit"] == 4
    assert rows["vit-small · t8 · full · headroom=400000"]["smallest_infeasible"] == 1
