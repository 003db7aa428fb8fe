"""Parameters: seeded random initialization, and safetensors checkpoints in upstream (native) naming."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import Loc, WeightsError
from ..ir.graph import Graph, Role
from .host import rope_tables
from .spec import Family, ModelSpec


def random_weights(graph: Graph, spec: ModelSpec, seed: int = 0) -> dict[str, np.ndarray]:
    """Logical float32 values for every parameter: matrices N(0, 1/fan_in); embeddings N(0, 1/width);
    biases and LayerNorm shifts N(0, 0.02^2); LayerNorm scales 1 + N(0, 0.02^2). Each tensor draws from its
    own stream keyed by (seed, name), so adding a tensor never changes the others."""
    out: dict[str, np.ndarray] = {}
    for v in graph.values:
        if v.role is not Role.PARAM:
            continue
        rng = np.random.default_rng([seed, zlib.crc32(v.name.encode())])
        leaf = v.name.rsplit(".", 1)[-1]
        if leaf == "w":
            std = 1.0 / np.sqrt(v.shape[-2])
        elif leaf in ("b",):
            std = 0.02
        elif leaf == "g":
            out[v.name] = (1.0 + 0.02 * rng.standard_normal(v.shape)).astype(np.float32)
            continue
        else:  # pos, cls, probe
            std = 1.0 / np.sqrt(spec.width)
        out[v.name] = (std * rng.standard_normal(v.shape)).astype(np.float32)
    out.update(constants(graph, spec))
    return out


def constants(graph: Graph, spec: ModelSpec) -> dict[str, np.ndarray]:
    names = {v.name for v in graph.values if v.role is Role.CONST}
    if not names:
        return {}
    sin, cos = rope_tables(spec)
    return {n: t for n, t in (("rope.sin", sin), ("rope.cos", cos)) if n in names}


# --- native checkpoints ---------------------------------------------------------------------------


class _Native:
    """Reads native tensors by name, checking shapes, and records which names were used."""

    def __init__(self, tensors: dict[str, np.ndarray], path: str):
        self.t = tensors
        self.path = path
        self.used: set[str] = set()

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        if name not in self.t:
            raise WeightsError(Loc(self.path), name, "missing tensor",
                               f"the checkpoint must hold `{name}` with shape {list(shape)}")
        x = self.t[name]
        if tuple(x.shape) != tuple(shape):
            raise WeightsError(Loc(self.path), name, f"shape {list(x.shape)} does not match the model",
                               f"expected {list(shape)} for this model declaration")
        self.used.add(name)
        return np.asarray(x, np.float32)


def _patch_matrix(w: np.ndarray) -> np.ndarray:
    """Conv weight [W, C, p, p] -> [p*p*C, W] matching pack_patches' (y, x, channel) order."""
    return np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0]))


def _siglip(n: _Native, s: ModelSpec) -> dict[str, list[np.ndarray] | np.ndarray]:
    W, p, C, M = s.width, s.patch, s.channels, s.mlp
    pre = ""  # load_weights strips the "vision_model." prefix of SiglipModel-style exports
    out: dict = {
        "embed.w": _patch_matrix(n.get(pre + "embeddings.patch_embedding.weight", (W, C, p, p))),
        "embed.b": n.get(pre + "embeddings.patch_embedding.bias", (W,)),
        "pos": n.get(pre + "embeddings.position_embedding.weight", (s.patches, W)),
        "ln_post.g": n.get(pre + "post_layernorm.weight", (W,)),
        "ln_post.b": n.get(pre + "post_layernorm.bias", (W,)),
    }
    for i in range(s.layers):
        lp = f"{pre}encoder.layers.{i}."
        lin = {k: (n.get(f"{lp}self_attn.{k}_proj.weight", (W, W)).T, n.get(f"{lp}self_attn.{k}_proj.bias", (W,)))
               for k in "qkv"}
        layer = {
            "ln1.g": n.get(lp + "layer_norm1.weight", (W,)), "ln1.b": n.get(lp + "layer_norm1.bias", (W,)),
            "ln2.g": n.get(lp + "layer_norm2.weight", (W,)), "ln2.b": n.get(lp + "layer_norm2.bias", (W,)),
            "o.w": n.get(lp + "self_attn.out_proj.weight", (W, W)).T, "o.b": n.get(lp + "self_attn.out_proj.bias", (W,)),
            "fc1.w": n.get(lp + "mlp.fc1.weight", (M, W)).T, "fc1.b": n.get(lp + "mlp.fc1.bias", (M,)),
            "fc2.w": n.get(lp + "mlp.fc2.weight", (W, M)).T, "fc2.b": n.get(lp + "mlp.fc2.bias", (W,)),
        }
        _qkv(layer, lin, s.fuse_qkv)
        for k, v in layer.items():
            out.setdefault(f"layers.{k}", []).append(v)
    hp = pre + "head."
    ipw = n.get(hp + "attention.in_proj_weight", (3 * W, W))
    ipb = n.get(hp + "attention.in_proj_bias", (3 * W,))
    out["head.probe"] = n.get(hp + "probe", (1, 1, W))
    _head_common(out, n, s, hp + "attention.out_proj", hp + "layernorm", hp + "mlp")
    out["head.q.w"], out["head.q.b"] = ipw[:W].T, ipb[:W]
    _kv(out, ipw[W:], ipb[W:], s)
    return out


