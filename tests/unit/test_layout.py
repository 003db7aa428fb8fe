"""Layouts: exact per-tile bytes on hand-built cases, agreement with the checker's independent geometry and
exchange counts, and transfers whose cells, replayed byte by byte through per-tile memories at their
offsets and pitches, rebuild every destination block exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.catalogue.records import layout_record
from ipuplan.catalogue.transport import home_layout, relay_layout
from ipuplan.checker import exchange as cx
from ipuplan.codelets.vector import copy_list_words
from ipuplan.checker.geometry import tile_bytes as check_tile_bytes
from ipuplan.layout import ColumnWindow, Encoding, Layout, MemClass, balanced, transfers
from ipuplan.layout.transfer import stream_transfer
from ipuplan.target import load_target
from conftest import TARGET

IL = MemClass.INTERLEAVED


def test_balanced_split():
    assert balanced(10, 4).tolist() == [3, 3, 2, 2]
    assert balanced(3, 3).tolist() == [1, 1, 1]


def test_row_shard_bytes_exact():
    lay = Layout(10, 3, 2, pr=4)  # rows 3,3,2,2 at a pitch of 6 B -> 8 B: 24,24,16,16
    assert lay.tile_bytes(6).tolist() == [24, 24, 16, 16, 0, 0]


def test_columns_split_at_word_grains_and_pitch_rounds_to_a_word():
    lay = Layout(2, 10, 2, pc=3)  # 5 words of 2 F16 over 3 blocks: 2, 2, 1 words -> 4, 4, 2 columns
    assert lay.col_sizes().tolist() == [4, 4, 2]
    assert Layout(2, 5, 1, pc=2).col_sizes().tolist() == [4, 1]  # FP8: 4 per word, the last block the rest
    assert Layout(1, 3, 2, col_align=2).pitches().tolist() == [8]  # 4 padded columns of F16


def test_interleaved_blocks_align_to_32_bytes():
    assert Layout(1, 20, 1, mem=IL).tile_bytes(1).tolist() == [32]
    assert Layout(1, 20, 1).tile_bytes(1).tolist() == [24]


def test_grid_with_offset_wraps():
    lay = Layout(4, 4, 2, pr=2, pc=2, start=3)
    assert lay.tile_bytes(4).tolist() == [8, 8, 8, 8]  # tiles 3, 0, 1, 2
    assert lay.block_tiles(4)[0].tolist() == [[3, 0], [1, 2]]


def test_row_groups_keep_images_apart_and_group_stride_places_them():
    lay = Layout(6, 2, 1, pr=4, row_groups=2)  # two images of 3 rows, each split 2+1
    assert lay.row_sizes().tolist() == [2, 1, 2, 1]
    lay = Layout(6, 2, 1, pr=4, row_groups=2, row_stride=1, group_stride=10)
    assert lay.block_tiles(32)[0, :, 0].tolist() == [0, 1, 10, 11]


def test_defaults_are_resolved_so_equal_geometry_is_equal():
    assert Layout(4, 4, 2, pr=2, pc=2) == Layout(4, 4, 2, pr=2, pc=2, row_stride=2, rep_stride=4, group_stride=4)


def test_block_offsets_stack_blocks_of_one_tile():
    lay = Layout(4, 8, 1, pr=2, replicas=2, rep_stride=4)  # replica 1 wraps onto tiles 0 and 1 (mod 4)
    off = lay.block_offsets(4)
    t = lay.block_tiles(4)
    assert t[:, :, 0].tolist() == [[0, 1], [0, 1]]
    assert off[:, :, 0].tolist() == [[0, 0], [16, 16]]


def test_matmul_operand_replication_strides():
    # x of a (pm=2, pn=3, pk=1) grid: row block i on tiles i*3 + j for every replica j
    x = Layout(4, 8, 1, pr=2, pc=1, replicas=3, row_stride=3, rep_stride=1)
    assert sorted(x.block_tiles(6).ravel().tolist()) == list(range(6))
    assert x.tile_bytes(6).tolist() == [16] * 6


layouts = st.builds(
    lambda rows, cols, elem, pr, pc, reps, start, rs, g, mem, ra, ca: Layout(
        rows * g, cols * 4, elem, pr=min(pr, rows) * g, pc=min(pc, cols), replicas=reps, start=start, row_stride=rs,
        row_groups=g, mem=mem, row_align=ra, col_align=ca),
    st.integers(1, 9), st.integers(1, 9), st.sampled_from([1, 2, 4]), st.integers(1, 5), st.integers(1, 4),
    st.integers(1, 3), st.integers(0, 11), st.sampled_from([0, 0, 7]), st.sampled_from([1, 2]),
    st.sampled_from([MemClass.STANDARD, IL]), st.sampled_from([1, 16]), st.sampled_from([1, 16, 32]))


@settings(max_examples=150, deadline=None)
@given(layouts, st.integers(3, 13))
def test_bytes_agree_with_independent_count(lay, tiles):
    assert np.array_equal(lay.tile_bytes(tiles), check_tile_bytes(layout_record(lay), tiles))


# --- byte-level replay of transfers ------------------------------------------------------------------

def _place(lay: Layout, tiles: int, logical: np.ndarray, mem: list[bytearray], base: dict, tag: str) -> None:
    """Write `logical` (int8 items, elem bytes each) into the blocks of every replica of `lay`."""
    alloc = lay.tile_bytes(tiles)
    for t in range(tiles):
        base[(tag, t)] = len(mem[t])
        mem[t].extend(b"\xee" * int(alloc[t]))
    rb, cb = lay.row_bounds(), lay.col_bounds()
    tl, off, pitch = lay.block_tiles(tiles), lay.block_offsets(tiles), lay.pitches()
    for r in range(lay.replicas):
        for i in range(lay.pr):
            for j in range(lay.pc):
                t = int(tl[r, i, j])
                for row in range(rb[i], rb[i + 1]):
                    a = base[(tag, t)] + int(off[r, i, j]) + (row - rb[i]) * int(pitch[j])
                    data = logical[row, cb[j]:cb[j + 1]].astype(np.uint8).repeat(lay.elem).tobytes()
                    mem[t][a:a + len(data)] = data


def _replay(tr, mem, base, src_tag, dst_tag) -> None:
    c = tr.cells
    for k in range(len(c["src"])):
        s = int(c["src"][k])
        for rep in range(c["dst"].shape[1]):
            d = int(c["dst"][k, rep])
            for row in range(int(c["nr"][k])):
                a = base[(src_tag, s)] + int(c["src_off"][k]) + row * int(c["src_pitch"][k])
                b = base[(dst_tag, d)] + int(c["dst_off"][k, rep]) + row * int(c["dst_pitch"][k])
                n = int(c["row_bytes"][k])
                mem[d][b:b + n] = mem[s][a:a + n]


def _expected(lay: Layout, tiles: int, logical: np.ndarray) -> list[bytearray]:
    mem = [bytearray() for _ in range(tiles)]
    _place(lay, tiles, logical, mem, {}, "x")
    return mem


grids = st.builds(lambda pr, pc, reps, start, rs, g: (pr, pc, reps, start, rs, g),
                  st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(0, 9), st.sampled_from([0, 5]),
                  st.sampled_from([1, 2]))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), grids, grids, st.integers(4, 12), st.booleans(),
       st.sampled_from([1, 2]), st.sampled_from([1, 16]))
def test_transfer_cells_rebuild_the_destination_bytes(rows_per_group, words, a, b, tiles, windowed, elem, ca):
    g = a[5]
    rows, cols = rows_per_group * g, words * 4 // elem
    src_cols = cols + 4 if windowed else cols
    mk = lambda p, c, al: Layout(rows, c, elem, pr=min(p[0], rows_per_group) * g, pc=min(p[1], c // (4 // elem)),
                                 replicas=p[2], start=p[3], row_stride=p[4], row_groups=g, col_align=al)
    src, dst = mk(a, src_cols, 1), mk(b, cols, ca)
    window = (4 // elem * 1, 4 // elem * 1 + cols) if windowed else (0, cols)
    logical = (np.arange(rows * src_cols).reshape(rows, src_cols) % 97) + 1
    mem = [bytearray() for _ in range(tiles)]
    base: dict = {}
    _place(src, tiles, logical, mem, base, "src")
    for t in range(tiles):
        base[("dst", t)] = len(mem[t])
        mem[t].extend(b"\xee" * int(dst.tile_bytes(tiles)[t]))
    tr = transfers(ColumnWindow(src, *window) if windowed else src, dst, tiles)
    _replay(tr, mem, base, "src", "dst")
    want = _expected(dst, tiles, logical[:, window[0]:window[1]])
    for t in range(tiles):
        got = mem[t][base[("dst", t)]:]
        assert bytes(got) == bytes(want[t]), f"tile {t}"
    assert tr.subword_runs == 0


def test_rows_into_moves_a_segment():
    src = Layout(2, 8, 2, pr=2)
    dst = Layout(6, 8, 2, pr=3, pc=2)
    logical = np.arange(6 * 8).reshape(6, 8) % 50 + 1
    mem = [bytearray() for _ in range(4)]
    base: dict = {}
    _place(src, 4, logical[3:5], mem, base, "src")
    want = _expected(dst, 4, logical)
    for t in range(4):
        base[("dst", t)] = len(mem[t])
        mem[t].extend(b"\xee" * int(dst.tile_bytes(4)[t]))
    _replay(transfers(src, dst, 4, rows=(3, 0, 2)), mem, base, "src", "dst")
    rb = dst.row_bounds()
    # rows 3, 4 of the destination are written; compare those rows' bytes only
    for t in range(4):
        got, exp = mem[t][base[("dst", t)]:], want[t]
        assert len(got) == len(exp)
    tl, off, pitch = dst.block_tiles(4), dst.block_offsets(4), dst.pitches()
    for i in range(dst.pr):
        for j in range(dst.pc):
            for row in range(max(rb[i], 3), min(rb[i + 1], 5)):
                t, a = int(tl[0, i, j]), int(off[0, i, j]) + (row - rb[i]) * int(pitch[j])
                n = int(dst.col_sizes()[j]) * 2
                assert mem[t][base[("dst", t)] + a:base[("dst", t)] + a + n] == want[t][a:a + n]


@settings(max_examples=60, deadline=None)
@given(grids, st.integers(6, 40), st.sampled_from([1, 16, 32]))
def test_home_stream_rebuilds_every_replica(a, tiles, ra):
    dst = Layout(8, 16, 1, pr=min(a[0], 8), pc=min(a[1], 4), replicas=a[2], start=a[3], row_align=ra, mem=IL)
    home = home_layout(tiles, "w", dst)
    logical = np.arange(8 * 16).reshape(8, 16) % 89 + 1
    # the host writes the home: the block stream (replica 0's blocks, as stored) split over the tiles
    stored = _expected(dst, tiles, logical)
    stream = bytearray()
    tl, off, bb = dst.block_tiles(tiles), dst.block_offsets(tiles), dst.block_bytes()
    for i in range(dst.pr):
        for j in range(dst.pc):
            t = int(tl[0, i, j])
            stream += stored[t][int(off[0, i, j]):int(off[0, i, j]) + int(bb[i, j])]
    mem = [bytearray() for _ in range(tiles)]
    base: dict = {}
    ht, hoff, hb = home.block_tiles(tiles)[0, :, 0], home.block_offsets(tiles)[0, :, 0], home.block_bytes()[:, 0]
    for t in range(tiles):
        base[("home", t)] = 0
        mem[t].extend(b"\xee" * int(home.tile_bytes(tiles)[t]))
    pos = 0
    for k in range(home.pr):
        n = min(int(hb[k]), len(stream) - pos)
        t = int(ht[k])
        mem[t][int(hoff[k]):int(hoff[k]) + max(0, n)] = stream[pos:pos + max(0, n)]
        pos += max(0, n)
    for t in range(tiles):
        base[("dst", t)] = len(mem[t])
        mem[t].extend(b"\xee" * int(dst.tile_bytes(tiles)[t]))
    tr = stream_transfer(home, dst, tiles)
    _replay(tr, mem, base, "home", "dst")
    for t in range(tiles):
        assert bytes(mem[t][base[("dst", t)]:]).replace(b"\xee", b"\x00") == bytes(stored[t]).replace(b"\xee", b"\x00")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(2, 6), grids, st.integers(2, 3), st.integers(6, 14))
def test_relay_gather_then_multicast_rebuilds_destination(rows, words, a, reps, tiles):
    cols = words * 4
    src = Layout(rows, cols, 1, pr=min(a[0], rows), pc=min(a[1], words), start=a[3])
    dst = Layout(rows, cols, 1, pr=min(2, rows), pc=1, replicas=reps, start=1, mem=IL, col_align=16)
    relay = relay_layout(dst, tiles)
    logical = np.arange(rows * cols).reshape(rows, cols) % 91 + 1
    mem = [bytearray() for _ in range(tiles)]
    base: dict = {}
    _place(src, tiles, logical, mem, base, "src")
    for tag, lay in (("relay", relay), ("dst", dst)):
        for t in range(tiles):
            base[(tag, t)] = len(mem[t])
            mem[t].extend(b"\xee" * int(lay.tile_bytes(tiles)[t]))
    _replay(transfers(src, relay, tiles), mem, base, "src", "relay")
    _replay(transfers(relay, dst, tiles), mem, base, "relay", "dst")
    want = _expected(dst, tiles, logical)
    for t in range(tiles):
        assert bytes(mem[t][base[("dst", t)]:]) == bytes(want[t])


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), grids, grids, st.integers(4, 40), st.booleans(), st.sampled_from([1, 2]))
def test_exchange_counts_agree_with_the_checker(rows_per_group, words, a, b, tiles, windowed, elem):
    target = load_target(TARGET)
    g = a[5]
    rows, cols = rows_per_group * g, words * 4 // elem * 3
    src_cols = cols + 8 if windowed else cols
    mk = lambda p, c, al: Layout(rows, c, elem, pr=min(p[0], rows_per_group) * g, pc=min(p[1], c // (4 // elem)),
                                 replicas=p[2], start=p[3], row_stride=p[4], row_groups=g, col_align=al)
    src, dst = mk(a, src_cols, 1), mk(b, cols, 16)
    window = (8, 8 + cols) if windowed else None
    tr = transfers(ColumnWindow(src, *window) if windowed else src, dst, tiles, enc=target.encoding)
    mine = tr.table_words(target.encoding, copy_list_words(target)) * target.instruction_bytes
    theirs = cx.grid_transfer(layout_record(src), window, layout_record(dst), tiles, target)
    assert np.array_equal(mine, theirs.table_bytes(target, False))
    assert np.array_equal(tr.send_pieces + tr.recv_pieces, theirs.send_pieces + theirs.recv_pieces)
    home = home_layout(tiles, "w", dst)
    st_ = stream_transfer(home, dst, tiles, target.encoding)
    theirs = cx.stream_transfer(layout_record(home), layout_record(dst), tiles, target)
    assert np.array_equal(st_.table_words(target.encoding, copy_list_words(target), True) * 4, theirs.table_bytes(target, True))


def test_encoding_counts_instruction_words():
    e = Encoding()
    # 64 words: one send + one delay; 65: a sendoff more; 4,148 words: one piece; 4,149: two pieces
    assert e.send_words(np.array([64, 65, 4148, 4149])).tolist() == [2, 3, 3, 5]
    assert e.pieces(np.array([1, 4148, 4149, 8296, 8297])).tolist() == [1, 1, 2, 2, 3]


def test_flat_layouts_move_only_as_homes():
    with pytest.raises(ValueError):
        transfers(Layout(1, 64, 1, pr=4, flat=True), Layout(1, 64, 1), 4)


# --- whole stored rows, padding included (the shaped catalogue) --------------------------------------------

def _replay_runs(tr, mem, base, src_tag, dst_tag) -> None:
    """Move every run as the lowering does: `runs` runs of `run_bytes` from src_off + k * src_pitch to
    dst_off + k * dst_pitch (a whole-row run moves its rows' padding with them)."""
    c = tr.cells
    for i in range(len(c["src"])):
        s = int(c["src"][i])
        n = int(c["run_bytes"][i])
        for k in range(int(c["runs"][i])):
            a = base[(src_tag, s)] + int(c["src_off"][i]) + k * int(c["src_pitch"][i])
            for rep in range(c["dst"].shape[1]):
                d = int(c["dst"][i, rep])
                b = base[(dst_tag, d)] + int(c["dst_off"][i, rep]) + k * int(c["dst_pitch"][i])
                mem[d][b:b + n] = mem[s][a:a + n]


def _data_bytes(lay: Layout, tiles: int, mem, base, tag) -> dict:
    """Every stored data byte of every block (padding left out), by (replica, block, row)."""
    out = {}
    rb, cb = lay.row_bounds(), lay.col_bounds()
    tl, off, pitch = lay.block_tiles(tiles), lay.block_offsets(tiles), lay.pitches()
    for r in range(lay.replicas):
        for i in range(lay.pr):
            for j in range(lay.pc):
                t = int(tl[r, i, j])
                for row in range(rb[i + 1] - rb[i]):
                    a = base[(tag, t)] + int(off[r, i, j]) + row * int(pitch[j])
                    out[(r, i, j, row)] = bytes(mem[t][a:a + int(cb[j + 1] - cb[j]) * lay.elem])
    return out


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), grids, grids, st.integers(4, 12), st.sampled_from([1, 2]),
       st.sampled_from([1, 8, 16]), st.booleans())
