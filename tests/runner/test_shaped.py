"""The shaped catalogue's layouts through the whole back half: blocks homes (whole and in column chunks), spread
homes beside them, head-aligned QKV outputs written padded and read by attention as whole-row runs — placed,
lowered, package-checked with its symbolic replay, and emulated bit for bit equal to the plan-faithful
reference. vit-small at 24 layers on 64 tiles with most of every tile held back, so that staging pays."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"


@pytest.fixture(scope="module", params=["300000", "400000"])
def built(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"shaped{request.param}")
    assert run_main("build", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "--layers", "24",
                    "--headroom", request.param, "-o", d) == 0
    np.save(d / "pixels.npy", np.random.default_rng(3).standard_normal((2, 3, 28, 28)).astype(np.float32))
    return d


def test_the_plan_uses_the_shaped_layouts(built):
    plan = json.loads((built / "plan.json").read_text())
    assert plan["options"]["catalogue"] == "shaped" and plan["catalogue"]["kind"] == "shaped"
    homes = {h for c in plan["choices"].values() for h in c.get("homes", {}).values()}
    assert "blocks" in homes and "spread" in homes
    assert "qkv" in json.dumps(plan["catalogue"]["grids"]) and all(
        r["why"] for rs in plan["catalogue"]["grids"].values() for r in rs)


def test_package_checks_and_runs_bit_exact(built, cli):
    r = cli("check", built / "model.ipupkg")
    assert r.code == 0 and "PACKAGE CHECK PASSED" in r.out, r.out + r.err
    r = cli("run", built / "model.ipupkg", "--pixels", built / "pixels.npy", "--compare")
    assert r.code == 0 and "BIT-EXACT" in r.out + r.err, r.out + r.err


def test_both_params_cover_chunked_homes_and_padded_heads():
    """The two fixtures between them stage from a chunked vector home and read padded heads (so the cases above
    exercise both); pinned here so that a catalogue change that loses either is noticed."""
    import tempfile
    seen = set()
    for h in ("300000", "400000"):
        with tempfile.TemporaryDirectory() as t:
            assert run_main("solve", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "--layers", "24",
                            "--headroom", h, "-o", t) == 0
            plan = json.loads(open(f"{t}/plan.json").read())
            seen |= {h for c in plan["choices"].values() for h in c.get("homes", {}).values()}
            seen |= {"padded heads" for c in plan["choices"].values() if c.get("out_align")}
    assert {"blocks", "blocks/8", "spread", "padded heads"} <= seen
