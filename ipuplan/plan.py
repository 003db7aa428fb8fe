"""plan.json helpers shared by solver and checker: input hashes, peaks, region usage, JSON writing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .formats import PLAN as FORMAT  # noqa: F401 (the plan format name)


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def region_usage(std: np.ndarray, il: np.ndarray, support, region0: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes in region 0 and region 1 when standard data fills region 0's free space first; `support`
    (fixed reservations, code, program, exchange tables) may be a per-tile vector."""
    in0 = np.minimum(std, np.maximum(0, region0 - support))
    return support + in0, il + (std - in0)


def peak(a: np.ndarray, steps: list[str]) -> dict:
    """{bytes, tile, step} of the largest entry of a [steps, tiles] array."""
    t, tile = np.unravel_index(int(np.argmax(a)), a.shape)
    return {"bytes": int(a[t, tile]), "tile": int(tile), "step": steps[t]}


def write_json(path: Path, data: dict, indent: int | None = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent, sort_keys=False) + "\n")
