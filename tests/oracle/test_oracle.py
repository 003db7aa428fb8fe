"""The fp32 reference against the real model code: transformers SigLIP and timm PE, full width, 2 layers."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import MODELS
from ipuplan.model import load_model
from ipuplan.model.host import rope_tables
from tests_helpers import reference_output, save_state

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.oracle


def _compare(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    a, b = ours.astype(np.float64).ravel(), theirs.astype(np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)), float(np.abs(a - b).max())


def test_siglip_matches_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.SiglipVisionConfig(
        image_size=378, patch_size=14, hidden_size=1152, intermediate_size=4304, num_hidden_layers=2,
        num_attention_heads=16, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=True)
    model = transformers.SiglipVisionModel(cfg).eval()
    save_state(model, tmp_path / "siglip.safetensors")
    x = torch.randn(2, 3, 378, 378)
    with torch.no_grad():
        theirs = model(pixel_values=x).pooler_output.numpy()
    ours = reference_output(MODELS / "siglip.yaml", tmp_path / "siglip.safetensors", x.numpy())
    assert ours.shape == theirs.shape == (2, 1152)
    cos, err = _compare(ours, theirs)
    print(f"SigLIP 2 layers vs transformers: cosine {cos:.12f}, max abs error {err:.3e}")
    assert cos >= 0.99999 and err <= 1e-3, (cos, err)


def test_pe_matches_timm(tmp_path):
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model("vit_pe_core_large_patch14_336", pretrained=False, depth=2).eval()
    save_state(model, tmp_path / "pe.safetensors")
    x = torch.randn(2, 3, 336, 336)
    with torch.no_grad():
        theirs = model(x).numpy()
    ours = reference_output(MODELS / "pe.yaml", tmp_path / "pe.safetensors", x.numpy())
    assert ours.shape == theirs.shape == (2, 1024)
    cos, err = _compare(ours, theirs)
    print(f"PE 2 layers vs timm: cosine {cos:.12f}, max abs error {err:.3e}")
    assert cos >= 0.99999 and err <= 1e-3, (cos, err)


def test_rope_tables_match_timm():
    timm = pytest.importorskip("timm")
    model = timm.create_model("vit_pe_core_large_patch14_336", pretrained=False, depth=1)
    sin, cos = np.split(model.rope.get_embed().numpy(), 2, axis=-1)
    ours_sin, ours_cos = rope_tables(load_model(MODELS / "pe.yaml"))
    assert np.abs(sin - ours_sin).max() < 1e-6 and np.abs(cos - ours_cos).max() < 1e-6


def test_siglip_parameter_count_matches_transformers(cli):
    import json
    transformers = pytest.importorskip("transformers")
    cfg = transformers.SiglipVisionConfig(
        image_size=378, patch_size=14, hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
        num_attention_heads=16, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=True)
    with torch.device("meta"):
        model = transformers.SiglipVisionModel(cfg)
    theirs = sum(p.numel() for p in model.parameters())
    d = json.loads(cli("show", MODELS / "siglip.yaml", "--json").out)
    assert d["parameters"] == theirs == 428_225_600


def test_pe_parameter_count_matches_timm(cli):
    import json
    timm = pytest.importorskip("timm")
    with torch.device("meta"):
        model = timm.create_model("vit_pe_core_large_patch14_336", pretrained=False)
    theirs = sum(p.numel() for p in model.parameters())
    d = json.loads(cli("show", MODELS / "pe.yaml", "--json").out)
    assert d["parameters"] == theirs
