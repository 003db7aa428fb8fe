"""INFEASIBLE certificates: written by solve, re-proved by `ipuplan check` with the checker's own code, each
kind (counting, Farkas, z3) exercised, tampered certificates and foreign catalogues rejected."""

from __future__ import annotations

import copy
from fractions import Fraction
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS, ROOT
from ipuplan.checker.certificate import check_certificate
from ipuplan.formats import catalogue_digest, digest
from tests_helpers import run_main, target_with_tiles, vit_small_fp8

SMALL = ROOT / "targets" / "small64.yaml"


def _solve_memory_case(d):
    """vit-small at batch 4 on 16 tiles with 520,000 B per tile held back, solved into `d`/out (under whatever the
    calling test patches): exit code, directory, verdict.json."""
    out = d / "out"
    code = run_main("solve", MODELS / "vit-small.yaml", "--batch", "4", "--target", target_with_tiles(d, 16),
                    "--headroom", "520000", "-o", out)
    return code, out, json.loads((out / "verdict.json").read_text())


@pytest.fixture(scope="module")
def memory_cert(tmp_path_factory):
    """vit-small at batch 4 on 16 tiles with 520,000 B per tile held back: does not fit; a counting bound on one
    tile row."""
    code, out, _ = _solve_memory_case(tmp_path_factory.mktemp("cert"))
    assert code == 1
    return out


def _cert(d):
    return json.loads((d / "certificate.json").read_text())


def _fixed(c):
    c["digest"] = digest(c)
    return c


def test_cli_check_verifies_the_certificate(cli, memory_cert):
    r = cli("check", memory_cert)
    assert r.code == 0 and "CERTIFICATE VERIFIED" in r.out, r.out
    c = _cert(memory_cert)
    assert c["kind"] == "counting" and len(c["rows"]) == 1 and c["rows"][0]["kind"] == "memory"
    assert c["rows"][0]["cheapest_bytes"] > c["rows"][0]["capacity"]
    assert c["scope"]["implementations"] == sum(len(v) for v in c["candidates"].values())


def test_explain_names_tile_step_bytes_and_the_machine(cli, memory_cert):
    r = cli("explain", memory_cert)
    assert r.code == 0
    assert "certificate: counting" in r.out and "memory[tile" in r.out and "machine: parameters" in r.out
    doc = json.loads(cli("explain", memory_cert, "--json").out)
    cert = doc["core"]["certificate"]
    assert cert["row_details"][0]["cheapest_by_group"], "the row lists its cheapest contributors"


def test_a_foreign_catalogue_is_rejected(cli, memory_cert, tmp_path):
    c = _cert(memory_cert)
    op = next(k for k, v in c["candidates"].items() if len(v) > 1)
    c["candidates"][op] = c["candidates"][op][:1]
    c["scope"]["implementations"] -= len(_cert(memory_cert)["candidates"][op]) - 1
    c["scope"]["catalogue_sha256"] = catalogue_digest(c["candidates"])
    c = _fixed(c)
    rep = check_certificate(c)
    assert not rep.ok and "catalogue" in rep.violations[0]
    (tmp_path / "certificate.json").write_text(json.dumps(c))
    assert cli("check", tmp_path).code == 1


def test_z3_reproves_the_same_rows(memory_cert):
    c = _cert(memory_cert)
    c["kind"] = "z3"
    rep = check_certificate(_fixed(c))
    assert rep.ok and any(line.startswith("z3:") for line in rep.lines), rep.violations


def _problem_of(c: dict):
    """The certificate's problem, rebuilt from the inputs it names."""
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    from ipuplan.catalogue import Catalogue
    o = c["options"]
    return build_problem(build_graph(load_model(c["inputs"]["model"]["path"]), c["batch"]),
                         load_target(c["inputs"]["target"]["path"]), c["batch"], headroom=o["headroom"],
                         relays=o["relays"], catalogue=Catalogue(o["catalogue"]))


