"""`ipuplan reference` end to end on vit-small: fp32 and mixed, random and checkpoint weights."""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save_file

from conftest import MODELS


def test_reference_fp32_and_mixed_agree(cli, tmp_path):
    pix = tmp_path / "x.npy"
    np.save(pix, np.random.default_rng(0).standard_normal((2, 3, 28, 28)).astype(np.float32))
    r32 = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", tmp_path / "a.npy")
    rmx = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", tmp_path / "b.npy", "--mode", "mixed")
    assert r32.code == 0 and rmx.code == 0, (r32.err, rmx.err)
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert a.shape == b.shape == (2, 144) and a.dtype == np.float32
    cos = float((a * b).sum() / np.linalg.norm(a) / np.linalg.norm(b))
    assert 0.999 < cos < 1.0  # F16 rounding is visible but small


def test_reference_fp8_precision_and_seed(cli, tmp_path):
    pix = tmp_path / "x.npy"
    np.save(pix, np.random.default_rng(1).standard_normal((1, 3, 28, 28)).astype(np.float32))
    outs = []
    for seed in ("0", "0", "1"):
        o = tmp_path / f"y{len(outs)}.npy"
        r = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", o, "--seed", seed, "--mode", "mixed")
        assert r.code == 0, r.err
        outs.append(np.load(o))
    assert np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[0], outs[2])


def test_reference_with_checkpoint(cli, tmp_path):
    from tests_helpers import siglip_native
    pix = tmp_path / "x.npy"
    np.save(pix, np.random.default_rng(2).standard_normal((1, 3, 28, 28)).astype(np.float32))
    from ipuplan.model import load_model
    ck = tmp_path / "w.safetensors"
    save_file(siglip_native(load_model(MODELS / "vit-small.yaml")), str(ck))
    r = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", tmp_path / "y.npy", "--weights", ck)
    assert r.code == 0, r.err
    assert np.isfinite(np.load(tmp_path / "y.npy")).all()
    r = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", tmp_path / "y.npy", "--weights", ck,
            "--layers", "3")
    assert r.code == 2 and "encoder.layers.2" in r.err and "missing tensor" in r.err
