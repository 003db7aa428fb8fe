"""FP8 scales against upstream fp32: every SigLIP and PE-Core tower in models/ at 2 layers with upstream
initialization (transformers SiglipVisionModel / timm vit_pe_core_*, torch seed 0), each built twice on the c600
target — the model's fixed scale and per-GEMM scales from `ipuplan calibrate` — and emulated with `ipuplan run`;
the figure is the emulator output's cosine against the upstream model's own fp32 output on the same image.

Calibration uses 4 seeded N(0, 1) images; the evaluated image is a different seeded one (never calibrated on).

Usage: python bench/scales.py [--models pe,siglip,...] [--out bench/out/scales] [--effort S] [--time-limit S]
       [--headroom B]
(--effort, --time-limit, --headroom: the builds' search and free bytes per tile; any FIT plan serves, the figure is
about the numerics)
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PE = {"pe-tiny": "vit_pe_core_tiny_patch16_384", "pe-small": "vit_pe_core_small_patch16_384",
      "pe-base": "vit_pe_core_base_patch16_224", "pe": "vit_pe_core_large_patch14_336",
      "pe-gigantic": "vit_pe_core_gigantic_patch14_448"}
SIGLIP = {  # (image, patch, width, heads, mlp) of transformers.SiglipVisionConfig
    "siglip-base-224": (224, 16, 768, 12, 3072), "siglip-base-256": (256, 16, 768, 12, 3072),
    "siglip-base-384": (384, 16, 768, 12, 3072), "siglip-base-512": (512, 16, 768, 12, 3072),
    "siglip-large-256": (256, 16, 1024, 16, 4096), "siglip-large-384": (384, 16, 1024, 16, 4096),
    "siglip-large-512": (512, 16, 1024, 16, 4096), "siglip-so400m-224": (224, 14, 1152, 16, 4304),
    "siglip": (378, 14, 1152, 16, 4304),
}
LAYERS = 2


def upstream(name: str):
    import torch
    torch.manual_seed(0)
    if name in PE:
        import timm
        return timm.create_model(PE[name], pretrained=False, depth=LAYERS).eval()
    import transformers
    img, patch, w, h, mlp = SIGLIP[name]
    return transformers.SiglipVisionModel(transformers.SiglipVisionConfig(
        image_size=img, patch_size=patch, hidden_size=w, intermediate_size=mlp, num_hidden_layers=LAYERS,
        num_attention_heads=h, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6, vision_use_head=True)).eval()


def fp32_output(model, x: np.ndarray) -> np.ndarray:
    import torch
    with torch.no_grad():
        y = model(torch.from_numpy(x))
    y = y.pooler_output if hasattr(y, "pooler_output") else y
    return y.numpy()


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def ipuplan(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ipuplan.cli", *map(str, args)], capture_output=True, text=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(list(PE) + list(SIGLIP)))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "scales"))
    ap.add_argument("--effort", type=float, default=None)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--headroom", type=int, default=None)
    a = ap.parse_args()
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    from safetensors.torch import save_file
    from ipuplan.model import load_model
    print(f"# FP8 scales vs upstream fp32, {LAYERS} layers, batch 1, c600, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}")
    print("| model | fixed: cosine | calibrated: cosine | calibrated: mixed reference vs fp32 reference | "
          "plan-faithful | seconds |")
    print("|---|---:|---:|---:|---|---:|")
    for name in a.models.split(","):
        t0 = time.time()
        d = out / name
        d.mkdir()
        yaml = ROOT / "models" / f"{name}.yaml"
        spec = load_model(str(yaml))
        img = spec.image_size
        model = upstream(name)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(d / "w.safetensors"))
        rng = np.random.default_rng(1)
        np.save(d / "calib.npy", rng.standard_normal((4, 3, img, img)).astype(np.float32))
        x = np.random.default_rng(2).standard_normal((1, 3, img, img)).astype(np.float32)
        np.save(d / "x.npy", x)
        ref = fp32_output(model, x)
        del model
        r = ipuplan("calibrate", yaml, "--layers", LAYERS, "--weights", d / "w.safetensors", "--pixels",
                    d / "calib.npy", "-o", d / "scales.json")
        if r.returncode:
            print(f"| {name} | calibrate failed: {r.stderr.strip()[:120]} | | | | |", flush=True)
            continue
        row = {}
        for kind, extra in (("fixed", []), ("calibrated", ["--scales", d / "scales.json"])):
            effort = ([] if a.effort is None else ["--effort", a.effort]) + \
                ([] if a.time_limit is None else ["--time-limit", a.time_limit]) + \
                ([] if a.headroom is None else ["--headroom", a.headroom])
            b = ipuplan("build", yaml, "--layers", LAYERS, "--batch", 1, "-o", d / kind, *effort, *extra)
            if b.returncode:
                row[kind] = f"build exit {b.returncode}: {b.stderr.strip().splitlines()[-1][:80]}"
                continue
            rr = ipuplan("run", d / kind / "model.ipupkg", "--pixels", d / "x.npy", "--weights", d / "w.safetensors",
                         "--compare", "--json", "-o", d / kind / "y.npy")
            if rr.returncode not in (0, 1):
                row[kind] = f"run exit {rr.returncode}: {rr.stderr.strip()[-80:]}"
                continue
            doc = json.loads(rr.stdout)
            y = np.load(d / kind / "y.npy")
            row[kind] = (cosine(y, ref), doc["compare"])
        fx, ca = row.get("fixed"), row.get("calibrated")
        fmt = lambda v: f"{v[0]:.6f}" if isinstance(v, tuple) else str(v)
        mixed = faithful = ""
        if isinstance(ca, tuple):
            mixed = f"{ca[1]['fp32']['reference_mixed_cosine']:.6f}"
            pf = ca[1]["plan_faithful"]
            faithful = "bit-exact" if pf and pf["bit_exact"] else f"{pf['differing']} differ" if pf else ""
        print(f"| {name} | {fmt(fx)} | {fmt(ca)} | {mixed} | {faithful} | {time.time() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