def _as_farkas(c: dict) -> dict:
    """The same row proved with Farkas weights from the builder's LP (scipy HiGHS)."""
    from ipuplan.solver.certificate import Rows, farkas
    p = _problem_of(c)
    r = c["rows"][0]
    weights, mult, margin = farkas(p, [Rows(p).row(r["kind"], r["tile"], p.steps.index(r["step"]))])
    c = copy.deepcopy(c)
    c["kind"] = "farkas"
    c["rows"][0]["weight"] = str(weights[0])
    c["farkas"] = {"rules": {k: str(v) for k, v in mult.items()}, "margin": str(margin), "margin_float": float(margin)}
    return _fixed(c)


def test_farkas_weights_from_the_lp_are_reproved_exactly(memory_cert):
    c = _as_farkas(_cert(memory_cert))
    rep = check_certificate(c)
    assert rep.ok and any(line.startswith("farkas:") for line in rep.lines), rep.violations
    assert Fraction(c["farkas"]["margin"]) > 0


def test_the_farkas_row_deletion_stops_at_the_wall_clock_with_weights_that_still_prove(memory_cert):
    """The certificate's row between two others: with time left the deletion keeps a single row; with the wall
    clock run out it stops at once, keeping all three, not minimal, still proving."""
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.certificate import Rows, _RuleSystem, _fewest_rows
    c = _cert(memory_cert)
    p, r = _problem_of(c), c["rows"][0]
    rows = Rows(p)
    step = p.steps.index(r["step"])
    cand = [rows.row("memory", (r["tile"] + 1) % 16, 0), rows.row(r["kind"], r["tile"], step),
            rows.row("memory", (r["tile"] + 2) % 16, 0)]
    system = _RuleSystem(p)
    keep, (_, _, margin), done = _fewest_rows(p, cand, [0, 1, 2], system, Budget.start(10, 600))
    assert len(keep) == 1 and done and margin > 0
    keep, (_, _, margin), done = _fewest_rows(p, cand, [0, 1, 2], system, Budget.start(10, -1))
    assert keep == [0, 1, 2] and not done and margin > 0


def test_weights_that_do_not_prove_are_rejected(memory_cert):
    c = _as_farkas(_cert(memory_cert))
    c["farkas"]["rules"] = {}
    assert not check_certificate(_fixed(c)).ok
    c = _as_farkas(_cert(memory_cert))
    c["farkas"]["rules"]["one:no such group"] = "1"
    assert not check_certificate(_fixed(c)).ok
    c = _as_farkas(_cert(memory_cert))
    c["rows"][0]["weight"] = "-1"
    assert not check_certificate(_fixed(c)).ok


def test_machine_statement_is_recomputed(memory_cert):
    c = _cert(memory_cert)
    assert not c["machine"]["proves"], "16 whole tiles hold vit-small's parameters: the proof is the catalogue's"
    c["machine"]["parameter_bytes"] += 1
    rep = check_certificate(_fixed(c))
    assert not rep.ok and "machine" in rep.violations[0]


def test_parameters_beyond_the_machine_are_infeasible_without_a_solver(cli, tmp_path):
    """One tile cannot hold vit-small's 1.18 MB of parameters: the machine bound answers before any model is
    built, with a certificate the checker re-derives from the IR and the target alone."""
    t = target_with_tiles(tmp_path, 1)
    out = tmp_path / "m"
    r = cli("solve", MODELS / "vit-small.yaml", "--target", t, "-o", out)
    assert r.code == 1 and "no compiler can fit this on one c600" in " ".join(r.out.split()), r.out
    c = _cert(out)
    assert c["kind"] == "machine" and c["machine"]["proves"] and "candidates" not in c
    r = cli("check", out)
    assert r.code == 0 and "CERTIFICATE VERIFIED" in r.out and "instance: model vit-small" in r.out
    c["machine"]["capacity_bytes"] *= 4
    assert not check_certificate(_fixed(c)).ok


def test_check_names_the_instance_first(cli, memory_cert):
    r = cli("check", memory_cert)
    lines = r.out.splitlines()
    assert lines[0].startswith("instance: model vit-small") and "batch 4" in lines[0]
    assert "headroom 520000" in lines[1]


