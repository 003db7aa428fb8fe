"""A sweep's grid: every combination of models, targets, batches, depths and option values as a frozen Case with
a stable directory name and the `ipuplan solve` arguments it runs with."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

def catalogue(v: str) -> str:
    """A catalogue name `solve --catalogue` takes."""
    from ..catalogue import Catalogue
    return Catalogue(v).value


# --set KEY: the solve flag it sets, and how a value is checked
OPTIONS = {"headroom": ("--headroom", int), "exchange-table-budget": ("--exchange-table-budget", int),
           "support-reserve": ("--support-reserve", int), "effort": ("--effort", float), "seed": ("--seed", int),
           "time-limit": ("--time-limit", float), "slack-effort": ("--slack-effort", float),
           "catalogue": ("--catalogue", catalogue), "ipus": ("--ipus", int),
           "objective": ("--objective", str)}


@dataclass(frozen=True)
class Case:
    model: str
    target: str
    batch: int
    layers: int | None  # None: the model's depth
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """A readable, unique directory name."""
        parts = [Path(self.model).stem, Path(self.target).stem, f"b{self.batch}",
                 f"L{self.layers}" if self.layers else "full"]
        parts += [f"{k}={v}" for k, v in self.settings]
        slug = "-".join(parts)
        return slug if len(slug) < 100 else slug[:80] + "-" + hashlib.sha256(slug.encode()).hexdigest()[:12]

    def solve_args(self) -> list[str]:
        args = [self.model, "--batch", str(self.batch), "--target", self.target]
        if self.layers:
            args += ["--layers", str(self.layers)]
        for k, v in self.settings:
            args += [OPTIONS[k][0], v]
        return args

    def record(self) -> dict:
        return {"model": self.model, "target": self.target, "batch": self.batch, "layers": self.layers,
                "settings": dict(self.settings)}


def _ints(text: str, what: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(what, None, f"{text!r} is not a comma-separated list of integers", "e.g. 1,2,4,8") from None
    if not vals or min(vals) < 1:
        raise InputError(what, None, f"{text!r} is empty or not positive", "e.g. 1,2,4,8")
    return vals


def grid(models: list[str], targets: list[str], batches: str, layers: str | None, sets: list[str]) -> list[Case]:
    for m in models + targets:
        if not Path(m).exists():
            raise InputError(m, None, "does not exist", "give model and target YAML files")
    depths: list[int | None] = [None]
    if layers:
        depths = [None if x.strip() == "full" else int(x) for x in layers.split(",")] if all(
            x.strip() == "full" or x.strip().isdigit() and int(x) >= 1 for x in layers.split(",")) else \
            _raise("--layers", layers, "a comma-separated list of depths >= 1 or `full`, e.g. 2,full")
    axes = []
    for s in sets:
        key, _, vals = s.partition("=")
        if key not in OPTIONS or not vals:
            raise InputError("--set", None, f"{s!r} is not KEY=V1,V2", f"keys: {', '.join(OPTIONS)}")
        conv = OPTIONS[key][1]
        try:
            [conv(v) for v in vals.split(",")]
        except ValueError:
            raise InputError("--set", None, f"{s!r}: a value is not a {conv.__name__}",
                             "e.g. catalogue=shaped,grid" if key == "catalogue" else f"e.g. {key}=0,8192") from None
        axes.append([(key, v) for v in vals.split(",")])
    combos = list(itertools.product(*axes)) if axes else [()]
    return [Case(str(m), str(t), b, d, tuple(c)) for m in models for t in targets
            for b in _ints(batches, "--batch") for d in depths for c in combos]


def _raise(what: str, text: str, valid: str):
    raise InputError(what, None, f"{text!r} is invalid", valid)
