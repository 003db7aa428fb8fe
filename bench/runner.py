"""The emulator against the references: each case built with `ipuplan build`, then `ipuplan run --compare` (the
emulator, then the plan-faithful mixed, plain mixed and fp32 references on the same pixels and weights).

Usage: python bench/runner.py [--cases vit-small@small64:2,siglip:2:2:hf,pe:2:2:timm,siglip:2,pe:2]
                              [--out bench/out/runner]
A case is model[@target]:batch[:layers[:weights]]; weights `hf` saves a transformers SiglipVisionModel, `timm`
a timm vit_pe_core_large_patch14_336 (both freshly initialized, torch seed 0), otherwise seeded random weights.
At full depth (no layers given) the plan-faithful reference is skipped (`--no-faithful`: it costs as much as the
mixed one).
Prints a markdown table: bit-exactness against the plan-faithful reference, cosine and max abs error against
fp32 and against the plain mixed reference, the emulator's wall seconds, the mixed reference's, their ratio,
and the run's peak memory.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import time
from pathlib import Path

import numpy as np

MODELS = {"siglip": "models/siglip.yaml", "pe": "models/pe.yaml", "vit-small": "models/vit-small.yaml"}
IMAGE = {"siglip": 378, "pe": 336, "vit-small": 28}


def weights(kind: str, layers: int, path: Path) -> None:
    import torch
    from safetensors.torch import save_file
    torch.manual_seed(0)
    if kind == "hf":
        import transformers
        cfg = transformers.SiglipVisionConfig(
            image_size=378, patch_size=14, hidden_size=1152, intermediate_size=4304, num_hidden_layers=layers,
            num_attention_heads=16, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=True)
        model = transformers.SiglipVisionModel(cfg).eval()
    else:
        import timm
        model = timm.create_model("vit_pe_core_large_patch14_336", pretrained=False, depth=layers).eval()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="vit-small@small64:2,siglip:2:2:hf,pe:2:2:timm,siglip:2,pe:2")
    ap.add_argument("--out", default="bench/out/runner")
    a = ap.parse_args()
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/runner.py "
          f"--cases {a.cases}\n")
    print("| case | layers | weights | build s | plan-faithful | cosine vs fp32 (max abs) | reference mixed vs fp32 "
          "| cosine vs mixed | emulator s | mixed reference s | ratio | run peak GiB |")
    print("|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for case in a.cases.split(","):
        parts = case.split(":")
        m, _, tgt = parts[0].partition("@")
        b = parts[1]
        layers = parts[2] if len(parts) > 2 else None
        wk = parts[3] if len(parts) > 3 else "random"
        d = Path(a.out) / case.replace(":", "-").replace("@", "-")
        d.mkdir(parents=True, exist_ok=True)
        cmd = ["ipuplan", "build", MODELS[m], "--batch", b, "-o", str(d)]
        cmd += ["--target", f"targets/{tgt}.yaml"] if tgt else []
        cmd += ["--layers", layers] if layers else []
        t = time.perf_counter()
        rc = subprocess.run(cmd, capture_output=True, text=True).returncode
        bsecs = time.perf_counter() - t
        if rc != 0:
            print(f"| {case} | {layers or 'full'} | {wk} | build exit {rc} | | | | | | | | |")
            continue
        n = IMAGE[m]
        np.save(d / "pixels.npy", np.random.default_rng(0).standard_normal((int(b), 3, n, n)).astype(np.float32))
        run = ["/usr/bin/time", "-f", "%M", "ipuplan", "run", str(d / "model.ipupkg"), "--pixels", str(d / "pixels.npy"),
               "--compare", "--profile", str(d / "profile.json")] + ([] if layers else ["--no-faithful"])
        if wk in ("hf", "timm"):
            weights(wk, int(layers), d / "weights.safetensors")
            run += ["--weights", str(d / "weights.safetensors")]
        p = subprocess.run(run, capture_output=True, text=True)
        text = p.stdout
        peak = int(p.stderr.strip().splitlines()[-1]) / 2**20 if p.stderr.strip().splitlines()[-1].isdigit() else 0
        get = lambda pat: (re.search(pat, text) or [None, "?"])[1]
        exact = "BIT-EXACT" if "BIT-EXACT" in text else ("not run (full depth)" if "plan-faithful" not in text else
                                                         get(r"reference: (.*?) \(max"))
        cells = [get(r"fp32 reference: cosine ([0-9.]+)"), get(r"fp32 reference: cosine [0-9.]+, max abs ([0-9.e+-]+)"),
                 get(r"own cosine ([0-9.]+)"), get(r"mixed reference: cosine ([0-9.]+)"), get(r"emulator ([0-9.]+) s"),
                 get(r"\(([0-9.]+) s; emulator"), get(r"emulator / reference ([0-9.]+)")]
        print(f"| {case} | {layers or 'full'} | {wk} | {bsecs:.0f} | {exact} | {cells[0]} ({cells[1]}) | {cells[2]} | "
              f"{cells[3]} | {cells[4]} | {cells[5]} | {cells[6]} | {peak:.1f} |")
        if p.returncode not in (0, 1):
            print(f"\n    run exit {p.returncode}: {p.stderr.strip().splitlines()[-2:]}\n")


if __name__ == "__main__":
    main()
