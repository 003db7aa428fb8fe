"""The model declaration: a frozen ModelSpec read from models/*.yaml, every value located."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ..errors import Loc, ModelError
from ..source import Field, load_yaml, read_fields


class Family(Enum):
    """Which upstream implementation's weight naming a checkpoint uses."""

    SIGLIP = "siglip"  # transformers.SiglipVisionModel
    PE = "pe"  # timm Eva (vit_pe_core_*)


class Activation(Enum):
    GELU = "gelu"  # exact, erf form
    GELU_TANH = "gelu_tanh"


class Precision(Enum):
    F16 = "f16"
    FP8 = "fp8"


class ResizeTo(Enum):
    SQUARE = "square"  # both sides to `resize` (transformers' SiglipImageProcessor)
    SHORTER_SIDE = "shorter_side"  # the shorter side to `resize`, aspect kept (timm's eval transform)


class Crop(Enum):
    CENTER = "center"  # torchvision CenterCrop's rounding
    TOP_LEFT = "top_left"  # the region a VALID patch convolution reads (SigLIP at 384 -> 378)


class Interpolation(Enum):
    BICUBIC = "bicubic"
    BILINEAR = "bilinear"
    NEAREST = "nearest"


@dataclass(frozen=True)
class Preprocess:
    """How an image file becomes the model's normalized pixels: resize, crop to the model's image size,
    scale to [0, 1], then (x - mean) / std per channel."""

    resize: int
    resize_to: ResizeTo
    interpolation: Interpolation
    crop: Crop
    mean: tuple[float, ...]
    std: tuple[float, ...]


class HeadKind(Enum):
    MAP = "map"  # SigLIP multihead attention pooling
    ATTENTION_POOL = "attention_pool"  # PE latent-query pooling (+ optional projection)


_TOP = (
    Field("model", str, "the model's name"),
    Field("family", str, "upstream weight naming", choices=tuple(f.value for f in Family)),
    Field("image", dict, "input image: size, channels, patch"),
    Field("width", int, "model width (hidden size)", lo=1, hi=65536),
    Field("layers", int, "encoder depth", lo=1, hi=1024),
    Field("heads", int, "attention heads per encoder layer", lo=1, hi=1024),
    Field("mlp", int, "MLP hidden width", lo=1, hi=1 << 18),
    Field("activation", str, "MLP activation", choices=tuple(a.value for a in Activation)),
    Field("norm_eps", float, "LayerNorm epsilon", lo=1e-12, hi=1e-1),
    Field("patch_bias", bool, "the patch projection has a bias"),
    Field("positions", str, "absolute position embedding", choices=("learned",)),
    Field("class_token", bool, "prepend a learned class token"),
    Field("pre_norm", bool, "LayerNorm before the first block"),
    Field("rope", str, "rotary position embedding in attention", choices=("none", "2d")),
    Field("rope_grid_offset", int, "RoPE patch coordinates start here (timm rope_grid_offset: 1 for L/14, 0 for G/14)",
          default=1, lo=0, hi=16),
    Field("post_norm", bool, "LayerNorm after the last block"),
    Field("head", dict, "pooling head: kind, heads, mlp, proj"),
    Field("precision", str, "GEMM operand precision", choices=tuple(p.value for p in Precision)),
    Field("fp8_scale", int, "FP8 metadata scale s (logical = stored * 2^s)", default=-4, lo=-32, hi=32),
    Field("fuse_qkv", bool, "one fused QKV projection (and one fused pooling KV)", default=True),
    Field("preprocess", dict, "image files to pixels: resize, resize_to, interpolation, crop, mean, std",
          default=None),
)
_PREPROCESS = (
    Field("resize", int, "resize target in pixels", lo=1, hi=8192),
    Field("resize_to", str, "what `resize` sets", choices=tuple(r.value for r in ResizeTo)),
    Field("interpolation", str, "resampling filter", choices=tuple(i.value for i in Interpolation)),
    Field("crop", str, "how the resized image is cut to image.size", choices=tuple(c.value for c in Crop)),
    Field("mean", list, "per-channel mean of the [0, 1] pixels"),
    Field("std", list, "per-channel standard deviation of the [0, 1] pixels"),
)
_IMAGE = (
    Field("size", int, "square image side in pixels", lo=1, hi=8192),
    Field("channels", int, "input channels", lo=1, hi=64),
    Field("patch", int, "patch side in pixels", lo=1, hi=1024),
)
_HEAD = (
    Field("kind", str, "pooling head kind", choices=tuple(h.value for h in HeadKind)),
    Field("heads", int, "attention heads in the pooling head", lo=1, hi=1024),
    Field("mlp", int, "MLP hidden width in the pooling head", lo=1, hi=1 << 18),
    Field("proj", int, "final projection width (0 = none)", default=0, lo=0, hi=65536),
)


