"""The README's "from an image to an embedding" on a small SigLIP saved by transformers: `import --hf` the save
directory, `build`, then `run --image PNG --weights DIR --compare` — bit-exact against the plan-faithful
reference, and the fp32 reference equal to transformers' own output on the same pixels."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.oracle


def test_import_build_run_on_a_png(cli, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from PIL import Image
    torch.manual_seed(0)
    cfg = transformers.SiglipVisionConfig(image_size=28, patch_size=14, hidden_size=144, intermediate_size=288,
                                          num_hidden_layers=2, num_attention_heads=2)
    hf = tmp_path / "hf"
    model = transformers.SiglipVisionModel(cfg).eval()
    model.save_pretrained(hf)
    r = cli("import", "--hf", hf, "--name", "tiny-siglip", "-o", tmp_path / "tiny.yaml")
    assert r.code == 0, r.err
    r = cli("build", tmp_path / "tiny.yaml", "--target", ROOT / "targets" / "small64.yaml", "-o", tmp_path / "out")
    assert r.code == 0, r.err
    rng = np.random.default_rng(1)
    Image.fromarray(rng.integers(0, 256, (50, 40, 3), dtype=np.uint8)).save(tmp_path / "cat.png")
    r = cli("run", tmp_path / "out" / "model.ipupkg", "--image", tmp_path / "cat.png", "--weights", hf, "--compare",
            "--json")
    assert r.code == 0, r.err
    import json
    doc = json.loads(r.out)
    assert doc["compare"]["plan_faithful"]["bit_exact"] and doc["shape"] == [1, 144]
    # the fp32 reference on the same preprocessed pixels is transformers' pooler output
    from ipuplan.model import load_model
    from ipuplan.model.images import load_images
    px = load_images([str(tmp_path / "cat.png")], load_model(tmp_path / "tiny.yaml"))
    r = cli("reference", tmp_path / "tiny.yaml", "--image", tmp_path / "cat.png", "--weights", hf,
            "-o", tmp_path / "ref.npy", "--json")
    assert r.code == 0, r.err
    with torch.no_grad():
        want = model(pixel_values=torch.from_numpy(px)).pooler_output.numpy()
    got = np.load(tmp_path / "ref.npy")
    assert np.abs(got - want).max() < 1e-4
