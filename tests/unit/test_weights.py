"""Weights: seeded random init statistics, and checkpoint errors (missing, extra, wrong shape)."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

from conftest import MODELS
from tests_helpers import siglip_native as _siglip_native
from ipuplan.errors import WeightsError
from ipuplan.model import build_graph, load_model
from ipuplan.model.weights import load_weights, random_weights


@pytest.fixture
def small():
    spec = load_model(MODELS / "vit-small.yaml")
    return spec, build_graph(spec, 1)


def test_random_weights_are_seeded_and_scaled(small):
    spec, g = small
    a, b, c = random_weights(g, spec, 0), random_weights(g, spec, 0), random_weights(g, spec, 1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["layers.fc2.w"], c["layers.fc2.w"])
    w = a["layers.fc2.w"]
    assert w.shape == (2, 288, 144)
    assert abs(w.std() - 1 / np.sqrt(288)) < 0.005


def test_native_checkpoint_maps_transposed_and_fused(small, tmp_path):
    spec, g = small
    t = _siglip_native(spec)
    path = tmp_path / "w.safetensors"
    save_file({"vision_model." + k: v for k, v in t.items()}, str(path))
    w = load_weights(path, g, spec)
    W = spec.width
    assert np.array_equal(w["layers.qkv.w"][1][:, W:2 * W], t["encoder.layers.1.self_attn.k_proj.weight"].T)
    assert np.array_equal(w["head.kv.w"][:, :W], t["head.attention.in_proj_weight"][W:2 * W].T)
    # patch vector order is (y, x, channel)
    conv = t["embeddings.patch_embedding.weight"]
    assert np.array_equal(w["embed.w"][(2 * 14 + 5) * 3 + 1], conv[:, 1, 2, 5])


def test_checkpoint_errors(small, tmp_path):
    spec, g = small
    t = _siglip_native(spec)
    cases = {
        "missing": ({k: v for k, v in t.items() if k != "head.probe"}, "head.probe: missing tensor"),
        "shape": (t | {"post_layernorm.bias": np.zeros(7, np.float32)}, r"shape \[7\] does not match"),
        "extra": (t | {"encoder.layers.2.mlp.fc1.bias": np.zeros(288, np.float32)}, "unexpected tensor"),
    }
    for name, (tensors, msg) in cases.items():
        path = tmp_path / f"{name}.safetensors"
        save_file(tensors, str(path))
        with pytest.raises(WeightsError, match=msg) as e:
            load_weights(path, g, spec)
        assert e.value.exit_code == 2 and str(path) in str(e.value)


def test_not_a_safetensors_file(small, tmp_path):
    spec, g = small
    p = tmp_path / "x.safetensors"
    p.write_bytes(b"garbage")
    with pytest.raises(WeightsError, match="not a readable safetensors file"):
        load_weights(p, g, spec)


def test_full_siglip_checkpoint_and_save_directory(small, tmp_path):
    """A full SiglipModel checkpoint (its text tower and logit scale beside `vision_model.*`) loads the vision
    tower; a save_pretrained directory's shards load as one checkpoint."""
    spec, g = small
    t = {"vision_model." + k: v for k, v in _siglip_native(spec).items()}
    want = load_weights(_save(tmp_path / "v.safetensors", t), g, spec)
    full = t | {"text_model.embeddings.token_embedding.weight": np.zeros((10, 4), np.float32),
                "logit_scale": np.zeros(1, np.float32), "logit_bias": np.zeros(1, np.float32)}
    got = load_weights(_save(tmp_path / "full.safetensors", full), g, spec)
    assert all(np.array_equal(got[k], want[k]) for k in want)
    d = tmp_path / "saved"
    d.mkdir()
    keys = sorted(full)
    _save(d / "model-00001-of-00002.safetensors", {k: full[k] for k in keys[::2]})
    _save(d / "model-00002-of-00002.safetensors", {k: full[k] for k in keys[1::2]})
    (d / "config.json").write_text("{}")
    got = load_weights(d, g, spec)
    assert all(np.array_equal(got[k], want[k]) for k in want)
    with pytest.raises(WeightsError, match="without"):
        load_weights(_empty(tmp_path), g, spec)


def _save(path, tensors):
    save_file(tensors, str(path))
    return path


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    return d
