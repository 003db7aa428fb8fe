"""Mixed (device numerics) vs fp32 reference on a model at full depth: cosine and max abs error.

Usage: python bench/mixed_precision.py models/siglip.yaml [--batch 1] [--layers N] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time

import numpy as np

from ipuplan.model import build_graph, load_model
from ipuplan.model.weights import random_weights
from ipuplan.reference import Mode, Policy, run_graph
from ipuplan.target import load_target


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", default="targets/c600.yaml")
    ap.add_argument("--fp8-scale", type=int, default=None, help="override the model's FP8 metadata scale")
    a = ap.parse_args()
    spec = load_model(a.model).with_options(layers=a.layers)
    if a.fp8_scale is not None:
        spec = dataclasses.replace(spec, fp8_scale=a.fp8_scale)
    tgt = load_target(a.target)
    g = build_graph(spec, a.batch)
    w = random_weights(g, spec, a.seed)
    rng = np.random.default_rng(a.seed + 1)
    x = rng.standard_normal((a.batch, spec.patches, spec.patch_dim)).astype(np.float32)
    res = {}
    for mode in (Mode.FP32, Mode.MIXED):
        t = time.perf_counter()
        res[mode] = run_graph(g, {"patches": x}, w, Policy.for_target(tgt, mode))[g.outputs[0]].astype(np.float64)
        print(f"{mode.value:>5}: {time.perf_counter() - t:.1f} s", flush=True)
    f, m = res[Mode.FP32], res[Mode.MIXED]
    cos = [float(a_ @ b_ / np.linalg.norm(a_) / np.linalg.norm(b_)) for a_, b_ in zip(f, m)]
    print(f"model {spec.name}, {spec.layers} layers, batch {a.batch}, precision {spec.precision.value} "
          f"(scale {spec.fp8_scale}), accumulation {tgt.accumulation}, chunk {tgt.accumulation_chunk}")
    print(f"cosine(mixed, fp32) per image: {', '.join(f'{c:.6f}' for c in cos)}")
    print(f"max abs error: {np.abs(f - m).max():.6f}; max |fp32|: {np.abs(f).max():.4f}")
    print(f"machine: {platform.machine()}, {platform.python_version()}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
