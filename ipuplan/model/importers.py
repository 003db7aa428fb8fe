"""Model YAML from upstream descriptions: a Hugging Face SigLIP `config.json` (the vision tower's or a full
SigLIP model's, with its `preprocessor_config.json` beside it when present) or a timm `vit_pe_core_*` model name.
The text written loads to the same spec as the hand-written files in models/."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError

_ACT = {"gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh", "gelu": "gelu"}
_RESAMPLE = {0: "nearest", 2: "bilinear", 3: "bicubic"}  # PIL's resampling codes in preprocessor_config.json
# transformers' SiglipVisionConfig defaults: a config.json omits what equals them
_SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                    "num_channels": 3, "image_size": 224, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh",
                    "layer_norm_eps": 1e-6, "vision_use_head": True}


def render(d: dict, comment: str) -> str:
    """The YAML text of a model: keys in the order models/*.yaml use."""
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return f"{v:.1e}" if v < 1e-3 else repr(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(repr(float(x)) for x in v) + "]"
        return str(v)
    lines = [f"# {comment}"]
    for k, v in d.items():
        if isinstance(v, dict):
            lines.append(f"{k}:")
            lines += [f"  {kk}: {val(vv)}" for kk, vv in v.items()]
        else:
            lines.append(f"{k}: {val(v)}")
    return "\n".join(lines) + "\n"


def _read_json(path: Path, what: str) -> dict:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file", f"pass a Hugging Face {what}") from None
    except (OSError, ValueError) as e:
        raise InputError(str(path), None, f"not readable JSON ({type(e).__name__})", f"pass a Hugging Face {what}") \
            from None
    if not isinstance(doc, dict):
        raise InputError(str(path), None, "is not a JSON object", f"pass a Hugging Face {what}")
    return doc


def from_hf_config(path: str | Path, name: str | None = None) -> tuple[str, str]:
    """(YAML text, model name) from a SigLIP config.json, or a directory holding one."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    doc = _read_json(p, "config.json")
    kind = doc.get("model_type")
    if kind in ("siglip", "siglip2") or "vision_config" in doc:
        doc = doc.get("vision_config") or {}
    elif kind not in ("siglip_vision_model", None):
        raise InputError(str(p), "model_type", f"{kind!r} is not a SigLIP config",
                         "valid: siglip, siglip_vision_model (a full SigLIP config's vision_config is used)")
    c = {**_SIGLIP_DEFAULTS, **{k: v for k, v in doc.items() if k in _SIGLIP_DEFAULTS}}
    if c["hidden_act"] not in _ACT:
        raise InputError(str(p), "hidden_act", f"{c['hidden_act']!r} is not an activation ipuplan implements",
                         "valid: " + ", ".join(_ACT))
    if not c["vision_use_head"]:
        raise InputError(str(p), "vision_use_head", "false: a tower without its MAP head",
                         "ipuplan's SigLIP models end in the attention-pooling head")
    size, patch = c["image_size"], c["patch_size"]
    usable = size // patch * patch  # a VALID patch convolution reads this much of the image
    pre = {"resize": size, "resize_to": "square", "interpolation": "bicubic", "crop": "top_left",
           "mean": [0.5] * c["num_channels"], "std": [0.5] * c["num_channels"]}
    pp = p.parent / "preprocessor_config.json"
    if pp.exists():
        pc = _read_json(pp, "preprocessor_config.json")
        s = pc.get("size") or {}
        pre["resize"] = int(s.get("height", pre["resize"])) if isinstance(s, dict) else int(s)
        pre["interpolation"] = _RESAMPLE.get(pc.get("resample", 3), "bicubic")
        pre["mean"], pre["std"] = list(pc.get("image_mean", pre["mean"])), list(pc.get("image_std", pre["std"]))
    nm = name or _name(doc.get("_name_or_path") or p.parent.name, size, usable)
    d = {"model": nm, "family": "siglip", "image": {"size": usable, "channels": c["num_channels"], "patch": patch},
         "width": c["hidden_size"], "layers": c["num_hidden_layers"], "heads": c["num_attention_heads"],
         "mlp": c["intermediate_size"], "activation": _ACT[c["hidden_act"]], "norm_eps": float(c["layer_norm_eps"]),
         "patch_bias": True, "positions": "learned", "class_token": False, "pre_norm": False, "rope": "none",
         "post_norm": True, "head": {"kind": "map", "heads": c["num_attention_heads"], "mlp": c["intermediate_size"]},
         "precision": "fp8", "fp8_scale": -4, "fuse_qkv": True, "preprocess": pre}
    note = f"imported from {p}" + (f"; {size} x {size} images, of which the patch convolution reads {usable}"
                                   if usable != size else "")
    return render(d, note), nm


def _name(raw: str, size: int, usable: int) -> str:
    base = str(raw).rstrip("/").split("/")[-1] or "siglip"
    return base.replace(str(size), str(usable)) if usable != size else base


def from_timm(model_name: str, name: str | None = None) -> tuple[str, str]:
    """(YAML text, model name) from a timm `vit_pe_core_*` model, built on the meta device (no weights)."""
    try:
        import timm
        import torch
    except ImportError:
        raise InputError("--timm", None, "needs timm and torch", "pip install -e '.[oracle]'") from None
    if not model_name.startswith("vit_pe_core_"):
        raise InputError("--timm", None, f"{model_name!r} is not a PE Core tower", "valid: timm's vit_pe_core_* names")
    try:
        with torch.device("meta"):
            m = timm.create_model(model_name, pretrained=False)
    except RuntimeError as e:
        raise InputError("--timm", None, f"{model_name!r}: {e}", "valid: timm.list_models('vit_pe_core_*')") from None
    b0, ap = m.blocks[0], m.attn_pool
    if ap is None:
        raise InputError("--timm", None, f"{model_name!r} has no attention-pooling head", "valid: vit_pe_core_*")
    act = getattr(b0.mlp.act, "approximate", "none")
    pcfg = m.pretrained_cfg or {}
    size = m.patch_embed.img_size[0]
    proj = getattr(m.head, "out_features", 0) or 0
    nm = name or model_name.replace("vit_", "").replace("_", "-")
    d = {"model": nm, "family": "pe",
         "image": {"size": size, "channels": m.patch_embed.proj.in_channels, "patch": m.patch_embed.patch_size[0]},
         "width": m.embed_dim, "layers": len(m.blocks), "heads": b0.attn.num_heads,
         "mlp": b0.mlp.fc1.out_features, "activation": "gelu_tanh" if act == "tanh" else "gelu",
         "norm_eps": float(b0.norm1.eps), "patch_bias": m.patch_embed.proj.bias is not None,
         "positions": "learned", "class_token": m.cls_token is not None,
         "pre_norm": type(m.norm_pre).__name__ != "Identity", "rope": "2d" if m.rope is not None else "none",
         "rope_grid_offset": int(getattr(m.rope, "grid_offset", 1)) if m.rope is not None else 1,
         "post_norm": type(m.norm).__name__ != "Identity",
         "head": {"kind": "attention_pool", "heads": ap.num_heads, "mlp": ap.mlp.fc1.out_features, "proj": proj},
         "precision": "fp8", "fp8_scale": -4, "fuse_qkv": True,
         "preprocess": {"resize": int(size / pcfg.get("crop_pct", 1.0)), "resize_to": "shorter_side",
                        "interpolation": pcfg.get("interpolation", "bicubic"), "crop": "center",
                        "mean": list(pcfg.get("mean", (0.5, 0.5, 0.5))), "std": list(pcfg.get("std", (0.5, 0.5, 0.5)))}}
    return render(d, f"imported from timm {model_name}"), nm
