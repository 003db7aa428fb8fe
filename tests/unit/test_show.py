"""`ipuplan show`: JSON keys and figures that follow from the shapes."""

from __future__ import annotations

import json

from conftest import MODELS


def test_show_json_keys_and_values(cli):
    r = cli("show", MODELS / "siglip.yaml", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    for k in ("parameters", "parameter_bytes", "flops_per_image", "ops", "tokens", "width", "layers"):
        assert k in d
    assert (d["tokens"], d["width"], d["layers"]) == (729, 1152, 27)
    assert d["ops"]["matmul"] == 1 + 4 * 27 + 5
    # 27 layers of FP8 encoder weights + F16 vectors: the seeds' 392.78 MiB (001_e4029cd7d807a498.txt)
    per_layer = 15_224_832 + 29_344
    assert per_layer * 27 / 2**20 == pytest_approx(392.78)
    assert d["parameter_bytes"]["total"] > per_layer * 27
    assert d["largest_activation"]["name"] == "gelu"


def pytest_approx(x):
    import pytest
    return pytest.approx(x, abs=0.005)


def test_show_text_and_ir(cli):
    r = cli("show", MODELS / "vit-small.yaml", "--batch", "2", "--ir")
    assert r.code == 0, r.err
    assert "parameters" in r.out and "repeat x2" in r.out


def test_flops_scale_with_layers(cli):
    one = json.loads(cli("show", MODELS / "pe.yaml", "--json", "--layers", "1").out)["flops_per_image"]
    two = json.loads(cli("show", MODELS / "pe.yaml", "--json", "--layers", "2").out)["flops_per_image"]
    W, T, M = 1024, 577, 4096
    layer = 2 * T * W * (3 * W + W + 2 * M) + 4 * 16 * T * T * 64
    assert layer <= two - one <= layer * 1.02
