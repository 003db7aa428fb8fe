"""Option values every entry point takes (the command line and the Python API), checked one way: bad input names
the option (`--batch` on the command line, `batch` in the API) and says what is valid."""

from __future__ import annotations

import math

from .errors import InputError


def batch(value, flag: str = "--batch") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise InputError(flag, None, f"{value!r} is out of range", "valid: an integer 1..4096")
    return value


def seconds(flag: str, value) -> float:
    """A duration: a finite number of seconds (nan and inf are bad input)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(flag, None, f"{value!r} is not a number of seconds", "give a finite number")
    return float(value)


def positive_seconds(flag: str, value) -> float:
    """A duration that must be more than nothing (a time limit, an effort)."""
    if seconds(flag, value) <= 0:
        raise InputError(flag, None, "is not positive", "give seconds > 0")
    return float(value)


def seed(value, flag: str = "--seed") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise InputError(flag, None, f"{value!r} is out of range", f"valid: 0..{2**31 - 1}")
    return value


def catalogue(name, flag: str = "--catalogue"):
    """The implementation space as the solver's enum."""
    from .catalogue import Catalogue
    try:
        return Catalogue(name)
    except ValueError:
        raise InputError(flag, None, f"{name!r} is not a catalogue",
                         "valid: " + ", ".join(c.value for c in Catalogue)) from None


def fp8_scales(value, model, flag: str = "--scales") -> tuple | None:
    """FP8 scales: "fixed" (or None) for the model's fixed scale, else a scales file (`ipuplan calibrate`) for this
    model; its (GEMM, x, w) triples, checked against the model's GEMMs when its graph is built."""
    if value is None or value == "fixed":
        return None
    from .model import load_model
    from .scales import load_scales
    sc = load_scales(value)
    name = load_model(model).name
    if sc.model and sc.model != name:
        raise InputError(flag, None, f"{value} was calibrated for {sc.model}, not {name}",
                         f"calibrate {name}: ipuplan calibrate {model} ... -o scales.json")
    return tuple((g.gemm, g.x, g.w) for g in sc.gemms)
