"""Layouts: exact per-tile bytes on hand-built cases, agreement with the checker's independent count,
and transfers that rebuild every destination element exactly once from the right source element."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.check.tiles import tile_bytes as check_tile_bytes
from ipuplan.layout import Layout, MemClass, balanced, transfers
from ipuplan.layout.geometry import ColumnWindow
from ipuplan.plan import layout_record


def test_balanced_split():
    assert balanced(10, 4).tolist() == [3, 3, 2, 2]
    assert balanced(3, 3).tolist() == [1, 1, 1]


def test_row_shard_bytes_exact():
    lay = Layout(10, 3, 2, pr=4)  # rows 3,3,2,2 of 3 f16 -> 18,18,12,12 B -> rounded to 8: 24,24,16,16
    assert lay.tile_bytes(6).tolist() == [24, 24, 16, 16, 0, 0]


def test_grid_with_offset_wraps():
    lay = Layout(4, 4, 1, pr=2, pc=2, start=3)
    assert lay.tile_bytes(4).tolist() == [8, 8, 8, 8]  # tiles 3, 0, 1, 2
    assert lay.block_tiles(4)[0].tolist() == [[3, 0], [1, 2]]


def test_row_groups_keep_images_apart():
    lay = Layout(6, 2, 1, pr=4, row_groups=2)  # two images of 3 rows, each split 2+1
    assert lay.row_sizes().tolist() == [2, 1, 2, 1]


def test_matmul_operand_replication_strides():
    # x of a (pm=2, pn=3, pk=1) grid: row block i on tiles i*3 + j for every replica j
    x = Layout(4, 8, 1, pr=2, pc=1, replicas=3, row_stride=3, rep_stride=1)
    assert sorted(x.block_tiles(6).ravel().tolist()) == list(range(6))
    assert x.tile_bytes(6).tolist() == [16] * 6


def test_flat_home_spreads_bytes():
    lay = Layout(100, 10, 1, pr=7, flat=True, start=5)
    b = lay.tile_bytes(7)
    assert b.sum() >= 1000 and b.max() - b.min() <= 8


layouts = st.builds(
    lambda rows, cols, elem, pr, pc, reps, start, rs, g, flat: Layout(
        rows * g, cols, elem, pr=1 if flat else min(pr, rows) * g, pc=1 if flat else min(pc, cols), replicas=reps,
        start=start, row_stride=rs, row_groups=1 if flat else g, flat=flat, mem=MemClass.STANDARD),
    st.integers(1, 9), st.integers(1, 9), st.sampled_from([1, 2, 4]), st.integers(1, 5), st.integers(1, 4),
    st.integers(1, 3), st.integers(0, 11), st.sampled_from([0, 0, 7]), st.sampled_from([1, 2]), st.booleans())


@settings(max_examples=150, deadline=None)
@given(layouts, st.integers(3, 13))
def test_bytes_agree_with_independent_count(lay, tiles):
    if lay.flat:
        lay = Layout(lay.rows, lay.cols, lay.elem, pr=min(tiles, 5), flat=True, start=lay.start)
    assert np.array_equal(lay.tile_bytes(tiles), check_tile_bytes(layout_record(lay), tiles))


def _holdings(lay: Layout, tiles: int) -> list[set]:
    """Which (replica, row, col) elements each tile holds under `lay`."""
    held = [set() for _ in range(tiles)]
    rb = np.concatenate([[0], np.cumsum(lay.row_sizes())])
    cb = np.concatenate([[0], np.cumsum(lay.col_sizes())])
    bt = lay.block_tiles(tiles)
    for r in range(lay.replicas):
        for i in range(lay.pr):
            for j in range(lay.pc):
                t = bt[r, i, j]
                held[t] |= {(r, a, b) for a in range(rb[i], rb[i + 1]) for b in range(cb[j], cb[j + 1])}
    return held


grids = st.builds(
    lambda pr, pc, reps, start, rs, g: (pr, pc, reps, start, rs, g),
    st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(0, 9), st.sampled_from([0, 5]),
    st.sampled_from([1, 2]))


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 4), st.integers(2, 7), grids, grids, st.integers(4, 12), st.booleans())
def test_transfers_rebuild_destination_exactly_once(rows_per_group, cols, a, b, tiles, windowed):
    g = a[5]
    rows = rows_per_group * g
    src_cols = cols + 3 if windowed else cols
    mk = lambda p, c: Layout(rows, c, 2, pr=min(p[0], rows_per_group) * g, pc=min(p[1], c), replicas=p[2],
                             start=p[3], row_stride=p[4], row_groups=g)
    src, dst = mk(a, src_cols), mk(b, cols)
    window = (2, 2 + cols) if windowed else (0, cols)
    logical = np.arange(rows * src_cols).reshape(rows, src_cols)
    src_held = [{(a_, b_) for _, a_, b_ in h} for h in _holdings(src, tiles)]
    tr = transfers(ColumnWindow(src, *window) if windowed else src, dst, tiles)
    mv = tr.moves
    written = {}
    for k in range(len(mv["r0"])):
        s = int(mv["src"][k])
        for rep, d in enumerate(mv["dst"][k]):
            for r in range(mv["r0"][k], mv["r0"][k] + mv["nr"][k]):
                for c in range(mv["c0"][k], mv["c0"][k] + mv["nc"][k]):
                    assert (r, c + window[0]) in src_held[s], "read from a tile that does not hold the element"
                    key = (int(d), rep, r, c)
                    assert key not in written, "destination element written twice"
                    written[key] = logical[r, c + window[0]]
    want = {(t, rep, r, c) for t, held in enumerate(_holdings(dst, tiles)) for (rep, r, c) in held}
    assert set(written) == want
    assert all(v == logical[r, c + window[0]] for (t, rep, r, c), v in written.items())
    # received bytes count exactly the elements that crossed tiles
    moved = np.zeros(tiles, np.int64)
    for k in range(len(mv["r0"])):
        for d in mv["dst"][k]:
            if d != mv["src"][k]:
                moved[d] += mv["nr"][k] * mv["nc"][k] * 2
    assert np.array_equal(moved, tr.recv)


@pytest.mark.parametrize("flat_src", [True, False])
def test_flat_home_to_grid_transfer(flat_src):
    home = Layout(6, 4, 1, pr=5, flat=True, start=2)
    grid = Layout(6, 4, 1, pr=3, pc=2, replicas=2, rep_stride=1)
    src, dst = (home, grid) if flat_src else (grid, home)
    tr = transfers(src, dst, 8)
    # every destination byte arrives once: received + locally held equals what the destination holds
    mv = tr.moves
    per_dst = np.zeros(8, np.int64)
    for k in range(len(mv["r0"])):
        for d in mv["dst"][k]:
            per_dst[d] += mv["nr"][k]
    if not dst.flat:
        raw = np.zeros(8, np.int64)
        for held_t, t in zip(_holdings(dst, 8), range(8)):
            raw[t] = len(held_t)
        assert np.array_equal(per_dst, raw)
    else:
        assert per_dst.sum() == 24 and np.array_equal(per_dst > 0, dst.tile_bytes(8) > 0)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 4), st.integers(2, 6), grids, st.integers(2, 3), st.integers(6, 14))
def test_relay_gather_then_multicast_rebuilds_destination(rows, cols, a, reps, tiles):
    """Relays: one packed copy gathered onto relay tiles, then multicast to every replica; each
    destination element arrives exactly once, from a tile that holds it at that moment."""
    from ipuplan.solver.exchange.encoding import relay_layout
    src = Layout(rows, cols, 1, pr=min(a[0], rows), pc=min(a[1], cols), start=a[3])
    dst = Layout(rows, cols, 1, pr=min(2, rows), pc=1, replicas=reps, start=1)
    relay = relay_layout(dst, tiles)
    logical = np.arange(rows * cols).reshape(rows, cols)
    mem = [dict() for _ in range(tiles)]  # tile -> {(rep, r, c): value}, what each tile holds
    for t, held in enumerate(_holdings(src, tiles)):
        for _, r, c in held:
            mem[t][("src", r, c)] = logical[r, c]

    def apply(tr, tag_from, tag_to):
        mv = tr.moves
        for k in range(len(mv["r0"])):
            s = int(mv["src"][k])
            for rep, d in enumerate(mv["dst"][k]):
                for r in range(mv["r0"][k], mv["r0"][k] + mv["nr"][k]):
                    for c in range(mv["c0"][k], mv["c0"][k] + mv["nc"][k]):
                        key = (tag_to, rep, r, c)
                        assert key not in mem[d], "written twice"
                        mem[d][key] = mem[s][(tag_from, r, c) if tag_from == "src" else (tag_from, 0, r, c)]

    apply(transfers(src, relay, tiles), "src", "relay")
    apply(transfers(relay, dst, tiles), "relay", "dst")
    for t, held in enumerate(_holdings(dst, tiles)):
        for rep, r, c in held:
            assert mem[t][("dst", rep, r, c)] == logical[r, c]
    assert sum(1 for m in mem for k in m if k[0] == "dst") == rows * cols * reps
