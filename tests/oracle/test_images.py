"""Image files in: the model YAML's `preprocess` equals transformers' SiglipImageProcessor (SigLIP) and timm's
data-config eval transform (PE) on the same images, PNG and JPEG, square and not; `--image` on `reference` and
`run`."""

from __future__ import annotations

import numpy as np
import pytest

from ipuplan.model import load_model
from ipuplan.model.images import load_images
from tests.conftest import MODELS, ROOT

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    from PIL import Image
    d = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    paths = []
    for i, (w, h) in enumerate([(500, 375), (300, 420), (384, 384), (97, 61)]):
        yy, xx = np.mgrid[0:h, 0:w]
        base = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1), (xx + yy) % 256], -1)
        noise = rng.integers(0, 64, (h, w, 3))
        arr = np.clip(base + noise - 32, 0, 255).astype(np.uint8)
        p = d / (f"img{i}.png" if i % 2 == 0 else f"img{i}.jpg")
        Image.fromarray(arr).save(p)
        paths.append(str(p))
    return paths


def _siglip_processor(backend: str):
    """transformers' SiglipImageProcessor settings on the PIL backend (the processor transformers 4 shipped) or
    on torchvision tensors (transformers 5's default); None where this transformers has no such processor."""
    from transformers.models.siglip.image_processing_siglip import SiglipImageProcessor as S
    try:
        from transformers.image_processing_backends import PilBackend
    except ImportError:  # a transformers whose SiglipImageProcessor is the PIL one
        return S(size={"height": 384, "width": 384}) if backend == "pil" else None
    if backend == "torchvision":
        return None if issubclass(S, PilBackend) else S(size={"height": 384, "width": 384})

    class PilSiglip(PilBackend):
        resample, image_mean, image_std = S.resample, S.image_mean, S.image_std
        size, default_to_square = S.size, S.default_to_square
        do_resize, do_rescale, do_normalize, do_convert_rgb = True, True, True, True
    return PilSiglip(size={"height": 384, "width": 384})


def test_siglip_equals_the_transformers_processor(images):
    from PIL import Image
    spec = load_model(MODELS / "siglip.yaml")
    ours = load_images(images, spec)
    ref = _siglip_processor("pil")([Image.open(p) for p in images], return_tensors="np")["pixel_values"]
    ref = ref[:, :, :378, :378]  # what the VALID patch convolution reads of 384
    assert ours.shape == ref.shape == (len(images), 3, 378, 378) and ours.dtype == np.float32
    assert np.array_equal(ours, ref)
    # transformers 5's default processor resizes uint8 tensors with torchvision: the same filter, other rounding
    tv = _siglip_processor("torchvision")
    if tv is not None:
        tv = tv([Image.open(p) for p in images], return_tensors="np")["pixel_values"]
        assert np.abs(ours - tv[:, :, :378, :378]).mean() < 2 / 255


@pytest.mark.parametrize("name,model", [("vit_pe_core_large_patch14_336", "pe.yaml"),
                                        ("vit_pe_core_tiny_patch16_384", "pe-tiny.yaml")])
def test_pe_equals_the_timm_transform(images, name, model):
    import timm
    from PIL import Image
    from timm.data import create_transform, resolve_data_config
    spec = load_model(MODELS / model)
    ours = load_images(images, spec)
    cfg = resolve_data_config(pretrained_cfg=timm.models.get_pretrained_cfg(name).to_dict())
    tf = create_transform(**cfg)
    ref = np.stack([tf(Image.open(p).convert("RGB")).numpy() for p in images])
    assert ours.shape == ref.shape and np.array_equal(ours, ref)


def test_image_flags_on_reference_and_run(cli, images, tmp_path):
    from PIL import Image
    for i in range(2):
        Image.fromarray(np.full((40, 30, 3), 60 * i, np.uint8)).save(tmp_path / f"p{i}.png")
    pngs = [tmp_path / "p0.png", tmp_path / "p1.png"]
    vs = MODELS / "vit-small.yaml"
    r = cli("reference", vs, "--image", pngs[0], "--image", pngs[1], "-o", tmp_path / "y.npy", "--json")
    assert r.code == 0, r.err
    assert np.load(tmp_path / "y.npy").shape == (2, 144)
    assert cli("build", vs, "--target", ROOT / "targets" / "small64.yaml", "--batch", "2", "-o", tmp_path / "b").code == 0
    r = cli("run", tmp_path / "b" / "model.ipupkg", "--image", pngs[0], "--image", pngs[1], "--compare")
    assert r.code == 0 and "BIT-EXACT" in r.out, r.out + r.err
    for bad in ([], ["--pixels", tmp_path / "y.npy", "--image", pngs[0]], ["--image", tmp_path / "y.npy"]):
        r = cli("reference", vs, *bad, "-o", tmp_path / "z.npy")
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
