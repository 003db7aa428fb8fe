"""Shapes off the beaten path, each built, package-checked and emulated bit-exact against the plan-faithful
reference on 64 tiles: class-token towers at batch 3 to 8 (the class-token concat written into the consumer's
rows in one exchange), odd widths (136, 200), 3 and 5 heads, MLP 300, FP8 and F16, 42-pixel images, 1 and 3
layers. Each model is vit-small's or pe-tiny's YAML with the fields edited. Apart: more images than tiles."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ipuplan.checker.package import check_package
from ipuplan.runner.job import run_package
from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"

# name -> (base model, batch, edits)
CASES = {
    "w200-h5-mlp300-fp8-42px-b1-l1": ("vit-small", 1, dict(width=200, heads=5, mlp=300, precision="fp8", size=42,
                                                            layers=1, head_heads=5, head_mlp=300)),
    "w136-h2-mlp300-f16-42px-b3-l3": ("vit-small", 3, dict(width=136, heads=2, mlp=300, precision="f16", size=42,
                                                            layers=3, head_heads=2, head_mlp=300)),
    **{f"cls-w192-h3-fp8-48px-b{b}-l1": ("pe-tiny", b, dict(mlp=300, size=48, layers=1, head_heads=3, head_mlp=300))
       for b in range(3, 9)},
    "cls-w200-h5-f16-48px-b3-l3": ("pe-tiny", 3, dict(width=200, heads=5, mlp=300, precision="f16", size=48,
                                                       layers=3, head_heads=5, head_mlp=300)),
}


def _model(base: str, edits: dict) -> str:
    text = (MODELS / f"{base}.yaml").read_text()
    for key, value in edits.items():
        if key in ("size", "head_heads", "head_mlp"):  # indented fields of image: and head:
            field = {"size": "size", "head_heads": "heads", "head_mlp": "mlp"}[key]
            text = re.sub(rf"(?m)^  {field}: \S+", f"  {field}: {value}", text)
            if key == "size":  # image files are resized to the new size
                text = re.sub(r"(?m)^  resize: \S+", f"  resize: {value}", text)
        else:
            text = re.sub(rf"(?m)^{key}: \S+", f"{key}: {value}", text)
    return text


@pytest.fixture(scope="module", params=sorted(CASES))
def built(request, tmp_path_factory):
    base, batch, edits = CASES[request.param]
    d = tmp_path_factory.mktemp(request.param)
    (d / "model.yaml").write_text(_model(base, edits).replace(f"model: {base}", f"model: {request.param}", 1))
    assert run_main("build", d / "model.yaml", "--target", SMALL, "--batch", str(batch), "-o", d / "out") == 0
    size = edits["size"]
    pixels = np.random.default_rng(batch).standard_normal((batch, 3, size, size)).astype(np.float32)
    return d / "out", pixels


def test_builds_checks_and_runs_bit_exact(built):
    out, pixels = built
    ok, lines, why = check_package(out / "model.ipupkg")
    assert ok, why
    r = run_package(out / "model.ipupkg", pixels, compare=True)
    pf = r.compare["plan_faithful"]
    assert pf["bit_exact"], f"{pf['differing']} of {pf['elements']} elements differ"


def test_more_images_than_tiles_builds_checks_and_runs_bit_exact(tmp_path):
    """vit-small at batch 9 on an 8-tile cut of small64: the row grid holds whole images on every tile (two on one)
    and the positional add reads its table once per image beside each block."""
    t8 = tmp_path / "t8.yaml"
    t8.write_text(SMALL.read_text().replace("tiles: 64 ", "tiles: 8 ", 1))
    assert run_main("build", MODELS / "vit-small.yaml", "--target", t8, "--batch", "9", "-o", tmp_path / "out") == 0
    pos = json.loads((tmp_path / "out" / "plan.json").read_text())["choices"]["embed.pos"]["output"]
    assert (pos["rows"], pos["pr"], pos["row_grain"]) == (9 * 4, 8, 4)  # 8 blocks of whole 4-token images
    ok, lines, why = check_package(tmp_path / "out" / "model.ipupkg")
    assert ok, why
    pixels = np.random.default_rng(9).standard_normal((9, 3, 28, 28)).astype(np.float32)
    r = run_package(tmp_path / "out" / "model.ipupkg", pixels, compare=True)
    pf = r.compare["plan_faithful"]
    assert pf["bit_exact"], f"{pf['differing']} of {pf['elements']} elements differ"