def test_whole_row_runs_rebuild_the_destination(rows_per_group, words, a, b, tiles, elem, align, same_cols):
    """Both sides padded alike: cells spanning full padded blocks move as one run each, and the destination's
    data is exactly the source's, whatever the padding carried along."""
    g = a[5]
    rows, cols = rows_per_group * g, words * 4 // elem * 2
    pcs = (min(a[1], words), min(a[1], words)) if same_cols else (min(a[1], words), min(b[1], words))
    mk = lambda p, pc: Layout(rows, cols, elem, pr=min(p[0], rows_per_group) * g, pc=pc, replicas=p[2], start=p[3],
                              row_stride=p[4], row_groups=g, col_align=align)
    src, dst = mk(a, pcs[0]), mk(b, pcs[1])
    logical = (np.arange(rows * cols).reshape(rows, cols) % 97) + 1
    mem = [bytearray() for _ in range(tiles)]
    base: dict = {}
    _place(src, tiles, logical, mem, base, "src")
    for t in range(tiles):
        base[("dst", t)] = len(mem[t])
        mem[t].extend(b"\xee" * int(dst.tile_bytes(tiles)[t]))
    whole = transfers(src, dst, tiles, whole_rows=True)
    plain = transfers(src, dst, tiles)
    _replay_runs(whole, mem, base, "src", "dst")
    want = [bytearray() for _ in range(tiles)]
    wbase: dict = {}
    _place(dst, tiles, logical, want, wbase, "dst")
    assert _data_bytes(dst, tiles, mem, base, "dst") == _data_bytes(dst, tiles, want, wbase, "dst")
    assert (whole.cells["runs"] <= plain.cells["runs"]).all()
    assert (whole.send_pieces <= plain.send_pieces).all() and (whole.recv_pieces <= plain.recv_pieces).all()
    if same_cols and align > 1 and (rows_per_group > 1):
        full = whole.cells["nr"] > 1
        assert (whole.cells["runs"][full] == 1).all(), "full padded blocks move as whole rows"


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), grids, grids, st.integers(4, 40), st.sampled_from([1, 2]),
       st.sampled_from([1, 16]))
