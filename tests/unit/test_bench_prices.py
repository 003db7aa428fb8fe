"""bench/prices.py's hypotheses: each lowers some cost and no other, and leaves every price as it found it."""

from __future__ import annotations

import importlib.util
import sys
from math import ceil
from pathlib import Path

import pytest

from ipuplan.codelets import attention, gemm, vector
from ipuplan.target import load_target

ROOT = Path(__file__).resolve().parents[2]


def _prices_module():
    spec = importlib.util.spec_from_file_location("bench_prices", ROOT / "bench" / "prices.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_prices", mod)
    spec.loader.exec_module(mod)
    return mod


def _costs(t) -> dict[str, int]:
    """Cycles of one representative call of every priced term the hypotheses touch."""
    out = {f"vector {k}": vector.cycles(t, k, 4096) for k in vector.COST}
    out |= {"attention cell": attention.cycles(t, 64, 256, 72), "gemm epilogue": gemm.epilogue_cycles(t, 64, 64),
            "gemm step": gemm.accumulate_cycles(t, 64, 256, 64, True, False),
            "reduction round": gemm.reduce_cycles(t, 64, 64, 2),
            "exchange 8 KiB": ceil(8192 / t.exchange_bytes_per_cycle), "exchange piece": t.exchange_fragment_cycles,
            "exchange sync": t.exchange_sync_cycles, "compute-set sync": t.compute_set_cycles}
    return out


KNOBS = _prices_module().knobs()


@pytest.mark.parametrize("knob", KNOBS, ids=[k.name for k in KNOBS])
def test_a_hypothesis_lowers_a_price_and_restores_it(knob):
    base = load_target(ROOT / "targets" / "c600.yaml")
    before = _costs(base)
    target, undo = knob.apply(base)
    try:
        during = _costs(target)
    finally:
        undo()
    assert all(during[k] <= before[k] for k in before), \
        {k: (before[k], during[k]) for k in before if during[k] > before[k]}
    assert any(during[k] < before[k] for k in before), f"{knob.name} changes no price"
    assert _costs(base) == before, "the hypothesis left a price changed"
