"""Image files to the model's normalized pixels, as the model YAML's `preprocess` declares (Pillow): RGB, resize,
crop to image.size, x / 255, (x - mean) / std; float32 [N, C, size, size]."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ArrayInputError
from .spec import Crop, Interpolation, ModelSpec, ResizeTo


def _filter(i: Interpolation):
    from PIL import Image
    return {Interpolation.BICUBIC: Image.Resampling.BICUBIC, Interpolation.BILINEAR: Image.Resampling.BILINEAR,
            Interpolation.NEAREST: Image.Resampling.NEAREST}[i]


def _size(w: int, h: int, resize: int, to: ResizeTo) -> tuple[int, int]:
    if to is ResizeTo.SQUARE:
        return resize, resize
    # torchvision's Resize(int): the shorter side to `resize`, the longer truncated in proportion
    if w <= h:
        return resize, int(resize * h / w)
    return int(resize * w / h), resize


def preprocess(img, spec: ModelSpec) -> np.ndarray:
    """One PIL image -> float32 [C, size, size]."""
    p = spec.preprocess
    img = img.convert("RGB")
    w, h = _size(img.width, img.height, p.resize, p.resize_to)
    if (w, h) != img.size:
        img = img.resize((w, h), _filter(p.interpolation))
    s = spec.image_size
    if p.crop is Crop.CENTER:  # torchvision CenterCrop: top = round((h - s) / 2)
        top, left = int(round((h - s) / 2.0)), int(round((w - s) / 2.0))
    else:
        top = left = 0
    x = np.asarray(img, np.uint8)[top:top + s, left:left + s].astype(np.float32) / np.float32(255)
    mean, std = np.asarray(p.mean, np.float32), np.asarray(p.std, np.float32)
    return np.ascontiguousarray(((x - mean) / std).transpose(2, 0, 1), np.float32)


def load_images(paths: list[str], spec: ModelSpec) -> np.ndarray:
    """Read image files (PNG, JPEG, anything Pillow opens) into the batch [len(paths), C, size, size]."""
    from PIL import Image, UnidentifiedImageError
    if spec.preprocess is None:
        raise ArrayInputError("--image", None, f"model {spec.name} declares no preprocess section",
                              "add `preprocess:` to the model YAML (docs/MODELS.md) or pass --pixels")
    if spec.channels != 3:
        raise ArrayInputError("--image", None, f"model {spec.name} takes {spec.channels} channels",
                              "image files give 3 (RGB); pass --pixels")
    out = []
    for path in paths:
        try:
            with Image.open(path) as img:
                out.append(preprocess(img, spec))
        except FileNotFoundError:
            raise ArrayInputError(path, None, "no such file", "pass a PNG or JPEG image") from None
        except (UnidentifiedImageError, OSError, ValueError) as e:
            raise ArrayInputError(path, None, f"not a readable image ({type(e).__name__})",
                                  "pass a PNG or JPEG image") from None
        if Path(path).is_dir():
            raise ArrayInputError(path, None, "is a directory", "pass image files")
    return np.stack(out)
