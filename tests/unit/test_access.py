"""The package check's own access rule (ipuplan/checker/access.py) on hand-built placements and programs: which
buffer holds a range at a step, vertex fields at every iteration, AMP operands in region 1, exchange runs,
the carry between iterations and binding coverage — each violation named."""

from __future__ import annotations

import numpy as np
import pytest

from ipuplan.backend.lower.program import Binding, ComputeSet, Exchange, Section, Slabs, Vertices
from ipuplan.checker.access import AccessError, Held, _bindings, _fields, _runs
from ipuplan.target import load_target
from tests.conftest import ROOT

TARGET = load_target(ROOT / "targets" / "small64.yaml")
BASE = TARGET.memory_map.base
R0 = TARGET.memory_map.executable_limit


def _placement(*buffers):
    """One group of all 64 tiles holding `buffers` (name, absolute address, size, first step, last step)."""
    return {"base": BASE, "groups": [{"tiles": [[0, TARGET.tiles - 1]],
                                      "buffers": [[n, a - BASE, s, f, l] for n, a, s, f, l in buffers]}]}


HELD = Held(_placement(("a", 0x50000, 256, 0, 3), ("b", 0x50100, 256, 2, 5), ("exchange tables", 0x50200, 64, 0, 9),
                       ("descriptors AddF16", 0x50300, 64, 0, 9), ("w", R0 + 0x1000, 1024, 0, 9)), TARGET)


def test_the_holding_buffer_is_live_and_covers_the_range():
    t = np.zeros(6, np.int64)
    lo = np.array([0x50000, 0x50080, 0x500F0, 0x50100, 0x50200, 0x50300])
    hi = np.array([0x50100, 0x50100, 0x50110, 0x50200, 0x50210, 0x50304])
    # a whole; a's tail; across a and b (both live at 2, yet no one buffer holds it); b; tables; descriptors
    assert HELD.holds(2, t, lo, hi).tolist() == [True, True, False, True, False, False]
    assert HELD.holds(4, t, lo, hi).tolist() == [False, False, False, True, False, False]  # a is dead at 4
    assert not HELD.holds(2, np.array([64]), np.array([0x50000]), np.array([0x50010]))[0]  # no such tile
    assert not HELD.holds(2, np.array([0]), np.array([0x50010]), np.array([0x50010]))[0]  # an empty range


def _vertices(codelet, fields, addr, stride=0, rows=1, row_bytes=16):
    V = len(addr)
    a = np.full((V, fields), -1, np.int64)
    a[:, 0] = addr
    full = lambda x: np.full((V, fields), x, np.int64)
    return Vertices(codelet, np.zeros(V, np.int64), a, full(rows), full(row_bytes), full(row_bytes), full(stride),
                    np.zeros((V, 2), np.int64))


def test_a_field_is_checked_at_every_iteration():
    cs = ComputeSet(2, Section.BODY, "encoder/add", "add", (_vertices("AddF16", 3, [0x50000], stride=0x80),))
    assert _fields(HELD, cs, {}, range(4), R0, TARGET.tiles) == 1  # a, a, then b twice: each held at step 2
    with pytest.raises(AccessError, match=r"tile 0 step 2 \(encoder/add add\) AddF16 vertex 0 iteration 4: "
                                          r"field a \[0x50200, \+16\) is not inside a data buffer live at step 2"):
        _fields(HELD, cs, {}, range(5), R0, TARGET.tiles)  # the fifth lands in the exchange tables
    cs = ComputeSet(2, Section.BODY, "encoder/add", "add", (_vertices("AddF16", 3, [0x500F8]),))
    with pytest.raises(AccessError, match=r"field a \[0x500f8, \+16\) is not inside"):
        _fields(HELD, cs, {}, range(1), R0, TARGET.tiles)  # across a and b