def test_certificate_checking_needs_neither_ortools_nor_the_solver(memory_cert):
    import subprocess
    import sys
    code = f"""
import sys, json
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'ortools' or name.startswith('ipuplan.solver'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from ipuplan.checker.certificate import check_certificate
rep = check_certificate(json.load(open({str(memory_cert / 'certificate.json')!r})))
assert rep.ok, rep.violations
assert not [m for m in sys.modules if m.startswith(('ortools', 'ipuplan.solver'))]
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_table_budget_gives_a_counting_bound(cli, tmp_path):
    out = tmp_path / "tb"
    r = cli("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "--exchange-table-budget", "64",
            "--no-explain", "-o", out)
    assert r.code == 1
    c = _cert(out)
    assert c["kind"] == "counting" and c["rows"][0]["kind"] == "tables"
    assert c["rows"][0]["cheapest_bytes"] > c["rows"][0]["capacity"] == 64
    assert cli("check", out).code == 0


def test_a_grid_of_more_cells_than_tiles_is_checked(cli, tmp_path):
    """6 images x 2 heads on 8 tiles: attention's groups wrap around the tiles, and so does the FP8 cast of its
    output, whose default replica stride (12 cells) exceeds the tile count. The certificate lists it among the
    candidates and verifies; a stride beyond both the tile count and that default is still rejected."""
    m = vit_small_fp8(tmp_path / "vit-small-fp8.yaml")
    out = tmp_path / "wrap"
    r = cli("solve", m, "--batch", "6", "--target", target_with_tiles(tmp_path, 8), "--headroom", "560000",
            "--no-explain", "-o", out)
    assert r.code == 1, r.out
    c = _cert(out)
    (cast,) = [im for im in c["candidates"]["encoder/o.x8"] if im["output"]["pr"] * im["output"]["pc"] > 8]
    assert cast["output"]["replicas"] == 1 and cast["output"]["rep_stride"] == 12
    assert check_certificate(c).ok
    from ipuplan.checker.validate import Invalid, output_layout
    lay = cast["output"]
    shape = (8, lay["rows"], lay["cols"], lay["elem"])
    assert output_layout(cast, "cast", *shape)["rep_stride"] == 12
    with pytest.raises(Invalid, match=r"cast.output.rep_stride: 13 is invalid; valid: 0..12"):
        output_layout({"output": dict(lay, rep_stride=13)}, "cast", *shape)


def test_check_without_certificate_is_bad_input(cli, memory_cert, tmp_path):
    (tmp_path / "verdict.json").write_text((memory_cert / "verdict.json").read_text())
    r = cli("check", tmp_path)
    assert r.code == 2 and "certificate" in r.err


def test_tampered_copies_fail(memory_cert):
    from test_plans import tampered
    c = _cert(memory_cert)
    for name, bad in tampered(copy.deepcopy(c)):
        assert not check_certificate(bad).ok, name


def test_without_a_core_the_tightest_rows_are_scanned(cli, tmp_path, monkeypatch):
    """When the re-solve under assumptions finds no core within its share of the effort, the certificate scans every
    tile class's rows, tightest counting bound first: the verdict is still INFEASIBLE with rows the checker re-proves
    (here a counting bound), the certificate records no core, and the verdict says so instead of naming none."""
    import ipuplan.solver.solve as solve
    monkeypatch.setattr(solve, "infeasible_core", lambda *a, **k: ([], None))
    t = target_with_tiles(tmp_path, 16)
    out = tmp_path / "out"
    r = cli("solve", MODELS / "vit-small.yaml", "--batch", "4", "--target", t, "--headroom", "490000",
            "--no-explain", "-o", out)
    assert r.code == 1, r.out + r.err
    assert "conflicting families: no core found within the effort" in r.out, r.out
    r = cli("explain", out)
    assert r.code == 0 and "core: none found within the effort" in r.out, r.out + r.err
    c = _cert(out)
    assert c["kind"] in ("counting", "farkas") and c["core"] == [] and len(c["rows"]) == 1
    assert check_certificate(c, base=out).ok


def _out_of_wall(*a, **k):
    from ipuplan.solver.budget import WallClockExpired
    raise WallClockExpired


def test_a_certificate_in_hand_survives_the_time_limit_while_explaining(cli, tmp_path, monkeypatch):
    """The wall clock runs out after the certificate is found, while the core is minimized and the least-overflowing
    plan sought: the verdict stays INFEASIBLE on the certificate, which `check` re-proves, and verdict.json says the
    explanation was cut short."""
    import ipuplan.solver.solve as solve
    monkeypatch.setattr(solve, "minimize_core", _out_of_wall)
    code, out, doc = _solve_memory_case(tmp_path)
    assert code == 1
    assert doc["verdict"] == "INFEASIBLE" and doc["core"]["explanation"]["status"] == "WALL_CLOCK"
    assert not doc["core"]["minimal"], "the core was not minimized"
    r = cli("check", out)
    assert r.code == 0 and "CERTIFICATE VERIFIED" in r.out, r.out
    assert "time-limit of 600 s ran out" in cli("explain", out).out


def test_without_a_certificate_the_time_limit_still_means_unknown(tmp_path, monkeypatch):
    """The same cut with no certificate found: nothing is proven, so the answer is UNKNOWN."""
    import ipuplan.solver.solve as solve
    monkeypatch.setattr(solve, "build_certificate", lambda *a, **k: {"kind": None, "rows": []})
    monkeypatch.setattr(solve, "elastic_explanation", _out_of_wall)
    code, _, doc = _solve_memory_case(tmp_path)
    assert code == 3
    assert doc["verdict"] == "UNKNOWN" and "time-limit" in doc["unknown"]["reason"]


def test_the_time_limit_while_seeking_a_proof_keeps_cpsats_refutation_in_the_stats(tmp_path, monkeypatch):
    """The wall clock runs out after CP-SAT refuted the model, while the core is re-solved: UNKNOWN (nothing is
    proven), and verdict.json still says that CP-SAT found no plan, with the solver's status."""
    import ipuplan.solver.solve as solve
    monkeypatch.setattr(solve, "infeasible_core", _out_of_wall)
    code, _, doc = _solve_memory_case(tmp_path)
    assert code == 3 and doc["verdict"] == "UNKNOWN"
    assert "CP-SAT found no plan, but the --time-limit of 600 s ran out" in doc["unknown"]["reason"]
    assert doc["solver"]["status"] == "INFEASIBLE", doc["solver"]


