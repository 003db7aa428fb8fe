"""Pipelines over several chips: stage graphs, the machine bound over stages (against every partition, exhaustively),
the pipeline solve (FIT with every stage checked; INFEASIBLE with a certificate the checker re-proves), tampered
artefacts refused, one package per stage in a .ipupipe emulated bit for bit stage by stage, and the command line."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"
VIT = MODELS / "vit-small.yaml"


@pytest.fixture(scope="module")
def t8(tmp_path_factory) -> Path:
    """small64 cut to 8 tiles: vit-small's f16 layers (336 KB each) fill a chip at 13 layers."""
    p = tmp_path_factory.mktemp("t8") / "t8.yaml"
    p.write_text(SMALL.read_text().replace("tiles: 64 ", "tiles: 8 ", 1))
    return p


def _spec(layers: int):
    from ipuplan.model import load_model
    return load_model(str(VIT)).with_options(layers=layers)


def test_stage_graphs_partition_the_model():
    from ipuplan.ir.graph import Role
    from ipuplan.model import build_graph
    from ipuplan.model.build import STAGE_INPUT, STAGE_OUTPUT
    from ipuplan.model.stage import Stage
    spec = _spec(5)
    whole = build_graph(spec, 2)
    parts = [build_graph(spec, 2, Stage.of(f, c, 5)) for f, c in ((0, 2), (2, 1), (3, 2))]
    params = lambda g: {v.name: v.shape for v in g.values if v.role is Role.PARAM}
    want = params(whole)
    got: dict = {}
    for g in parts:
        for n, shape in params(g).items():
            got[n] = shape if not n.startswith("layers.") else (got.get(n, (0,))[0] + shape[0],) + shape[1:]
    assert got == want
    assert parts[0].outputs == (STAGE_OUTPUT,) and parts[2].outputs == whole.outputs
    assert parts[1].value(STAGE_INPUT).shape == parts[0].value(STAGE_OUTPUT).shape == (2, spec.tokens, spec.width)
    with pytest.raises(Exception, match="stem runs with layer 0"):
        Stage(1, 2, True, False).check(5)
    with pytest.raises(Exception, match="not within"):
        Stage.of(4, 2, 5)


def test_greedy_chain_is_the_fewest_of_every_partition(t8):
    """The chain's count of chips against every partition of the layers into 1..4 contiguous stages, each judged by
    the machine bound of its own stage graph: fewer chips than the chain never fit, the chain's own partition does."""
    from ipuplan.bounds import machine_bound
    from ipuplan.model import build_graph
    from ipuplan.model.stage import Stage
    from ipuplan.pipeline.bound import greedy_chain
    from ipuplan.target import load_target
    target = load_target(t8)
    for layers in (7, 13, 14, 27, 30):
        spec = _spec(layers)
        memo: dict = {}

        def fits(first: int, count: int) -> bool:
            st = Stage.of(first, count, layers)
            if st.problem not in memo:
                memo[st.problem] = not machine_bound(build_graph(spec, 2, st), target, None).proves
            return memo[st.problem]
        chain = greedy_chain(spec, 2, target)
        for n in range(1, 5):
            any_fits = any(all(fits(a, b - a) for a, b in zip((0,) + cuts, cuts + (layers,)))
                           for cuts in combinations(range(1, layers), n - 1))
            assert any_fits == (not chain.proves_fewer_than(n)), (layers, n, chain.fewest)


@pytest.fixture(scope="module")
def built(tmp_path_factory, t8):
    d = tmp_path_factory.mktemp("pipe")
    # 14 layers: one more than a chip holds (the machine bound says 2), few enough that each stage solves in
    # seconds; 20 (10 a stage) packs the head stage's tile so that the placement refutes plan after plan the model
    # accepts (8 cuts, then UNKNOWN); the subject here is the pipeline, not that packing
    assert run_main("build", VIT, "--target", t8, "--batch", "2", "--layers", "14", "--ipus", "2", "-o", d) == 0
    np.save(d / "pixels.npy", np.random.default_rng(3).standard_normal((2, 3, 28, 28)).astype(np.float32))
    return d