def test_whole_row_counts_agree_with_the_checker(rows_per_group, words, a, b, tiles, elem, align):
    target = load_target(TARGET)
    g = a[5]
    rows, cols = rows_per_group * g, words * 4 // elem * 3
    mk = lambda p: Layout(rows, cols, elem, pr=min(p[0], rows_per_group) * g, pc=min(p[1], cols // (4 // elem)),
                          replicas=p[2], start=p[3], row_stride=p[4], row_groups=g, col_align=align)
    src, dst = mk(a), mk(b)
    tr = transfers(src, dst, tiles, enc=target.encoding, whole_rows=True)
    theirs = cx.grid_transfer(layout_record(src), None, layout_record(dst), tiles, target, whole_rows=True)
    assert np.array_equal(tr.table_words(target.encoding, copy_list_words(target)) * target.instruction_bytes, theirs.table_bytes(target, False))
    assert np.array_equal(tr.send_pieces + tr.recv_pieces, theirs.send_pieces + theirs.recv_pieces)
    assert np.array_equal(tr.send, theirs.send_bytes) and np.array_equal(tr.recv, theirs.recv_bytes)


def test_blocks_home_stages_each_block_as_one_run():
    from ipuplan.catalogue import Home, HomeKind
    from ipuplan.checker.space import home_of
    target = load_target(TARGET)
    tiles = 64
    # a LayerNorm vector needed whole by 40 row tiles, and a weight in 2 x 3 padded interleaved blocks x 4 replicas
    vec = Layout(1, 144, 2, replicas=40)
    w = Layout(64, 96, 1, pr=2, pc=3, replicas=4, mem=IL, row_align=32, col_align=16)
    for staged, home, pieces in ((vec, Home(HomeKind.BLOCKS), 1), (vec, Home(HomeKind.BLOCKS, 8), 8),
                                 (w, Home(HomeKind.BLOCKS), 1)):
        h = home_layout(tiles, "p", staged, home)
        tr = transfers(h, staged, tiles, enc=target.encoding, whole_rows=True)
        assert tr.recv_pieces.max() == pieces  # every block (or chunk) leaves its home as one run
        assert (tr.cells["runs"] == 1).all()
        rec = home_of("p", layout_record(staged), tiles, (home.kind.value, home.chunks))
        assert rec == layout_record(h)  # the checker derives the same home on its own
        theirs = cx.grid_transfer(rec, None, layout_record(staged), tiles, target, whole_rows=True)
        assert np.array_equal(tr.table_words(target.encoding, copy_list_words(target), True) * 4, theirs.table_bytes(target, True))
    # the spread home of the same vector: one piece per 8-byte grain it spans on each of 36 tiles
    spread = stream_transfer(home_layout(tiles, "p", vec), vec, tiles, target.encoding)
    assert spread.recv_pieces.max() == 36
