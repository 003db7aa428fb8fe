"""Helpers shared by tests: hand-built native checkpoints, the CLI in-process, reference outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def siglip_native(spec):
    """A native (transformers-named) checkpoint for vit-small built by hand."""
    W, M, p = spec.width, spec.mlp, spec.patch
    rng = np.random.default_rng(0)
    t = {"embeddings.patch_embedding.weight": (W, 3, p, p), "embeddings.patch_embedding.bias": (W,),
         "embeddings.position_embedding.weight": (spec.patches, W), "post_layernorm.weight": (W,),
         "post_layernorm.bias": (W,), "head.probe": (1, 1, W), "head.attention.in_proj_weight": (3 * W, W),
         "head.attention.in_proj_bias": (3 * W,), "head.attention.out_proj.weight": (W, W),
         "head.attention.out_proj.bias": (W,), "head.layernorm.weight": (W,), "head.layernorm.bias": (W,),
         "head.mlp.fc1.weight": (M, W), "head.mlp.fc1.bias": (M,), "head.mlp.fc2.weight": (W, M),
         "head.mlp.fc2.bias": (W,)}
    for i in range(spec.layers):
        lp = f"encoder.layers.{i}."
        for k in "qkv":
            t[f"{lp}self_attn.{k}_proj.weight"] = (W, W)
            t[f"{lp}self_attn.{k}_proj.bias"] = (W,)
        t.update({lp + "self_attn.out_proj.weight": (W, W), lp + "self_attn.out_proj.bias": (W,),
                  lp + "layer_norm1.weight": (W,), lp + "layer_norm1.bias": (W,), lp + "layer_norm2.weight": (W,),
                  lp + "layer_norm2.bias": (W,), lp + "mlp.fc1.weight": (M, W), lp + "mlp.fc1.bias": (M,),
                  lp + "mlp.fc2.weight": (W, M), lp + "mlp.fc2.bias": (W,)})
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in t.items()}


def run_main(*args) -> int:
    """Run `ipuplan ARGS...` in-process outside a test function (module fixtures); return the exit code."""
    import sys

    from ipuplan.cli import main
    old = sys.argv
    sys.argv = ["ipuplan", *map(str, args)]
    try:
        main()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 0
    finally:
        sys.argv = old
    return 0


def vit_small_fp8(path: Path) -> Path:
    """models/vit-small.yaml with FP8 GEMMs, written to `path`."""
    import re
    from conftest import MODELS
    path.write_text(re.sub(r"(?m)^precision: \S+", "precision: fp8", (MODELS / "vit-small.yaml").read_text()))
    return path


def target_with_tiles(tmp_path, tiles: int):
    """targets/c600.yaml with another tile count (every other machine fact unchanged)."""
    from conftest import TARGET
    text = TARGET.read_text().replace("tiles: 1472", f"tiles: {tiles}", 1)
    p = tmp_path / f"t{tiles}.yaml"
    p.write_text(text)
    return p


def leaves(doc, path=()):
    """Every leaf of a JSON document with its path (keys and list indices)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from leaves(v, path + (i,))
    else:
        yield path, doc


def set_leaf(doc, path, value):
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def reference_output(model_path, ckpt, pixels, layers: int = 2):
    """The fp32 reference's output for MODEL at `layers` depth with checkpoint CKPT on PIXELS [b, c, h, w]."""
    from ipuplan.model import build_graph, load_model
    from ipuplan.model.host import pack_patches
    from ipuplan.model.weights import load_weights
    from ipuplan.reference import Mode, Policy, run_graph
    from ipuplan.target import load_target
    root = Path(__file__).resolve().parent.parent
    spec = load_model(model_path).with_options(layers=layers)
    g = build_graph(spec, pixels.shape[0])
    w = load_weights(ckpt, g, spec)
    pol = Policy.for_target(load_target(root / "targets" / "c600.yaml"), Mode.FP32)
    return run_graph(g, {"patches": pack_patches(pixels, spec)}, w, pol)[g.outputs[0]]


def save_state(module, path) -> None:
    """A torch module's state dict as safetensors (what `--weights` reads)."""
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in module.state_dict().items()}, str(path))