def test_pipeline_fit_checks_and_runs_bit_exact(built, cli):
    doc = json.loads((built / "pipeline.json").read_text())
    assert doc["verdict"] == "FIT" and doc["ipus"] == 2 and doc["bound"]["fewest_ipus"] == 2
    assert [s["stage"]["count"] for s in doc["stages"]] == [6, 8]  # the stem stage also runs the patch embedding
    r = cli("check", built)
    assert r.code == 0 and "PIPELINE CHECK PASSED" in r.out
    r = cli("check", built / "model.ipupipe")
    assert r.code == 0 and "PIPELINE PACKAGE CHECK PASSED" in r.out, r.out
    r = cli("run", built / "model.ipupipe", "--pixels", built / "pixels.npy", "--compare", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["compare"]["stages_bit_exact"] == [True, True] and out["compare"]["fp32"]["cosine"] > 0.99
    assert out["shape"] == [2, 144]


def _tampered(tmp_path, built, edit) -> Path:
    import shutil
    d = tmp_path / "copy"
    shutil.copytree(built, d)
    doc = json.loads((d / "pipeline.json").read_text())
    edit(doc, d)
    (d / "pipeline.json").write_text(json.dumps(doc))
    return d


@pytest.mark.parametrize("what", ["throughput", "link", "stage", "swap", "output"])
def test_tampered_pipeline_refused(tmp_path, built, what):
    from ipuplan.checker.pipeline import check_pipeline_dir

    def edit(doc, d):
        if what == "throughput":
            doc["throughput"]["bottleneck_cycles"] -= 1
        elif what == "link":
            doc["stages"][0]["output"]["link_cycles"] //= 2
        elif what == "stage":
            doc["stages"][1]["stage"]["first"] = 12
        elif what == "swap":  # stage 1's directory holds stage 0's plan
            import shutil
            shutil.rmtree(d / "stage-1")
            shutil.copytree(d / "stage-0", d / "stage-1")
        else:
            doc["stages"][0]["output"]["shape"] = [2, 4, 72]
    rep = check_pipeline_dir(_tampered(tmp_path, built, edit))
    assert not rep.ok, what


def test_altered_pipeline_package_is_refused(tmp_path, built, cli):
    import zipfile
    src = built / "model.ipupipe"
    bad = tmp_path / "bad.ipupipe"
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(bad, "w") as zo:
        for item in zi.infolist():
            data = zi.read(item)
            if item.filename == "stage-1.ipupkg":
                other = zi.read("stage-0.ipupkg")  # a member swapped for another stage's package
                data = other
            zo.writestr(item, data)
    r = cli("check", bad)
    assert r.code == 2 and "sha256" in r.err


def test_fewer_chips_than_the_bound_is_certified(tmp_path, t8, cli):
    d = tmp_path / "p2"
    r = cli("solve", VIT, "--target", t8, "--batch", "2", "--layers", "30", "--ipus", "2", "-o", d)
    assert r.code == 1 and "at least 3" in r.out
    r = cli("check", d)
    assert r.code == 0 and "CERTIFICATE VERIFIED" in r.out
    from ipuplan.checker.certificate import check_certificate
    from ipuplan.formats import digest
    cert = json.loads((d / "certificate.json").read_text())
    cert["links"][0]["reach"] -= 1  # not maximal: one layer more still fits
    cert["links"][1]["first"] -= 1
    cert["digest"] = digest(cert)
    assert not check_certificate(cert, base=d).ok


def test_what_if_ipus_gives_the_boundary_within_the_catalogue(tmp_path, t8, cli):
    """24 layers: the machine bound allows 2 chips, the catalogue does not (no stem and no head stage of 12 layers
    has a plan, so 2 stages hold at most 22): 2 chips INFEASIBLE with a pipeline-stages certificate the checker
    re-proves at every stage length up to 23, 3 chips FIT, and the boundary is proven. Edited certificates fail."""
    d = tmp_path / "one"
    r = cli("solve", VIT, "--target", t8, "--batch", "2", "--layers", "24", "-o", d)
    assert r.code == 1  # one chip: the machine bound
    r = cli("explain", d, "--what-if", "ipus", "--json")
    assert r.code == 0, r.err
    w = json.loads(r.out)["what_if"]
    assert w["bound_fewest"] == 2 and w["fewest_fit"] == 3 and w["proven"]
    assert w["below"]["ipus"] == 2 and w["below"]["verdict"] == "INFEASIBLE"
    assert "pipeline-stages" in w["below"]["evidence"]
    two = Path(w["below"]["dir"])
    r = cli("check", two)
    assert r.code == 0 and "CERTIFICATE VERIFIED" in r.out
    assert "re-proved with every count from 13 to 23 layers" in r.out and "11 + 11 = 22 < 24" in r.out
    from ipuplan.checker.certificate import check_certificate
    from ipuplan.formats import digest
    cert = json.loads((two / "certificate.json").read_text())
    assert set(cert["stages"]) == {"stem", "head"} and cert["caps"] == [11, 11]

    def refused(edit) -> list[str]:
        c = json.loads(json.dumps(cert))
        edit(c)
        for sub in c["stages"].values():
            sub["digest"] = digest(sub)
        c["digest"] = digest(c)
        rep = check_certificate(c, base=two)
        assert not rep.ok
        return rep.violations
    assert "can still hold 24 layers" in refused(lambda c: c["stages"].pop("head"))[0]
    # the stem's rows as if written for 11 layers: its recorded numbers are not those of 11
    v = refused(lambda c: c["stages"]["stem"]["stage"].update(count=11))
    assert "stem with 11 layers" in v[0]
    assert "not the pipeline's" in refused(lambda c: c["stages"]["head"].update(batch=1))[0]


def _as_split(sub: dict, base: Path) -> dict:
    """A stage certificate proved instead by the builder's case split on the same stage problem."""
    from ipuplan.catalogue import Catalogue
    from ipuplan.checker.plan import CheckReport, load_inputs
    from ipuplan.formats import digest
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.certificate import Rows, _split_proof, groups
    from ipuplan.solver.classes import tile_classes
    from ipuplan.solver.problem import build_problem
    g, target = load_inputs(sub, CheckReport(), "stage", base)
    o = sub["options"]
    p = build_problem(g, target, sub["batch"], headroom=o["headroom"], relays=o["relays"],
                      catalogue=Catalogue(o.get("catalogue", "grid")))
    classes = tile_classes([p.vectors[i] for i in sorted({cb.vec for cb in p.contribs})], target.tiles)
    body = _split_proof(p, classes, Rows(p), groups(p), Budget.start(60, 600))
    assert body is not None and body["kind"] == "split"
    out = {k: v for k, v in sub.items() if k not in ("farkas", "counting", "z3")}
    out.update(body)
    out["digest"] = digest(out)
    return out


def test_a_stage_refuted_by_a_split_is_lifted_case_by_case(tmp_path, t8, cli):
    """2 chips for 24 layers of vit-small on 8 tiles (no 12-layer stem or head has a plan): the stem's certificate
    replaced by a case split over an op's implementations is re-proved case by case at every count from 13 to 23
    layers, and a split that leaves out a case is refused; the solve keeps a split stage certificate as a proof."""
    from types import SimpleNamespace

    from ipuplan.checker.certificate import check_certificate
    from ipuplan.formats import digest
    from ipuplan.model.stage import Stage
    from ipuplan.pipeline.refute import refuted
    from ipuplan.solver.solve import SolveResult, Verdict
    d = tmp_path / "two"
    r = cli("solve", VIT, "--target", t8, "--batch", "2", "--layers", "24", "--ipus", "2", "-o", d)
    assert r.code == 1, r.out + r.err
    cert = json.loads((d / "certificate.json").read_text())
    assert cert["kind"] == "pipeline-stages" and set(cert["stages"]) == {"stem", "head"}
    cert["stages"]["stem"] = _as_split(cert["stages"]["stem"], d)
    cert["digest"] = digest(cert)
    rep = check_certificate(cert, base=d)
    assert rep.ok, rep.violations
    assert any(line.startswith("stem with 12 layers: split:") for line in rep.lines), rep.lines
    assert "stem: the same rows re-proved with every count from 13 to 23 layers (the most a stem stage holds among " \
        "2 chips)" in rep.lines, rep.lines
    short = json.loads(json.dumps(cert))
    short["stages"]["stem"]["split"]["cases"].pop()
    short["stages"]["stem"]["digest"] = digest(short["stages"]["stem"])
    short["digest"] = digest(short)
    rep = check_certificate(short, base=d)
    assert not rep.ok and "each once" in rep.violations[0], rep.violations

    def solved(st, body):  # what the partition search keeps of a stage problem: its job's stage and its result
        return SimpleNamespace(job=SimpleNamespace(stage=st), result=SolveResult(Verdict.INFEASIBLE, None,
                                                                                certificate=body))
    kept = refuted({1: solved(Stage.of(0, 12, 24), {"kind": "split", "rows": []}),
                    2: solved(Stage.of(12, 12, 24), {"kind": "machine"})})
    assert set(kept) == {"stem"} and kept["stem"].count == 12


def test_pipeline_input_errors(tmp_path, cli):
    nolink = tmp_path / "nolink.yaml"
    nolink.write_text(SMALL.read_text().split("\n# Between chips")[0] + "\n")
    r = cli("solve", VIT, "--target", nolink, "--ipus", "2", "-o", tmp_path / "x")
    assert r.code == 2 and "declares no link" in r.err and "Traceback" not in r.err
    r = cli("solve", VIT, "--target", SMALL, "--ipus", "3", "-o", tmp_path / "x")
    assert r.code == 2 and "every stage holds at least one layer" in r.err
    r = cli("solve", VIT, "--target", SMALL, "--ipus", "2", "--objective", "fast", "-o", tmp_path / "x")
    assert r.code == 2 and "valid: throughput, latency" in r.err


def test_report_shows_the_stages(built, tmp_path):
    """`report DIR` of a pipeline: one row per stage with its time and link transfer, each linking to the stage's
    own page (written beside it); in Chromium when the system has it."""
    import shutil
    import re
    assert run_main("report", built) == 0
    page = (built / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
    stages = data["pipeline"]["stages"]
    assert [s["count"] for s in stages] == [6, 8] and stages[0]["link_cycles"] > 0 == stages[1]["link_cycles"]
    assert all((built / s["dir"] / "report.html").exists() for s in stages)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            p = b.new_page()
            errors: list = []
            p.on("pageerror", lambda e: errors.append(str(e)))
            p.goto((built / "report.html").as_uri())
            p.wait_for_selector("body[data-rendered='1']", timeout=30_000)
            assert p.is_visible("#pipeline") and p.locator("#pgrid tr").count() == 3 and not errors
            assert "images/s modeled" in p.inner_text("#pnote")
        finally:
            b.close()


def test_python_api_pipeline(tmp_path, t8):
    import ipuplan.api as api
    s = api.solve(VIT, batch=2, target=SMALL, ipus=2, out=tmp_path / "p")  # one layer a stage: no moves
    assert s.verdict == "FIT" and s.exit_code == 0 and s.modeled_cycles == s.document["throughput"]["bottleneck_cycles"]
    c = api.check(tmp_path / "p")
    assert c.ok and c.kind == "pipeline"
    s = api.solve(VIT, batch=2, target=t8, layers=30, ipus=2, out=tmp_path / "q")
    assert s.verdict == "INFEASIBLE" and api.check(tmp_path / "q").ok


def test_sweep_over_chip_counts(tmp_path, cli):
    r = cli("sweep", VIT, "--target", SMALL, "--batch", "2", "--set", "ipus=1,2", "--workers", "2", "-o", tmp_path)
    assert r.code == 0, r.out + r.err
    cases = {c["settings"]["ipus"]: c for c in json.loads((tmp_path / "sweep.json").read_text())["cases"]}
    assert {k: (c["verdict"], c["checked"]) for k, c in cases.items()} == {"1": ("FIT", True), "2": ("FIT", True)}
    assert all(c["images_per_s"] > 0 for c in cases.values())
    assert (tmp_path / "cases" / cases["2"]["name"] / "pipeline.json").exists()


def test_stage_refutations_bound_every_partition():
    """The counting argument behind a pipeline-stages certificate, against every partition enumerated: when the
    refuted counts prove it, every partition has a stage at or above its kind's refuted count."""
    from ipuplan.model.stage import Stage
    from ipuplan.pipeline.refute import Refuted, proves

    def partitions(L, n):
        for cuts in combinations(range(1, L), n - 1):
            b = (0,) + cuts + (L,)
            yield [b[i + 1] - b[i] for i in range(n)]
    kind = lambda i, n: "stem" if i == 0 else "head" if i == n - 1 else "middle"
    for L in range(2, 11):
        for n in range(2, min(L, 4) + 1):
            for ks in ((1, 1, 1), (3, 2, 4), (4, 4, 4), (2, 9, 3), (5, 3, 2)):
                ref = {k: Refuted(Stage(0, c, k == "stem", k == "head"), {})
                       for k, c in zip(("stem", "middle", "head"), ks)}
                escapes = any(all(c < ref[kind(i, n)].count for i, c in enumerate(p)) for p in partitions(L, n))
                assert proves(L, n, ref) == (not escapes), (L, n, ks)


def test_middle_stage_graph_does_not_depend_on_its_position():
    """A pipeline-stages certificate re-proves a middle stage at one position for all: the graphs differ only in
    the header that names the first layer."""
    from ipuplan.ir.printer import print_graph
    from ipuplan.model import build_graph, load_model
    from ipuplan.model.stage import Stage
    for model in (VIT, MODELS / "pe-tiny.yaml"):
        spec = load_model(str(model)).with_options(layers=8)
        for count in (1, 3):
            texts = {print_graph(build_graph(spec, 2, Stage.of(f, count, 8))).split("\n", 1)[1]
                     for f in range(1, 8 - count)}
            assert len(texts) == 1


def test_partitions_balanced_and_under_caps():
    from ipuplan.pipeline.partition import Partition, balanced, under_caps
    assert balanced(50, 4).counts == (12, 13, 13, 12) and balanced(27, 2).counts == (14, 13)
    assert under_caps(50, [50, 12, 12, 11]).counts == (15, 12, 12, 11)
    assert under_caps(50, [14, 12, 12, 11]) is None and under_caps(3, [5, 5, 5, 5]) is None
    for layers, caps in ((30, [9, 12, 12]), (10, [9, 9, 9]), (7, [1, 5, 1])):
        p = under_caps(layers, caps)
        assert p.layers == layers and all(1 <= c <= k for c, k in zip(p.counts, caps))
        assert max(p.counts) - min(c for c, k in zip(p.counts, caps) if k >= max(p.counts)) <= 1
    assert Partition((3, 1)).moves(1) == [] and Partition((3, 1)).moves(0) == [Partition((2, 2))]
    assert [p.counts for p in Partition((12, 13, 13, 12)).moves(3)] == [(12, 13, 14, 11), (12, 14, 13, 11),
                                                                       (13, 13, 13, 11)]
    assert [p.counts for p in Partition((2, 2, 2)).moves(1)] == [(3, 1, 2), (2, 1, 3)]


def _known_stages(monkeypatch, cycles) -> list:
    """Stage problems with known answers: `cycles(stage)` is the plan's cycles, or None for no plan. Returns the
    list of stage problems posed, in order."""
    import dataclasses as dc

    import ipuplan.pipeline.solve as ps
    from ipuplan.solver.solve import SolveResult, Verdict
    calls = []

    def fake_solve(job, report=None):
        calls.append(job.stage.problem)
        c = cycles(job.stage)
        r = SolveResult(Verdict.FIT if c is not None else Verdict.INFEASIBLE, None, stats={"status": "OPTIMAL"},
                        plan={"cycles": {"modeled": c}} if c is not None else None)
        return ps.SolvedJob(job, None, None, r, None)

    def fake_write(s, d, stage=None):
        s.doc = {"cycles": {"modeled": s.result.plan["cycles"]["modeled"], "gap": 0.0},
                 "stage": (stage or s.job.stage).record()}
        return dc.replace(s.result)
    monkeypatch.setattr(ps, "solve_job", fake_solve)
    monkeypatch.setattr(ps, "write_solved", fake_write)
    return calls


def test_search_moves_under_failed_counts(tmp_path, monkeypatch):
    """The partition search against stage problems with known answers: a stage has a plan up to a layer count per
    kind (stem 5, middle 10, head 6 here) at 1,000 cycles a layer. On 3 chips the search leaves the balanced 7 + 7 + 6
    for partitions under the counts seen to fail until every stage has a plan; on 2 chips no partition is under them
    and the verdict is UNKNOWN, saying so."""
    import ipuplan.pipeline.solve as ps
    from ipuplan.job.solve import Job
    from ipuplan.solver.solve import SolveOptions, Verdict
    cap = {(True, False): 5, (False, False): 10, (False, True): 6}
    calls = _known_stages(monkeypatch, lambda st: 1000 * st.count if st.count <= cap[(st.stem, st.head)] else None)
    job = Job(str(VIT), str(SMALL), 2, 20, options=SolveOptions(batch=2))
    o = ps.run_pipeline(ps.PipelineJob(job, 3), tmp_path / "three")
    assert o.verdict is Verdict.FIT
    assert [s["stage"]["count"] for s in o.doc["stages"]] == [5, 9, 6]
    assert [p["counts"] for p in o.doc["partition_search"]["partitions"]] == [[7, 7, 6], [6, 7, 7], [5, 9, 6]]
    assert len(calls) == len(set(calls))  # each stage problem solved once
    o = ps.run_pipeline(ps.PipelineJob(job, 2), tmp_path / "two")
    assert o.verdict is Verdict.UNKNOWN and o.doc["partition_search"]["caps_exhausted"]
    assert "2 chips cannot hold it within the catalogue" in o.doc["unknown"]["reason"]


def test_a_layer_moves_past_full_stages(tmp_path, monkeypatch):
    """A slow head whose neighbour is full: 20 layers on 4 chips, middle stages fail beyond 3 layers. The search
    leaves 5 + 5 + 5 + 5 for 7 + 3 + 3 + 7, where the head (150,000 cycles a layer) is slowest; its layer goes to
    the stem past both full middle stages (a neighbour-only move has nowhere to go)."""
    import ipuplan.pipeline.solve as ps
    from ipuplan.job.solve import Job
    from ipuplan.solver.solve import SolveOptions, Verdict
    middle = lambda st: not (st.stem or st.head)  # noqa: E731
    _known_stages(monkeypatch, lambda st: None if middle(st) and st.count > 3 else
                  (150_000 if st.head else 100_000) * st.count)
    o = ps.run_pipeline(ps.PipelineJob(Job(str(VIT), str(SMALL), 2, 20, options=SolveOptions(batch=2)), 4), tmp_path)
    assert o.verdict is Verdict.FIT
    assert [s["stage"]["count"] for s in o.doc["stages"]] == [8, 3, 3, 6]
    assert [p["counts"] for p in o.doc["partition_search"]["partitions"]][2:4] == [[7, 3, 3, 7], [8, 3, 3, 6]]


def test_a_layer_no_chip_holds(tmp_path, cli):
    """One tile per chip: layer 1 with the head exceeds a chip, so no number of chips holds the model."""
    t1 = tmp_path / "t1.yaml"
    t1.write_text(SMALL.read_text().replace("tiles: 64 ", "tiles: 1 ", 1))
    r = cli("solve", VIT, "--target", t1, "--batch", "2", "--ipus", "2", "-o", tmp_path / "p")
    assert r.code == 1 and "layer 1 alone" in r.out
    r = cli("check", tmp_path / "p")
    assert r.code == 0 and "no partition over any number of chips fits" in r.out


def test_sweep_records_a_pipeline_certificate(tmp_path, cli):
    """A pipeline INFEASIBLE's certificate kind reaches the sweep's record (the verdict's `certificate.kind`)."""
    t8 = tmp_path / "t8.yaml"
    t8.write_text(SMALL.read_text().replace("tiles: 64 ", "tiles: 8 ", 1))
    r = cli("sweep", VIT, "--target", t8, "--batch", "2", "--layers", "200", "--set", "ipus=2", "--workers", "1",
            "-o", tmp_path / "s")
    assert r.code == 0, r.out + r.err
    (case,) = json.loads((tmp_path / "s" / "sweep.json").read_text())["cases"]
    assert (case["verdict"], case["certificate"], case["checked"]) == ("INFEASIBLE", "pipeline-machine", True)
