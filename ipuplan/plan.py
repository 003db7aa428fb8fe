"""plan.json: the FIT plan as data (choices, peaks, cycles, sizes, input hashes) shared by solver and checker."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

FORMAT = "ipuplan-plan/1"


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def layout_record(lay) -> dict:
    """A layout as plain fields (enums by value)."""
    d = dataclasses.asdict(lay)
    d["mem"] = lay.mem.value
    return d


def region_usage(std: np.ndarray, il: np.ndarray, support, region0: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes in region 0 and region 1 when standard data fills region 0's free space first; `support`
    (code, runtime, exchange tables) may be a per-tile vector."""
    in0 = np.minimum(std, np.maximum(0, region0 - support))
    return support + in0, il + (std - in0)


def peak(a: np.ndarray, steps: list[str]) -> dict:
    """{bytes, tile, step} of the largest entry of a [steps, tiles] array."""
    t, tile = np.unravel_index(int(np.argmax(a)), a.shape)
    return {"bytes": int(a[t, tile]), "tile": int(tile), "step": steps[t]}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