@dataclass(frozen=True)
class ModelSpec:
    """A vision transformer's hyperparameters; `locs` maps keys (e.g. `head.heads`) to YAML places."""

    name: str
    family: Family
    image_size: int
    channels: int
    patch: int
    width: int
    layers: int
    heads: int
    mlp: int
    activation: Activation
    norm_eps: float
    patch_bias: bool
    class_token: bool
    pre_norm: bool
    rope: bool
    rope_offset: int
    post_norm: bool
    head_kind: HeadKind
    head_heads: int
    head_mlp: int
    head_proj: int
    precision: Precision
    fp8_scale: int
    fuse_qkv: bool
    preprocess: Preprocess | None = None
    # per-GEMM FP8 metadata scales (GEMM key, x scale, w scale), sorted; a GEMM not listed uses fp8_scale
    fp8_scales: tuple[tuple[str, int, int], ...] = ()
    path: str = ""
    locs: dict[str, Loc] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @property
    def grid(self) -> int:
        return self.image_size // self.patch

    @property
    def patches(self) -> int:
        return self.grid * self.grid

    @property
    def tokens(self) -> int:
        return self.patches + (1 if self.class_token else 0)

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def patch_dim(self) -> int:
        return self.patch * self.patch * self.channels

    @property
    def out_width(self) -> int:
        return self.head_proj or self.width

    def loc(self, key: str) -> Loc:
        return self.locs.get(key, Loc(self.path))

    def with_options(self, *, layers: int | None = None, precision: str | None = None,
                     fuse_qkv: bool | None = None, fp8_scales=None) -> "ModelSpec":
        """The same model with command-line overrides applied (validated like YAML values); `fp8_scales`:
        GEMM key -> (x scale, w scale), checked against the GEMMs when the graph is built."""
        changes: dict = {}
        if fp8_scales is not None:
            triples = ((k, *v) for k, v in fp8_scales.items()) if isinstance(fp8_scales, dict) else fp8_scales
            try:
                changes["fp8_scales"] = tuple(sorted((str(k), int(x), int(w)) for k, x, w in triples))
            except (TypeError, ValueError):
                raise ModelError("--scales", None, "is not a mapping of GEMM to (x, w) scales",
                                 "valid: {gemm: [x, w], ...} with integer scales") from None
            for k, x, w in changes["fp8_scales"]:
                if not (-32 <= x <= 32 and -32 <= w <= 32):
                    raise ModelError("--scales", None, f"{k}: scales ({x}, {w}) out of range", "valid: -32..32")
        if layers is not None:
            if not 1 <= layers <= 1024:
                raise ModelError("--layers", None, f"{layers} is out of range", "valid: 1..1024")
            changes["layers"] = layers
        if precision is not None:
            try:
                changes["precision"] = Precision(precision)
            except ValueError:
                raise ModelError("--precision", None, f"{precision!r} is not a precision",
                                 "valid: f16, fp8") from None
        if fuse_qkv is not None:
            changes["fuse_qkv"] = fuse_qkv
        return dataclasses.replace(self, **changes)


