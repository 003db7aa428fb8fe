"""Per-GEMM FP8 scales: the choice rule, the scales file, the graph built with them, and the command line
(calibrate, build --scales, check, run's cosine floor)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import MODELS, ROOT
from ipuplan.errors import ModelError
from ipuplan.model import build_graph, load_model
from ipuplan.model.build import gemm_scales
from ipuplan.model.weights import random_weights
from ipuplan.numerics import F143_MAX
from ipuplan.scales import choose, load_scales, scale_for, write_scales

SMALL = ROOT / "targets" / "small64.yaml"


def test_scale_for_is_the_finest_grid_that_holds_the_largest_value():
    assert scale_for(240.0) == 0
    assert scale_for(240.1) == 1
    assert scale_for(120.0) == -1
    assert scale_for(1.0) == -7  # 1 * 2^7 = 128 <= 240 < 256
    assert scale_for(1.0, headroom=1) == -6
    for m in (1e-5, 0.37, 3.9, 5e3):
        s = scale_for(m)
        assert m * 2.0 ** -s <= F143_MAX < m * 2.0 ** -(s - 1)
    with pytest.raises(ValueError):
        scale_for(0.0)


def _fp8():
    return load_model(MODELS / "vit-small.yaml").with_options(precision="fp8")


def test_graph_takes_each_gemms_scales():
    spec = _fp8().with_options(fp8_scales={"encoder/fc1": (-2, -6), "embed": (0, -3)})
    g = build_graph(spec, 2)
    got = gemm_scales(g)
    assert got["encoder/fc1"] == (-2, -6) and got["embed"] == (0, -3) and got["head.q"] == (-4, -4)
    vals = {v.name: v for v in g.values}
    assert vals["layers.fc1.w"].scale == -6 and vals["embed.w"].scale == -3 and vals["head.q.w"].scale == -4
    body = next(op.attrs.body for op in g.ops if op.kind.value == "repeat")
    assert body.value("fc1.x8").scale == -2 and body.value("fc1.w").scale == -6


def test_unknown_gemm_or_f16_model_is_named():
    with pytest.raises(ModelError, match="fc9 is not a GEMM of vit-small.*valid: embed, encoder/qkv"):
        build_graph(_fp8().with_options(fp8_scales={"fc9": (1, 1)}), 1)
    with pytest.raises(ModelError, match="scales apply to precision fp8"):
        build_graph(load_model(MODELS / "vit-small.yaml").with_options(fp8_scales={"embed": (1, 1)}), 1)


def test_choice_keeps_operands_in_fp8_and_sums_in_the_accumulator(tmp_path):
    spec = _fp8()
    g = build_graph(spec, 2)
    w = random_weights(g, spec, 0)
    x = {"patches": np.random.default_rng(0).standard_normal((2, spec.patches, spec.patch_dim)).astype(np.float32)}
    sc = choose(g, spec.name, w, x, 2, float(np.finfo(np.float16).max))
    assert [s.gemm for s in sc.gemms] == list(gemm_scales(g))
    for s in sc.gemms:
        assert s.w_max * 2.0 ** -s.w <= F143_MAX and s.x_max * 2.0 ** -s.x <= F143_MAX / 2  # one binade spare
        assert s.acc_max * 2.0 ** -(s.x + s.w) <= 65504 / 2
    # a tiny accumulator forces the scales up
    tight = choose(g, spec.name, w, x, 2, 64.0)
    assert all(t.x + t.w > s.x + s.w for t, s in zip(tight.gemms, sc.gemms))
    write_scales(sc, tmp_path / "s.json")
    assert load_scales(tmp_path / "s.json") == sc


@pytest.mark.parametrize("doc,why", [("{", "is not a scales file"), ('{"format": "x"}', "format"),
                                     ('{"format": "ipuplan-scales/1", "gemms": {"embed": {"x": 1.5, "w": 0}}}',
                                      "gemms.embed")])
def test_bad_scales_files_are_named(tmp_path, doc, why):
    (tmp_path / "s.json").write_text(doc)
    with pytest.raises(ModelError, match=why):
        load_scales(tmp_path / "s.json")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    from tests_helpers import run_main, vit_small_fp8
    d = tmp_path_factory.mktemp("scales")
    vit_small_fp8(d / "m.yaml")
    spec = load_model(d / "m.yaml")
    rng = np.random.default_rng(3)
    np.save(d / "calib.npy", rng.standard_normal((3, 3, spec.image_size, spec.image_size)).astype(np.float32))
    np.save(d / "x.npy", rng.standard_normal((2, 3, spec.image_size, spec.image_size)).astype(np.float32))
    assert run_main("calibrate", d / "m.yaml", "--pixels", d / "calib.npy", "--target", SMALL, "-o", d / "s.json") == 0
    assert run_main("build", d / "m.yaml", "--target", SMALL, "--batch", "2", "--scales", d / "s.json",
                    "-o", d / "b") == 0
    return d


def test_build_records_the_scales_and_check_derives_the_bindings(calibrated, cli):
    d = calibrated
    sc = load_scales(d / "s.json").mapping()
    plan = json.loads((d / "b" / "plan.json").read_text())
    assert {k: tuple(v) for k, v in plan["fp8_scales"].items()} == sc
    r = cli("check", d / "b" / "model.ipupkg")
    assert r.code == 0, r.out + r.err
    r = cli("run", d / "b" / "model.ipupkg", "--pixels", d / "x.npy", "--compare", "--json", "-o", d / "y.npy")
    assert r.code == 0 and json.loads(r.out)["compare"]["plan_faithful"]["bit_exact"]
    # reference --plan takes the plan's scales: the emulator's output bit for bit
    r = cli("reference", d / "m.yaml", "--pixels", d / "x.npy", "--mode", "mixed", "--plan", d / "b",
            "-o", d / "ref.npy")
    assert r.code == 0 and np.array_equal(np.load(d / "ref.npy"), np.load(d / "y.npy"))
    r = cli("reference", d / "m.yaml", "--pixels", d / "x.npy", "--mode", "mixed", "--scales", d / "s.json",
            "-o", d / "ref2.npy")
    assert r.code == 0 and np.load(d / "ref2.npy").shape == (2, 144)


def test_scales_are_covered_by_check(calibrated, tmp_path):
    from ipuplan.checker.package import check_package
    from ipuplan.package.archive import rewrite

    def edit(man, arrays):
        k = next(iter(man["fp8_scales"]))
        man["fp8_scales"][k] = [man["fp8_scales"][k][0] + 1, man["fp8_scales"][k][1]]
    bad = rewrite(calibrated / "b" / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    ok, _, why = check_package(bad)
    assert not ok and "fp8_scales" in why


def test_run_warns_and_fails_below_the_cosine_floor(calibrated, cli):
    d = calibrated
    r = cli("run", d / "b" / "model.ipupkg", "--pixels", d / "x.npy", "--compare", "--min-cosine", "0.999999")
    assert r.code == 1 and "below 0.999999" in r.err
    r = cli("run", d / "b" / "model.ipupkg", "--pixels", d / "x.npy", "--min-cosine", "0.5")
    assert r.code == 2 and "needs --compare" in r.err


def test_calibrate_usage_errors(cli, calibrated):
    r = cli("calibrate", MODELS / "vit-small.yaml", "--pixels", calibrated / "calib.npy")
    assert r.code == 2 and "scales are for FP8 GEMMs" in r.err
    r = cli("calibrate", calibrated / "m.yaml", "-o", calibrated / "t.json")
    assert r.code == 2 and "give exactly one of them" in r.err
    r = cli("build", MODELS / "vit-small.yaml", "--scales", calibrated / "s.json", "-o", calibrated / "x")
    assert r.code == 2 and "scales apply to precision fp8" in r.err
