"""Helpers shared by tests: hand-built native checkpoints."""

from __future__ import annotations

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
