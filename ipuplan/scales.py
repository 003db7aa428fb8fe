"""FP8 metadata scales per GEMM: the weight's from its own values, the activation's from calibration inputs run
through the fp32 reference; read and written as a scales file (`ipuplan calibrate`, `solve --scales`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from .errors import ModelError
from .ir.graph import Graph, OpKind
from .model.build import gemm_keys
from .numerics import F143_MAX
from .reference.run import Mode, Policy, run_graph

FORMAT = "ipuplan-scales/1"
# binades between the largest calibrated activation and the format's largest value: inputs beyond what
# calibration saw still fit, at one bit less precision for everything
HEADROOM = 1


@dataclass(frozen=True)
class GemmScale:
    """One GEMM's scales (logical = stored * 2^scale) and the largest magnitudes they were chosen from."""

    gemm: str
    x: int
    w: int
    x_max: float | None = None  # largest |x| seen in calibration
    w_max: float | None = None  # largest |w| over every layer
    acc_max: float | None = None  # largest |x @ w| seen in calibration (what the accumulator holds, logical)


@dataclass(frozen=True)
class Scales:
    """FP8 scales of a model's GEMMs and how they were chosen."""

    model: str
    gemms: tuple[GemmScale, ...]
    method: str  # how they were chosen

    def mapping(self) -> dict[str, tuple[int, int]]:
        return {g.gemm: (g.x, g.w) for g in self.gemms}

    def to_json(self) -> dict:
        return {"format": FORMAT, "model": self.model, "method": self.method,
                "gemms": {g.gemm: {"x": g.x, "w": g.w, "x_max": g.x_max, "w_max": g.w_max, "acc_max": g.acc_max}
                          for g in self.gemms}}


def scale_for(maxabs: float, headroom: int = 0, fmt_max: float = F143_MAX) -> int:
    """The smallest scale s at which |v| <= maxabs stores without saturating (maxabs * 2^-s <= fmt_max), with
    `headroom` binades to spare: the finest FP8 grid that still holds the largest value."""
    if not math.isfinite(maxabs) or maxabs <= 0:
        raise ValueError(f"no scale for a largest magnitude of {maxabs}")
    s = math.ceil(math.log2(maxabs / fmt_max)) + headroom
    while maxabs * 2.0 ** -s > fmt_max:  # log2 rounding at exact powers of two
        s += 1
    return max(-32, min(32, s))


def _weight_of(graph: Graph) -> dict[str, str]:
    """GEMM key -> the graph-level parameter holding its weight (a Repeat body's: the stacked sequence)."""
    out = {}

    def walk(g, scope, rename):
        for op in g.ops:
            if op.kind is OpKind.MATMUL:
                out[scope + op.name] = rename.get(op.inputs[1], op.inputs[1])
            elif op.kind is OpKind.REPEAT:
                a = op.attrs
                nc, ns = len(a.carried), len(a.sequences)
                walk(a.body, f"{scope}{op.name}/", dict(zip(a.sequences, op.inputs[nc:nc + ns])))
    walk(graph, "", {})
    return out


def weight_maxima(graph: Graph, weights: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Largest |w| of every GEMM's weight, over all layers of a stacked one."""
    return {k: float(np.max(np.abs(np.asarray(weights[w], np.float32)))) for k, w in _weight_of(graph).items()}


def activation_maxima(graph: Graph, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray]) \
        -> tuple[dict[str, float], dict[str, float]]:
    """When the fp32 reference runs `inputs`: per GEMM, the largest |x| entering its FP8 cast, and the largest
    |x @ w| (the accumulated sum, logical, before bias), each over all layers."""
    xs: dict[str, float] = {}
    acc: dict[str, float] = {}

    def observe(key: str, op, ins) -> None:
        if op.kind is OpKind.CAST and key.endswith(".x8"):
            g = key[:-3]
            xs[g] = max(xs.get(g, 0.0), float(np.max(np.abs(ins[0]))))
        elif op.kind is OpKind.MATMUL:  # fp32 mode holds FP8 operands in the stored domain (value * 2^-scale)
            y = np.abs(np.matmul(ins[0], ins[1])).max() * 2.0 ** (op.attrs.x_scale + op.attrs.w_scale)
            acc[key] = max(acc.get(key, 0.0), float(y))
    run_graph(graph, inputs, weights, Policy(Mode.FP32, {}, 1, observe=observe))
    return xs, acc


def choose(graph: Graph, model: str, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
           images: int, accumulator_max: float, headroom: int = HEADROOM) -> Scales:
    """Scales for every GEMM of an FP8 `graph`. The weight's puts its largest magnitude at the top of the FP8
    range; the activation's puts the largest calibrated |x| `headroom` binades below it. FP8 keeps the same
    relative precision anywhere in its normal range, so the scale's job is to keep both operands in that range
    and their products' sums inside the accumulator: where the calibrated |x @ w| (with `headroom` binades) would
    overflow the accumulator's largest value (the target's FP8 accumulation type), both scales are raised (x's first) until it fits."""
    wmax = weight_maxima(graph, weights)
    xmax, amax = activation_maxima(graph, weights, inputs)
    out = []
    for k in gemm_keys(graph):
        if not (wmax.get(k, 0) > 0 and xmax.get(k, 0) > 0):
            raise ValueError(f"GEMM {k}: no nonzero weight or activation to choose a scale from")
        w, x = scale_for(wmax[k]), scale_for(xmax[k], headroom)
        if amax.get(k, 0) > 0:
            short = scale_for(amax[k], headroom, accumulator_max) - (x + w)
            if short > 0:
                x, w = x + (short + 1) // 2, w + short // 2
        out.append(GemmScale(k, x, w, xmax[k], wmax[k], amax.get(k)))
    return Scales(model, tuple(out), f"weights and calibration ({images} images, {headroom} binade headroom)")


def load_scales(path: str | Path) -> Scales:
    """A scales file, every field checked; errors name the file and the field."""
    p = Path(path)
    where = str(p)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ModelError(where, None, "no such scales file", "write one with `ipuplan calibrate`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(where, None, f"is not a scales file ({e})", f"a JSON document of format {FORMAT}") \
            from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelError(where, "format", f"is {doc.get('format') if isinstance(doc, dict) else doc!r}",
                         f"valid: {FORMAT}")
    gemms = doc.get("gemms")
    if not isinstance(gemms, dict) or not gemms:
        raise ModelError(where, "gemms", "is not a mapping of GEMM names", "valid: {gemm: {x: int, w: int}}")
    out = []
    for k, v in gemms.items():
        if not isinstance(v, dict) or not all(isinstance(v.get(f), int) and not isinstance(v.get(f), bool)
                                              and -32 <= v[f] <= 32 for f in ("x", "w")):
            raise ModelError(where, f"gemms.{k}", f"is {v!r}", "valid: {x: int, w: int}, each in -32..32")
        out.append(GemmScale(k, v["x"], v["w"], v.get("x_max"), v.get("w_max"), v.get("acc_max")))
    return Scales(str(doc.get("model", "")), tuple(out), str(doc.get("method", "")))


def write_scales(scales: Scales, path: str | Path) -> None:
    Path(path).write_text(json.dumps(scales.to_json(), indent=1) + "\n")
