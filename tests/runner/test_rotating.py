"""Rotating (compute-shift) matmuls through the whole back half: vit-small on 64 tiles with every matmul that has
a rotating implementation restricted to those — solved and checked, placed, lowered, package-checked with its
symbolic replay, emulated bit for bit equal to the plan-faithful reference (which sums each output block's
k-slices in its own rotation order); a tampered rotation is refused by the checker."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"


def _rotating_only(monkeypatch):
    from ipuplan.catalogue import CATALOGUE
    from ipuplan.ir.graph import OpKind
    every = CATALOGUE[OpKind.MATMUL]

    def only(ctx, sop):
        impls = every(ctx, sop)
        return [im for im in impls if "rotate" in im.fields] or impls
    monkeypatch.setitem(CATALOGUE, OpKind.MATMUL, only)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    _rotating_only(mp)
    try:
        d = tmp_path_factory.mktemp("rotating")
        assert run_main("build", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "--catalogue",
                        "rotating", "-o", d) == 0
    finally:
        mp.undo()
    np.save(d / "pixels.npy", np.random.default_rng(5).standard_normal((2, 3, 28, 28)).astype(np.float32))
    return d


def test_the_plan_rotates_every_activation_matmul(built):
    plan = json.loads((built / "plan.json").read_text())
    rot = {k: c for k, c in plan["choices"].items() if c.get("rotate")}
    assert {"encoder/qkv", "encoder/o", "encoder/fc1", "encoder/fc2"} <= set(rot)
    assert {c["rotate"] for c in rot.values()} >= {2, 3}  # both an even and an odd number of shifts
    for c in rot.values():
        assert c["pm"] % c["rotate"] == 0 and c["pn"] % c["rotate"] == 0 and c["params"] == "staged"


def test_package_checks_and_runs_bit_exact(built, cli):
    r = cli("check", built / "model.ipupkg")
    assert r.code == 0 and "PACKAGE CHECK PASSED" in r.out, r.out + r.err
    r = cli("run", built / "model.ipupkg", "--pixels", built / "pixels.npy", "--compare")
    assert r.code == 0 and "BIT-EXACT" in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("field,value,says", [("rotate", 9, "rotate: 9 is invalid"),
                                              ("params", "resident", "params: 'resident' is invalid"),
                                              ("pn", 7, "does not fit")])
def test_the_checker_refuses_a_tampered_rotation(built, cli, tmp_path, field, value, says):
    import shutil
    d = tmp_path / "plan"
    shutil.copytree(built, d, ignore=shutil.ignore_patterns("*.ipupkg"))
    plan = json.loads((d / "plan.json").read_text())
    plan["choices"]["encoder/fc2"][field] = value
    (d / "plan.json").write_text(json.dumps(plan))
    r = cli("check", d)
    assert r.code != 0 and says in r.out + r.err, r.out + r.err


@settings(max_examples=60, deadline=None)
@given(pr=st.integers(1, 6), pc=st.integers(1, 6), reps=st.integers(1, 3), cs=st.integers(0, 5), rs=st.integers(0, 5),
       start=st.integers(0, 100))
def test_skewed_layouts_agree_with_the_checkers_geometry(pr, pc, reps, cs, rs, start):
    """A skewed layout's tiles, bytes and offsets as the planner computes them equal the checker's own reading of
    its record, and every block lands on the tile its skew says."""
    from ipuplan.catalogue.records import layout_record
    from ipuplan.checker.geometry import block_tiles, tile_bytes
    from ipuplan.layout import Layout
    lay = Layout(pr * 8, pc * 8, 2, pr=pr, pc=pc, replicas=reps, start=start, row_stride=pc + 1, col_stride=1,
                 rep_stride=pr * (pc + 1), col_skew=cs, row_skew=rs if cs == 0 else 0)
    rec = layout_record(lay)
    T = 1472
    assert (block_tiles(rec, T) == lay.block_tiles(T)).all()
    assert (tile_bytes(rec, T) == lay.tile_bytes(T)).all()
    i, j = np.meshgrid(np.arange(pr), np.arange(pc), indexing="ij")
    rpos, cpos = (i + lay.row_skew * j) % pr, (j + lay.col_skew * i) % pc
    assert (lay.block_tiles(T)[0] == (start + rpos * (pc + 1) + cpos) % T).all()
