"""The codelets' cost formulas on hand-computed cases: the barrel-scheduled workers, the AMP, exchange, patching."""

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ipuplan import codelets as cl
from ipuplan.codelets import attention as att
from ipuplan.codelets import gemm
from ipuplan.target import load_target

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def t():
    return load_target(ROOT / "targets" / "c600.yaml")


def test_one_worker_runs_at_a_sixth_of_the_tile(t):
    add = cl.vector.COST["add"]  # 3 bundles per 64-bit vector
    call = t.kernel_launch_cycles + t.worker_call_cycles
    assert add.cycles(t, 8) == call + 3 * 6  # one vector: one worker, one bundle every sixth cycle
    assert add.cycles(t, 6 * 8) == call + 3 * 6  # six vectors: six workers side by side
    assert add.cycles(t, 7 * 8) == call + 2 * 3 * 6  # the seventh waits for a worker's second turn
    assert add.cycles(t, 6000 * 8) == call + 6000 * 3  # full barrel: one bundle per cycle per tile


def test_exchange_takes_bytes_or_piece_cutovers_whichever_is_longer(t):
    # 10 pieces x 160 > 1,000 words: 600 cycles beyond what the bytes take
    assert cl.exchange_cost(t, 4000, 400, 10) == cl.Cost(0, 1600, 0, 600)
    assert cl.exchange_cost(t, 4000, 400, 5) == cl.Cost(0, 1000, 0, 0)
    assert (cl.exchange_cost(t, 4000, 400, 10) * 3).beyond == 1800 and cl.Cost(0, 1600, 0, 600).total == 1600
    assert cl.exchange_cost(t, 0, 0, 0).total == 0


def test_patching_takes_the_faster_of_scalar_and_workers(t):
    assert cl.patch_cycles(t, 0) == 0
    assert cl.patch_cycles(t, 1) == 102 + 31
    assert cl.patch_cycles(t, 78) == 936  # seeds 001, held out of the fit
    assert t.patch["scalar_call"] + 78 * t.patch["scalar_word"] == 2520


def test_gemm_f16_pays_calls_and_coefficient_delivery(t):
    # 64 x 64 x 64: one call, 64*64*64/64 products, 64*64*2 B of coefficients at 940 per 2,048 B
    assert gemm.cycles(t, 64, 64, 64, False) == 11 + 294 + 4096 + 3760


def test_gemm_fp8_overlaps_products_with_coefficient_loads(t):
    # few rows: loading 64 x 64 B of coefficients at 16 B/cycle (256) outlasts 1*64*64/128 products (32)
    assert gemm.cycles(t, 1, 64, 64, True) == 11 + 11 + 256
    assert gemm.cycles(t, 256, 64, 64, True) == 11 + 11 + 8192


@given(st.integers(1, 300), st.integers(1, 800), st.integers(1, 128))
def test_attention_cost_grows_with_every_dimension(q, keys, d):
    t = load_target(ROOT / "targets" / "c600.yaml")
    base = att.cycles(t, q, keys, d)
    assert att.cycles(t, q + 16, keys, d) >= base
    assert att.cycles(t, q, keys + 64, d) >= base
    assert att.cycles(t, q, keys, d + 16) >= base


def test_panel_packer_reproduces_its_measurement(t):
    assert abs(att.PACK.cycles(t, 768 * 16 * 2) - 23_190) <= 1  # seeds 003: the constant's source


def test_internal_round_is_a_superstep_with_its_sync(t):
    from ipuplan.layout import Layout, transfers
    a = Layout(64, 64, 2, pr=4, pc=1)
    b = Layout(64, 64, 2, pr=1, pc=4)
    tr = transfers(a, b, 16, None, t.encoding)
    assert cl.round_cycles(t, [tr]) == cl.transfers_cost(t, [tr]).total + t.exchange_sync_cycles
    assert cl.transfers_cost(t, [tr]).sync == 0