def _pe(n: _Native, s: ModelSpec) -> dict:
    W, p, C, M = s.width, s.patch, s.channels, s.mlp
    out: dict = {
        "pos": n.get("pos_embed", (1, s.tokens, W))[0],
        "embed.w": _patch_matrix(n.get("patch_embed.proj.weight", (W, C, p, p))),
        "ln_pre.g": n.get("norm_pre.weight", (W,)), "ln_pre.b": n.get("norm_pre.bias", (W,)),
        "ln_post.g": n.get("norm.weight", (W,)), "ln_post.b": n.get("norm.bias", (W,)),
    }
    if s.class_token:
        out["cls"] = n.get("cls_token", (1, 1, W))
    for i in range(s.layers):
        lp = f"blocks.{i}."
        qkv_w = n.get(lp + "attn.qkv.weight", (3 * W, W))
        qkv_b = n.get(lp + "attn.qkv.bias", (3 * W,))
        lin = {k: (qkv_w[j * W:(j + 1) * W].T, qkv_b[j * W:(j + 1) * W]) for j, k in enumerate("qkv")}
        layer = {
            "ln1.g": n.get(lp + "norm1.weight", (W,)), "ln1.b": n.get(lp + "norm1.bias", (W,)),
            "ln2.g": n.get(lp + "norm2.weight", (W,)), "ln2.b": n.get(lp + "norm2.bias", (W,)),
            "o.w": n.get(lp + "attn.proj.weight", (W, W)).T, "o.b": n.get(lp + "attn.proj.bias", (W,)),
            "fc1.w": n.get(lp + "mlp.fc1.weight", (M, W)).T, "fc1.b": n.get(lp + "mlp.fc1.bias", (M,)),
            "fc2.w": n.get(lp + "mlp.fc2.weight", (W, M)).T, "fc2.b": n.get(lp + "mlp.fc2.bias", (W,)),
        }
        _qkv(layer, lin, s.fuse_qkv)
        for k, v in layer.items():
            out.setdefault(f"layers.{k}", []).append(v)
    ap = "attn_pool."
    out["head.probe"] = n.get(ap + "latent", (1, 1, W))
    out["head.q.w"] = n.get(ap + "q.weight", (W, W)).T
    out["head.q.b"] = n.get(ap + "q.bias", (W,))
    _kv(out, n.get(ap + "kv.weight", (2 * W, W)), n.get(ap + "kv.bias", (2 * W,)), s)
    _head_common(out, n, s, ap + "proj", ap + "norm", ap + "mlp")
    if s.head_proj:
        out["proj.w"] = n.get("head.weight", (s.head_proj, W)).T
        out["proj.b"] = n.get("head.bias", (s.head_proj,))
    return out


def _qkv(layer: dict, lin: dict, fused: bool) -> None:
    if fused:
        layer["qkv.w"] = np.concatenate([lin[k][0] for k in "qkv"], axis=1)
        layer["qkv.b"] = np.concatenate([lin[k][1] for k in "qkv"])
    else:
        for k in "qkv":
            layer[f"{k}.w"], layer[f"{k}.b"] = lin[k]