def load_model(path: str | Path) -> ModelSpec:
    """Load and validate a model YAML file into a ModelSpec."""
    root = load_yaml(path, "model")
    top, tl = read_fields(root, _TOP, ModelError)
    img, il = read_fields(top["image"], _IMAGE, ModelError, "image.")
    head, hl = read_fields(top["head"], _HEAD, ModelError, "head.")
    locs = dict(tl)
    locs.update({f"image.{k}": v for k, v in il.items()})
    locs.update({f"head.{k}": v for k, v in hl.items()})

    def bad(key: str, problem: str, valid: str) -> ModelError:
        return ModelError(locs[key], key, problem, valid)

    if img["size"] % img["patch"]:
        raise bad("image.size", f"{img['size']} is not a multiple of the patch size {img['patch']}",
                  f"use a multiple of {img['patch']}, e.g. {img['size'] // img['patch'] * img['patch'] or img['patch']}")
    if top["width"] % top["heads"]:
        raise bad("heads", f"width {top['width']} is not divisible by {top['heads']} heads",
                  "choose heads dividing the width")
    if top["width"] % head["heads"]:
        raise bad("head.heads", f"width {top['width']} is not divisible by {head['heads']} pooling heads",
                  "choose heads dividing the width")
    if top["rope"] == "2d" and (top["width"] // top["heads"]) % 4:
        raise bad("rope", f"2-D RoPE needs a head width divisible by 4, got {top['width'] // top['heads']}",
                  "use rope: none or change width/heads")
    hk = HeadKind(head["kind"])
    if hk is HeadKind.MAP and head["proj"]:
        raise bad("head.proj", "a MAP head has no final projection", "remove head.proj or use attention_pool")
    fam = Family(top["family"])
    if fam is Family.SIGLIP and (top["class_token"] or top["pre_norm"] or top["rope"] != "none"):
        raise bad("family", "the siglip family has no class token, pre-norm or RoPE",
                  "use family: pe for those options")
    pre = _preprocess(top["preprocess"], img, locs) if top["preprocess"] is not None else None
    return ModelSpec(
        name=top["model"], family=fam, image_size=img["size"], channels=img["channels"], patch=img["patch"],
        width=top["width"], layers=top["layers"], heads=top["heads"], mlp=top["mlp"],
        activation=Activation(top["activation"]), norm_eps=top["norm_eps"], patch_bias=top["patch_bias"], class_token=top["class_token"],
        pre_norm=top["pre_norm"], rope=top["rope"] == "2d", rope_offset=top["rope_grid_offset"],
        post_norm=top["post_norm"], head_kind=hk,
        head_heads=head["heads"], head_mlp=head["mlp"], head_proj=head["proj"],
        precision=Precision(top["precision"]), fp8_scale=top["fp8_scale"], fuse_qkv=top["fuse_qkv"],
        preprocess=pre, path=str(path), locs=locs,
    )


def _preprocess(node, img: dict, locs: dict) -> Preprocess:
    pre, pl = read_fields(node, _PREPROCESS, ModelError, "preprocess.")
    locs.update({f"preprocess.{k}": v for k, v in pl.items()})
    vecs = {}
    for key in ("mean", "std"):
        items = pre[key].value
        vals = [i.value for i in items]
        if len(vals) != img["channels"] or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   for v in vals):
            raise ModelError(pl[key], f"preprocess.{key}", f"expected {img['channels']} numbers, got {vals!r}",
                             "one number per image channel, e.g. [0.5, 0.5, 0.5]")
        if key == "std" and min(vals) <= 0:
            raise ModelError(pl[key], "preprocess.std", f"{vals!r} holds a value <= 0", "positive numbers")
        vecs[key] = tuple(float(v) for v in vals)
    if pre["resize"] < img["size"]:
        raise ModelError(pl["resize"], "preprocess.resize", f"{pre['resize']} is below image.size {img['size']}",
                         f"resize to at least {img['size']} (the crop cuts the image to image.size)")
    return Preprocess(pre["resize"], ResizeTo(pre["resize_to"]), Interpolation(pre["interpolation"]),
                      Crop(pre["crop"]), vecs["mean"], vecs["std"])
