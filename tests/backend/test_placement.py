"""The placement engine: hand-built cases per rule, and a property test against brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.backend.placement import Buffer, Elements, Instance, place, violations
from ipuplan.backend.placement.csvio import read_csv, write_csv
from ipuplan.errors import InputError


def _placed(inst: Instance, **kw):
    res = place(inst, **kw)
    if res.placed:
        assert violations(inst, res.offsets) == []
    return res


def test_stacks_buffers_live_together_and_reuses_dead_space():
    inst = Instance(8, (Buffer("a", 4, 0, 1), Buffer("b", 4, 1, 2), Buffer("c", 4, 2, 3)))
    res = _placed(inst)
    assert res.placed and res.offsets[0] != res.offsets[1] and res.offsets[1] != res.offsets[2]
    assert not place(Instance(7, inst.buffers)).placed


def test_alignment_window_fixed_and_barrier():
    bufs = (Buffer("fixed", 4, 0, 3, fixed=0), Buffer("aligned", 4, 0, 3, align=8),
            Buffer("windowed", 4, 0, 3, lo=12, hi=16))
    res = _placed(Instance(16, bufs))
    assert res.offsets == [0, 8, 12]
    # a barrier at 6: a 4-byte buffer may not straddle it, so [4, 8) is not available
    res = _placed(Instance(12, (Buffer("a", 4, 0, 0, fixed=0), Buffer("b", 4, 0, 0)), barriers=(6,)))
    assert res.offsets[1] == 6
    assert not place(Instance(9, (Buffer("a", 4, 0, 0, fixed=0), Buffer("b", 4, 0, 0)), barriers=(6,))).placed


def test_conflicting_buffers_take_different_elements():
    bufs = (Buffer("send", 2, 0, 0), Buffer("recv", 2, 0, 0))
    free = _placed(Instance(8, bufs, elements=(Elements(0, 8, 4),)))
    assert free.placed and sorted(free.offsets) == [0, 2]
    apart = _placed(Instance(8, bufs, conflicts=frozenset({(0, 1)}), elements=(Elements(0, 8, 4),)))
    assert apart.placed and sorted(apart.offsets) == [0, 4]
    assert not place(Instance(5, bufs, conflicts=frozenset({(0, 1)}), elements=(Elements(0, 8, 4),))).placed


def test_node_budget_gives_unknown_not_a_proof():
    rng = __import__("random").Random(5)
    bufs = tuple(Buffer(str(i), rng.randint(1, 9), t, t + rng.randint(0, 6), 1) for i, t in
                 enumerate(rng.randint(0, 10) for _ in range(40)))
    res = place(Instance(60, bufs), node_budget=3, heuristic=False, cpsat_seconds=0)
    assert not res.placed and (res.proven or "budget" in res.reason)


def _brute(inst: Instance) -> bool:
    ranges = []
    for i, b in enumerate(inst.buffers):
        hi = inst.hi(i)
        ranges.append([o for o in range(b.lo, hi - b.size + 1) if o % b.align == 0])
    return any(not violations(inst, list(offs)) for offs in itertools.product(*ranges))


@st.composite
def instances(draw):
    cap = draw(st.integers(4, 12))
    n = draw(st.integers(1, 5))
    bufs = []
    for i in range(n):
        size = draw(st.integers(1, 5))
        first = draw(st.integers(0, 3))
        last = first + draw(st.integers(0, 2))
        align = draw(st.sampled_from([1, 1, 2, 4]))
        lo = draw(st.sampled_from([0, 0, 0, 2, 4]))
        hi = draw(st.sampled_from([None, None, cap - 2, cap - 1]))
        fixed = draw(st.sampled_from([None] * 6 + [0, 2, 4]))
        bufs.append(Buffer(f"b{i}", size, first, last, align, lo, hi, fixed))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    conflicts = frozenset(draw(st.lists(st.sampled_from(pairs), max_size=3))) if pairs else frozenset()
    barriers = tuple(draw(st.lists(st.integers(1, cap - 1), max_size=1)))
    elements = (Elements(0, cap, draw(st.sampled_from([2, 4]))),)
    return Instance(cap, tuple(bufs), conflicts, barriers, elements)


@settings(max_examples=400, deadline=None)
@given(instances(), st.booleans())
def test_exact_search_agrees_with_brute_force(inst, heuristic):
    res = place(inst, heuristic=heuristic)
    assert res.proven
    assert res.placed == _brute(inst)
    if res.placed:
        assert violations(inst, res.offsets) == []


@settings(max_examples=150, deadline=None)
@given(instances(), st.booleans())
def test_cpsat_engine_agrees_with_brute_force(inst, bottom_left):
    from ipuplan.backend.placement.cpsat import place_cpsat
    res = place_cpsat(inst, bottom_left=bottom_left)
    assert res.proven
    assert res.placed == _brute(inst)
    if res.placed:
        assert violations(inst, res.offsets) == []


def test_csv_round_trip_and_bad_lines(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("id,lower,upper,size,alignment\na,0,2,4,4\nb,1,3,4,1\n")
    inst = read_csv(p, 16)
    res = _placed(inst)
    write_csv(tmp_path / "o.csv", inst, res.offsets)
    assert (tmp_path / "o.csv").read_text().splitlines()[0] == "id,lower,upper,size,offset"
    for text, where in [("id,lower,upper\n", ":1"), ("id,lower,upper,size\na,0,2,x\n", ":2"),
                        ("id,lower,upper,size\na,2,2,4\n", ":2"), ("id,lower,upper,size\na,0,1,4\na,0,1,4\n", ":3"),
                        ("id,lower,upper,size\na,0,1,99\n", ":2")]:
        p.write_text(text)
        with pytest.raises(InputError, match=where):
            read_csv(p, 16)


def test_place_command_exit_codes(cli, tmp_path):
    """0 placed (with the offset column), 1 proven impossible, 3 node budget ran out, 2 malformed CSV."""
    rows = [("0", 2, 5, 2), ("1", 4, 7, 5), ("2", 1, 3, 2), ("3", 0, 2, 4), ("4", 3, 4, 5), ("5", 2, 6, 3)]
    p = tmp_path / "b.csv"
    p.write_text("id,lower,upper,size\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows))
    r = cli("place", p, "--capacity", "11", "-o", tmp_path / "o.csv")
    assert r.code == 0 and "PLACED" in r.out and "validated" in r.out
    placed = read_csv(tmp_path / "o.csv", 11)  # the offset column is accepted on input
    assert len(placed.buffers) == 6
    offs = [int(line.split(",")[4]) for line in (tmp_path / "o.csv").read_text().splitlines()[1:]]
    assert violations(read_csv(p, 11), offs) == []
    assert cli("place", p, "--capacity", "11", "--nodes", "1", "--cpsat-seconds", "0").code == 3
    r = cli("place", p, "--capacity", "11", "--nodes", "1")  # CP-SAT decides what the node budget left open
    assert r.code == 0 and "CP-SAT" in r.out
    r = cli("place", p, "--capacity", "9")
    assert r.code == 1 and "IMPOSSIBLE" in r.out
    p.write_text("id,lower,upper,size\n0,0,1,4\n1,0,1,four\n")
    r = cli("place", p, "--capacity", "11")
    assert r.code == 2 and ":3" in r.err and "Traceback" not in r.err