def test_without_any_proof_the_verdict_is_unknown_and_says_which_proofs_were_sought(tmp_path, monkeypatch):
    """CP-SAT's INFEASIBLE with no certificate of any kind: UNKNOWN, naming the four proof kinds sought and what
    they were sought over."""
    import ipuplan.solver.solve as solve
    monkeypatch.setattr(solve, "build_certificate", lambda *a, **k: {"kind": None, "rows": []})
    code, _, doc = _solve_memory_case(tmp_path)
    assert code == 3 and doc["verdict"] == "UNKNOWN"
    assert "no independent proof (counting, Farkas, split or z3) of its core" in doc["unknown"]["reason"]


def _as_split(c: dict) -> dict:
    """The same instance proved by the builder's case split (each implementation of the first op it tries fixed
    in turn, Farkas weights for each case)."""
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.certificate import Rows, _split_proof, groups
    from ipuplan.solver.classes import tile_classes
    p = _problem_of(c)
    classes = tile_classes([p.vectors[i] for i in sorted({cb.vec for cb in p.contribs})], p.target.tiles)
    body = _split_proof(p, classes, Rows(p), groups(p), Budget.start(60, 600))
    assert body is not None and body["kind"] == "split"
    c = copy.deepcopy(c)
    c.update(body)
    return _fixed(c)


@pytest.fixture(scope="module")
def split_cert(memory_cert):
    return _as_split(_cert(memory_cert))


def test_a_split_certificate_is_reproved_case_by_case(split_cert):
    rep = check_certificate(split_cert)
    assert rep.ok and any(line.startswith("split:") for line in rep.lines), rep.violations
    cases = split_cert["split"]["cases"]
    assert [k["implementation"] for k in cases] == list(range(len(split_cert["candidates"][split_cert["split"]["op"]])))