def _kv(out: dict, w: np.ndarray, b: np.ndarray, s: ModelSpec) -> None:
    W = s.width
    if s.fuse_qkv:
        out["head.kv.w"], out["head.kv.b"] = w.T, b
    else:
        out["head.k.w"], out["head.k.b"] = w[:W].T, b[:W]
        out["head.v.w"], out["head.v.b"] = w[W:].T, b[W:]


def _head_common(out: dict, n: _Native, s: ModelSpec, proj: str, norm: str, mlp: str) -> None:
    W, M = s.width, s.head_mlp
    out["head.o.w"] = n.get(proj + ".weight", (W, W)).T
    out["head.o.b"] = n.get(proj + ".bias", (W,))
    out["head.ln.g"] = n.get(norm + ".weight", (W,))
    out["head.ln.b"] = n.get(norm + ".bias", (W,))
    out["head.fc1.w"] = n.get(mlp + ".fc1.weight", (M, W)).T
    out["head.fc1.b"] = n.get(mlp + ".fc1.bias", (M,))
    out["head.fc2.w"] = n.get(mlp + ".fc2.weight", (W, M)).T
    out["head.fc2.b"] = n.get(mlp + ".fc2.bias", (W,))


_FAMILIES: dict[Family, Callable[[_Native, ModelSpec], dict]] = {Family.SIGLIP: _siglip, Family.PE: _pe}
# Buffers some exporters include that carry no learned values.
_IGNORED_SUFFIXES = ("position_ids",)


# a full SiglipModel checkpoint also holds the text tower and the contrastive scale: not the vision model's
_SIGLIP_OTHER = ("text_model.", "logit_scale", "logit_bias")


def _read_checkpoint(path: Path, spec: ModelSpec) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, or of every *.safetensors shard in a save directory (transformers'
    `save_pretrained`); a full SigLIP checkpoint's text tower is skipped, not loaded."""
    from safetensors import SafetensorError, safe_open
    name = str(path)
    if path.is_dir():
        files = sorted(path.glob("*.safetensors"))
        if not files:
            raise WeightsError(Loc(name), None, "a directory without *.safetensors files",
                               "pass a safetensors checkpoint or a save_pretrained directory")
    else:
        files = [path]
    out: dict[str, np.ndarray] = {}
    for f in files:
        try:
            with safe_open(str(f), "np") as st:
                keys = list(st.keys())
                full = spec.family is Family.SIGLIP and any(k.startswith("vision_model.") for k in keys)
                for k in keys:
                    if full and k.startswith(_SIGLIP_OTHER):
                        continue
                    if k in out:
                        raise WeightsError(Loc(str(f)), k, "appears in two shards", "pass one model's shards")
                    out[k] = st.get_tensor(k)
        except FileNotFoundError:
            raise WeightsError(Loc(str(f)), None, "no such weights file", "pass a .safetensors checkpoint") from None
        except (SafetensorError, OSError, ValueError) as e:
            raise WeightsError(Loc(str(f)), None, f"not a readable safetensors file ({e})",
                               "export with safetensors.torch.save_file(model.state_dict(), path)") from None
    return out


def load_weights(path: str | Path, graph: Graph, spec: ModelSpec) -> dict[str, np.ndarray]:
    """Logical parameters from a safetensors checkpoint in the upstream naming of `spec.family`."""
    name = str(path)
    raw = _read_checkpoint(Path(path), spec)
    tensors = {k.removeprefix("vision_model.") if spec.family is Family.SIGLIP else k: v
               for k, v in raw.items() if not k.endswith(_IGNORED_SUFFIXES)}
    native = _Native(tensors, name)
    mapped = _FAMILIES[spec.family](native, spec)
    extra = sorted(set(tensors) - native.used)
    if extra:
        raise WeightsError(Loc(name), extra[0], f"unexpected tensor ({len(extra)} in all)",
                           f"a {spec.family.value} checkpoint for {spec.layers} layers with this head holds only "
                           "the model's tensors (check --layers and fuse/head options)")
    out = {k: np.stack(v) if isinstance(v, list) else np.ascontiguousarray(v) for k, v in mapped.items()}
    out.update(constants(graph, spec))
    missing = [v.name for v in graph.values if v.role is Role.PARAM and v.name not in out]
    if missing:
        raise WeightsError(Loc(name), missing[0], "the model needs a tensor the checkpoint mapping did not provide")
    return out
