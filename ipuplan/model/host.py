"""Host-side tensors: image patch packing and the deterministic RoPE tables."""

from __future__ import annotations

import numpy as np

from ..errors import ArrayInputError
from .spec import ModelSpec


def pack_patches(pixels: np.ndarray, spec: ModelSpec, where: str = "pixels") -> np.ndarray:
    """[B, C, H, W] float32 -> [B, patches, p*p*C] in (patch_y, patch_x, y, x, channel) order."""
    x = np.asarray(pixels)
    c, s, p = spec.channels, spec.image_size, spec.patch
    if x.ndim != 4 or x.shape[1:] != (c, s, s):
        raise ArrayInputError(where, None, f"shape {tuple(x.shape)} is not [batch, {c}, {s}, {s}]",
                              f"pass normalized float32 pixels for a {s}x{s} {c}-channel image")
    if x.dtype != np.float32:  # float64 would round on the way in, float16 has already lost bits: say so
        raise ArrayInputError(where, None, f"dtype {x.dtype} is not float32",
                              "pass float32 pixels (numpy: x.astype(np.float32)), or images with --image")
    if not np.all(np.isfinite(x)):
        raise ArrayInputError(where, None, "contains NaN or infinity", "pass finite pixel values")
    b, g = x.shape[0], spec.grid
    t = x.astype(np.float32).reshape(b, c, g, p, g, p).transpose(0, 2, 4, 3, 5, 1)
    return np.ascontiguousarray(t.reshape(b, g * g, p * p * c))


def rope_tables(spec: ModelSpec) -> tuple[np.ndarray, np.ndarray]:
    """2-D RoPE sin/cos tables [patches, head_dim] in the interleaved layout of timm's RotaryEmbeddingCat.

    Per patch at grid (row i, column j): coordinates (x, y) = (j + o, i + o) ("xy" indexing, o the model's
    rope_grid_offset), bands f_m = 10000^(-m / (head_dim/4)) for m < head_dim/4; angles [x f_0.., y f_0..],
    each repeated twice.
    """
    g, d = spec.grid, spec.head_dim
    nb = d // 4
    bands = (1.0 / (np.float32(10000.0) ** (np.arange(nb, dtype=np.float32) / np.float32(nb)))).astype(np.float32)
    t = np.arange(g, dtype=np.float32) + np.float32(spec.rope_offset)
    t = (t / np.float32(g) * np.float32(g)).astype(np.float32)  # reference-shape rescale (identity at 24x24)
    xs, ys = np.meshgrid(t, t, indexing="xy")
    grid = np.stack([xs, ys], -1)  # [g, g, 2]
    ang = (grid[..., None] * bands).astype(np.float32).reshape(g * g, 2 * nb)
    ang = np.repeat(ang, 2, axis=-1)
    return np.sin(ang).astype(np.float32), np.cos(ang).astype(np.float32)
