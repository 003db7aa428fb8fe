"""`ipuplan import`: the upstream configs of the shipped towers give the shipped model files (the same spec,
every field but the name and the source location): SigLIP from transformers' config.json (vision and full
model), PE from timm names."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ipuplan.model import load_model
from tests.conftest import MODELS

pytestmark = pytest.mark.oracle

# google/siglip-*: the vision configs as the hub's config.json states them (transformers' defaults omitted)
SIGLIP = {
    "siglip.yaml": dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
                        image_size=384, patch_size=14),
    "siglip-so400m-224.yaml": dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                                   num_attention_heads=16, image_size=224, patch_size=14),
    "siglip-base-224.yaml": dict(image_size=224),
    "siglip-base-384.yaml": dict(image_size=384),
    "siglip-large-256.yaml": dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                                  num_attention_heads=16, image_size=256),
}
PE = {"pe.yaml": "vit_pe_core_large_patch14_336", "pe-tiny.yaml": "vit_pe_core_tiny_patch16_384",
      "pe-small.yaml": "vit_pe_core_small_patch16_384", "pe-base.yaml": "vit_pe_core_base_patch16_224",
      "pe-gigantic.yaml": "vit_pe_core_gigantic_patch14_448"}


def _same(a, b):
    strip = dict(name="", path="", locs={})
    assert dataclasses.replace(a, **strip) == dataclasses.replace(b, **strip)


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shipped", sorted(SIGLIP))
def test_siglip_config_gives_the_shipped_file(cli, tmp_path, shipped, full):
    vision = {"model_type": "siglip_vision_model", **SIGLIP[shipped]}
    doc = {"model_type": "siglip", "vision_config": vision, "text_config": {"hidden_size": 768}} if full else vision
    (tmp_path / "config.json").write_text(json.dumps(doc))
    r = cli("import", "--hf", tmp_path, "-o", tmp_path / "m.yaml")
    assert r.code == 0, r.err
    _same(load_model(tmp_path / "m.yaml"), load_model(MODELS / shipped))


@pytest.mark.parametrize("shipped", sorted(PE))
def test_timm_name_gives_the_shipped_file(cli, tmp_path, shipped):
    r = cli("import", "--timm", PE[shipped], "-o", tmp_path / "m.yaml")
    assert r.code == 0, r.err
    _same(load_model(tmp_path / "m.yaml"), load_model(MODELS / shipped))


def test_import_refuses_what_it_cannot_model(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "clip_vision_model"}))
    for args in (["--hf", tmp_path], ["--timm", "resnet50"], [], ["--hf", tmp_path / "none.json"]):
        r = cli("import", *args)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