def test_an_amp_operand_in_region_0_is_refused():
    cs = ComputeSet(2, Section.PROLOGUE, "embed", "gemm", (_vertices("AmpGemmF16", 4, [0x50000]),))
    with pytest.raises(AccessError, match="field x .* is not in interleaved memory"):
        _fields(HELD, cs, {}, range(1), R0, TARGET.tiles)
    cs = ComputeSet(2, Section.PROLOGUE, "embed", "gemm", (_vertices("AmpGemmF16", 4, [R0 + 0x1000]),))
    assert _fields(HELD, cs, {}, range(1), R0, TARGET.tiles) == 1


def test_the_carry_reads_at_the_last_body_step_and_writes_at_the_first():
    v = _vertices("Copy", 2, [0x50100])
    v.addr[:, 1] = 0x50000
    carry = ComputeSet(0, Section.BODY, "repeat", "carry", (v,))
    assert _fields(HELD, carry, {"src": 5, "dst": 0}, range(1), R0, TARGET.tiles) == 1
    with pytest.raises(AccessError, match="field src .* live at step 1"):
        _fields(HELD, carry, {"src": 1, "dst": 0}, range(1), R0, TARGET.tiles)


def _exchange(nbytes, src_addr=0x50000, dst=1, dst_addr=0x50000, stride=0):
    one = lambda x: np.array([x], np.int64)
    return Exchange(1, Section.BODY, "encoder/add", "operands", one(0), one(src_addr), one(nbytes), one(stride),
                    np.array([[dst, -1]]), np.array([[dst_addr, 0]]))


def test_exchange_runs():
    assert _runs(HELD, _exchange(64), range(1), TARGET) == 1
    with pytest.raises(AccessError, match="6 B is not a whole number of words"):
        _runs(HELD, _exchange(6), range(1), TARGET)
    cap = TARGET.encoding.transfer_max_words * 4
    with pytest.raises(AccessError, match=f"from 4 to the transfer limit of {cap} B"):
        _runs(HELD, _exchange(cap + 4), range(1), TARGET)
    with pytest.raises(AccessError, match=r"run 0 iteration 1: source \[0x50100"):
        _runs(HELD, _exchange(64, stride=0x100), range(2), TARGET)  # b is not live at step 1
    with pytest.raises(AccessError, match=r"tile 1 .* destination \[0x50300"):
        _runs(HELD, _exchange(64, dst_addr=0x50300), range(1), TARGET)  # descriptors
    with pytest.raises(AccessError, match="a tile out of range"):
        _runs(HELD, _exchange(64, dst=64), range(1), TARGET)


class _Prog:
    def __init__(self, *bindings):
        self.bindings = bindings


def _binding(e0, n, role="param", count=1, stride=0):
    N = len(e0)
    col = lambda x: np.full(N, x, np.int64)
    slabs = Slabs(np.array(e0), np.array(n), col(1), col(0), col(64), np.zeros((N, 1), np.int64),
                  (0x50000 + 16 * np.arange(N)).reshape(N, 1), np.full((N, 1), stride))
    return Binding("layers.w", role, "f16", 0, (8,), count, slabs)


def test_binding_coverage_and_copies():
    assert _bindings(HELD, _Prog(_binding([0, 4], [4, 4])), 9) == 8
    with pytest.raises(AccessError, match="element 3 is bound 2 times"):
        _bindings(HELD, _Prog(_binding([0, 3], [4, 4])), 9)
    with pytest.raises(AccessError, match="element 7 is bound 0 times"):
        _bindings(HELD, _Prog(_binding([0, 3], [3, 4])), 9)
    assert _bindings(HELD, _Prog(_binding([0, 0], [8, 8], role="const")), 9) == 8  # a table beside each reader
    with pytest.raises(AccessError, match=r"copy 1: slab \[0x50100"):
        _bindings(HELD, _Prog(_binding([0, 4], [4, 4], count=3, stride=0x100)), 9)  # copy 1 in b, dead at step 0
