"""Every SigLIP and PE-Core vision tower in models/: parameter count equal to upstream at full depth, and the
fp32 reference equal to transformers / timm at 2 layers (random weights, cosine >= 0.99999)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import MODELS
from ipuplan.model import load_model
from tests_helpers import reference_output, save_state

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.oracle

PE = {  # YAML -> timm model name
    "pe-tiny.yaml": "vit_pe_core_tiny_patch16_384",
    "pe-small.yaml": "vit_pe_core_small_patch16_384",
    "pe-base.yaml": "vit_pe_core_base_patch16_224",
    "pe.yaml": "vit_pe_core_large_patch14_336",
    "pe-gigantic.yaml": "vit_pe_core_gigantic_patch14_448",
}
SIGLIP = {  # YAML -> (image, patch, width, layers, heads, mlp) of transformers.SiglipVisionConfig
    "siglip-base-224.yaml": (224, 16, 768, 12, 12, 3072),
    "siglip-base-256.yaml": (256, 16, 768, 12, 12, 3072),
    "siglip-base-384.yaml": (384, 16, 768, 12, 12, 3072),
    "siglip-base-512.yaml": (512, 16, 768, 12, 12, 3072),
    "siglip-large-256.yaml": (256, 16, 1024, 24, 16, 4096),
    "siglip-large-384.yaml": (384, 16, 1024, 24, 16, 4096),
    "siglip-large-512.yaml": (512, 16, 1024, 24, 16, 4096),
    "siglip-so400m-224.yaml": (224, 14, 1152, 27, 16, 4304),
    "siglip.yaml": (378, 14, 1152, 27, 16, 4304),  # So400m/14 at 384: its VALID convolution reads 378 x 378
}


def _siglip(cfg, layers: int):
    transformers = pytest.importorskip("transformers")
    img, patch, w, _, h, mlp = cfg
    return transformers.SiglipVisionModel(transformers.SiglipVisionConfig(
        image_size=img, patch_size=patch, hidden_size=w, intermediate_size=mlp, num_hidden_layers=layers,
        num_attention_heads=h, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=True))


def _params(cli, yaml: str) -> int:
    return json.loads(cli("show", MODELS / yaml, "--json").out)["parameters"]


@pytest.mark.parametrize("yaml", sorted(PE))
def test_pe_parameter_count(cli, yaml):
    timm = pytest.importorskip("timm")
    with torch.device("meta"):
        model = timm.create_model(PE[yaml], pretrained=False)
    assert _params(cli, yaml) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("yaml", sorted(SIGLIP))
def test_siglip_parameter_count(cli, yaml):
    with torch.device("meta"):
        model = _siglip(SIGLIP[yaml], SIGLIP[yaml][3])
    assert _params(cli, yaml) == sum(p.numel() for p in model.parameters())


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("yaml", ["pe-tiny.yaml", "pe-small.yaml", "pe-base.yaml"])
def test_pe_sizes_match_timm(tmp_path, yaml):
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model(PE[yaml], pretrained=False, depth=2).eval()
    save_state(model, tmp_path / "w.safetensors")
    img = load_model(MODELS / yaml).image_size
    x = torch.randn(1, 3, img, img)
    with torch.no_grad():
        theirs = model(x).numpy()
    ours = reference_output(MODELS / yaml, tmp_path / "w.safetensors", x.numpy())
    assert ours.shape == theirs.shape
    assert _cosine(ours, theirs) >= 0.99999


@pytest.mark.parametrize("yaml", [y for y in sorted(SIGLIP) if y != "siglip.yaml"])
def test_siglip_sizes_match_transformers(tmp_path, yaml):
    torch.manual_seed(0)
    model = _siglip(SIGLIP[yaml], 2).eval()
    save_state(model, tmp_path / "w.safetensors")
    img = SIGLIP[yaml][0]
    x = torch.randn(1, 3, img, img)
    with torch.no_grad():
        theirs = model(pixel_values=x).pooler_output.numpy()
    ours = reference_output(MODELS / yaml, tmp_path / "w.safetensors", x.numpy())
    assert ours.shape == theirs.shape
    assert _cosine(ours, theirs) >= 0.99999


def test_so400m_at_384_is_the_378_region(tmp_path):
    """transformers' So400m/14 at 384 pixels reads the top-left 378 x 378 (27 x 27 patches of 14, VALID):
    models/siglip.yaml on that crop equals it."""
    torch.manual_seed(0)
    model = _siglip((384, 14, 1152, 2, 16, 4304), 2).eval()
    save_state(model, tmp_path / "w.safetensors")
    x = torch.randn(1, 3, 384, 384)
    with torch.no_grad():
        theirs = model(pixel_values=x).pooler_output.numpy()
    ours = reference_output(MODELS / "siglip.yaml", tmp_path / "w.safetensors", x[:, :, :378, :378].numpy())
    assert _cosine(ours, theirs) >= 0.99999