@pytest.mark.parametrize("tamper, message", [
    (lambda s: s["cases"].pop(), "each once"),
    (lambda s: s["cases"].reverse(), "each once"),
    (lambda s: s.update(op="no such op"), "not an op"),
    (lambda s: s["cases"][0]["farkas"]["weights"].__setitem__(0, "-1"), "negative weight"),
    (lambda s: s["cases"][0]["farkas"].update(rows=[10 ** 6]), "indices"),
    (lambda s: s["cases"][0]["farkas"].update(weights=["0"] * len(s["cases"][0]["farkas"]["weights"])), "fractional"),
])
def test_a_split_that_does_not_cover_or_prove_is_rejected(split_cert, tamper, message):
    c = copy.deepcopy(split_cert)
    tamper(c["split"])
    rep = check_certificate(_fixed(c))
    assert not rep.ok and message in rep.violations[0], rep.violations


def test_a_case_is_bounded_with_its_implementation_chosen():
    """One row, 10 B if implementation 0 of op g is chosen, 0 B for implementation 1, capacity 5: the row alone
    admits a selection (implementation 1), so it proves nothing; in the case g = 0 it proves by its weight."""
    from types import SimpleNamespace

    import numpy as np

    from ipuplan.checker.farkas import farkas_bound
    lits = [("impl", "g", 0), ("impl", "g", 1)]
    sp = SimpleNamespace(lits=lits, index={k: i for i, k in enumerate(lits)}, groups={"g": lits}, ends={})
    rows = [({"name": "memory[tile 0]"}, np.array([10, 0]), np.zeros(2, np.int64), 5, 0)]
    low, d = farkas_bound(sp, rows, ["1"], {})
    assert low <= d
    low, d = farkas_bound(sp, rows, ["1"], {}, fixed=frozenset({0}))
    assert (low, d) == (10, 5)
    low, d = farkas_bound(sp, rows, ["1"], {"one:g": "-10"}, fixed=frozenset({1}))
    assert low <= d, "the case g = 1 fits: no weights prove it"


def _fraction_bound(sp, rows, weights, mults, fixed):
    """The checker's Farkas bound by its definition, summed term by term in fractions."""
    from fractions import Fraction

    from ipuplan.checker.farkas import structure
    c, d = [Fraction(0)] * len(sp.lits), Fraction(0)
    for (_, coef, tcoef, cap, _), w in zip(rows, weights):
        for i, v in enumerate((coef + tcoef).tolist()):
            c[i] += Fraction(w) * v
        d += Fraction(w) * cap
    rules = structure(sp)
    for name, m in mults.items():
        for i, v in rules[name][0].items():
            c[i] += Fraction(m) * v
        d += Fraction(m) * rules[name][1]
    return sum((x for i, x in enumerate(c) if x < 0 or i in fixed), Fraction(0)), d


_weight = st.one_of(st.fractions(0, 10**6).map(str), st.floats(0, 1e6, allow_subnormal=True).map(repr),
                    st.floats(0, 1e-300, allow_subnormal=True).map(lambda f: str(Fraction(f))))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(-10**6, 10**6), min_size=6, max_size=6), st.integers(0, 10**9),
                          _weight), min_size=1, max_size=4),
       st.dictionaries(st.sampled_from(["one:g", "one:h"]), st.fractions(-10**3, 10**3).map(str)),
       st.frozensets(st.integers(0, 5)))
def test_the_checkers_farkas_bound_is_the_sum_in_fractions(rows, mults, fixed):
    """Weights as certificate.json writes them (fractions, float reprs, tiny dyadic fractions), integer rows: the
    bound summed on one common denominator is the fraction sum's, term by term."""
    from types import SimpleNamespace

    import numpy as np

    from ipuplan.checker.farkas import farkas_bound
    lits = [("impl", "g", i) for i in range(3)] + [("impl", "h", i) for i in range(3)]
    sp = SimpleNamespace(lits=lits, index={k: i for i, k in enumerate(lits)}, groups={"g": lits[:3], "h": lits[3:]},
                         ends={})
    built = [({"name": f"memory[tile {i}]"}, np.array(coef, np.int64), np.zeros(6, np.int64), cap, 0)
             for i, (coef, cap, _) in enumerate(rows)]
    weights = [w for *_, w in rows]
    assert farkas_bound(sp, built, weights, mults, fixed) == _fraction_bound(sp, built, weights, mults, fixed)
