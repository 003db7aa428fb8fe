"""Rotating (compute-shift) matmuls and ring attention through the whole back half, on 64 tiles with every op that
has such an implementation restricted to those: vit-small (matmuls rotating 2 and 3 slices), vit-small with FP8
GEMMs in the compact catalogue (running sums in the F16 outputs), pe-tiny in the compact catalogue (its QKV,
read by rotary attention, rotating with RoPE after the last step), a one-layer FP8 tower of width 512 on the full
target rotating through 16 k-slices (compact), a ring of all 10 query cells of a group carrying its softmax state (compact) and pe-tiny (ring attention over 4 key panels, RoPE on q and k) — solved and checked, placed, lowered, package-checked with its
symbolic replay, emulated bit for bit equal to the plan-faithful reference (which sums each output block's
k-slices, and merges each query block's key panels, in its own rotation order); a tampered rotation is refused by
the checker."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main, vit_small_fp8

SMALL = ROOT / "targets" / "small64.yaml"


def _rotating_only(monkeypatch, ring: int | None = None, slices: int | None = None):
    """Matmuls restricted to their rotating implementations (with `slices` k-slices, if given) and attention to
    its ring ones (with `ring` panels), wherever an op has any."""
    from ipuplan.catalogue import CATALOGUE
    from ipuplan.ir.graph import OpKind
    rotates = (lambda f: "rotate" in f) if slices is None else (lambda f: f.get("rotate") == slices)
    for kind, keep in ((OpKind.MATMUL, rotates), (OpKind.ATTENTION, lambda f: f.get("ring") == ring)):
        every = CATALOGUE[kind]

        def only(ctx, sop, every=every, keep=keep):
            impls = every(ctx, sop)
            return [im for im in impls if keep(im.fields)] or impls
        monkeypatch.setitem(CATALOGUE, kind, only)


def _build(tmp_path_factory, model: str, batch: int, pixels: tuple, *extra, ring: int | None = None,
           catalogue: str = "rotating", slices: int | None = None, target=SMALL):
    mp = pytest.MonkeyPatch()
    _rotating_only(mp, ring, slices)
    try:
        path = model if not isinstance(model, str) else MODELS / f"{model}.yaml"
        d = tmp_path_factory.mktemp(path.stem)
        assert run_main("build", path, "--target", target, "--batch", str(batch), "--catalogue",
                        catalogue, *extra, "-o", d) == 0
    finally:
        mp.undo()
    np.save(d / "pixels.npy", np.random.default_rng(5).standard_normal((batch, *pixels)).astype(np.float32))
    return d


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory, "vit-small", 2, (3, 28, 28))


@pytest.fixture(scope="module")
def in_place(tmp_path_factory):
    """vit-small with FP8 GEMMs in the compact catalogue: every rotating matmul keeps its running sum in its output."""
    m = vit_small_fp8(tmp_path_factory.mktemp("fp8") / "vit-small-fp8.yaml")
    return _build(tmp_path_factory, m, 2, (3, 28, 28), catalogue="compact")


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory):
    """16 k-slices (the compact catalogue's most) need a 16 x 16 grid at least: a one-layer FP8 tower of width 512
    (16 FP8 micro-blocks of k), 16 tokens per image, on the full 1,472-tile target."""
    from tests.runner.test_shapes import _model
    m = tmp_path_factory.mktemp("wide") / "vit-wide-fp8.yaml"
    m.write_text(_model("vit-small", dict(width=512, heads=4, mlp=1024, precision="fp8", size=56, layers=1,
                                          head_heads=4, head_mlp=1024)))
    return _build(tmp_path_factory, m, 2, (3, 56, 56), catalogue="compact", slices=16,
                  target=ROOT / "targets" / "c600.yaml")


@pytest.fixture(scope="module")
def full_ring(tmp_path_factory):
    """The compact catalogue rings all of a group's query cells: vit-small at 182 pixels (169 tokens), batch 3,
    two heads: 10 query cells per group on 64 tiles, a ring of 10 key panels."""
    from tests.runner.test_shapes import _model
    m = tmp_path_factory.mktemp("ring") / "vit-169-fp8.yaml"
    m.write_text(_model("vit-small", dict(precision="fp8", size=182, layers=1)))
    return _build(tmp_path_factory, m, 3, (3, 182, 182), catalogue="compact", ring=10)


@pytest.fixture(scope="module")
def rope_rotating(tmp_path_factory):
    """pe-tiny in the compact catalogue: its QKV, read by rotary attention, rotates and applies RoPE after."""
    return _build(tmp_path_factory, "pe-tiny", 1, (3, 384, 384), "--layers", "2", catalogue="compact")


@pytest.fixture(scope="module")
def ringed(tmp_path_factory):
    return _build(tmp_path_factory, "pe-tiny", 1, (3, 384, 384), "--layers", "2", ring=4)


def test_the_plan_rotates_every_activation_matmul(built):
    plan = json.loads((built / "plan.json").read_text())
    rot = {k: c for k, c in plan["choices"].items() if c.get("rotate")}
    assert {"encoder/qkv", "encoder/o", "encoder/fc1", "encoder/fc2"} <= set(rot)
    assert {c["rotate"] for c in rot.values()} >= {2, 3}  # both an even and an odd number of shifts
    for c in rot.values():
        assert c["pm"] % c["rotate"] == 0 and c["pn"] % c["rotate"] == 0 and c["params"] == "staged"


def test_the_plan_rings_the_encoder_attention(ringed):
    plan = json.loads((ringed / "plan.json").read_text())
    c = plan["choices"]["encoder/attn"]
    assert c["ring"] == 4 and c["query_blocks"] % 4 == 0 and c["key_splits"] == 1


def test_the_inplace_plan_accumulates_every_fp8_rotation_in_its_output(in_place):
    plan = json.loads((in_place / "plan.json").read_text())
    rot = {k: c for k, c in plan["choices"].items() if c.get("rotate")}
    assert {"encoder/qkv", "encoder/o", "encoder/fc1", "encoder/fc2"} <= set(rot)
    assert all(c.get("accumulate") == "out" for c in rot.values())
    placed = json.dumps(json.loads((in_place / "placement.json").read_text()))
    assert "(accumulator)" not in placed and "(x shards)" in placed


def test_the_compact_plan_rotates_the_qkv_that_feeds_rotary_attention(rope_rotating):
    plan = json.loads((rope_rotating / "plan.json").read_text())
    c = plan["choices"]["encoder/qkv"]
    assert c.get("rotate", 8) < 8 and c.get("accumulate") == "out"
    assert c.get("rope") == "unique"  # the compact catalogue's tables hold each angle once
    placed = json.dumps(json.loads((rope_rotating / "placement.json").read_text()))
    assert "encoder/qkv (RoPE tables)" in placed


def test_the_rope_tables_hold_every_angle_twice_in_the_interleaved_layout():
    """The premise of unique-angle tables, for every rotary tower in models/: columns 2i and 2i + 1 of the host
    tables are equal, so a table of the even columns rotates each pair by the same angle."""
    from ipuplan.model.host import rope_tables
    from ipuplan.model.spec import load_model
    towers = [p for p in sorted(MODELS.glob("*.yaml")) if load_model(p).rope]
    assert {"pe", "pe-tiny", "pe-gigantic"} <= {p.stem for p in towers}
    for p in towers:
        for t in rope_tables(load_model(p)):
            assert np.array_equal(t[:, 0::2], t[:, 1::2]), p.stem


def test_the_compact_catalogues_rope_tables_are_half_the_full_ones():
    """Every QKV implementation feeding rotary attention: the compact catalogue's RoPE tables hold head_dim / 2
    F32 angles per row and table, the rotating catalogue's the full head_dim, for the same output layout."""
    from ipuplan.catalogue import Catalogue, Ctx, build_catalogue, build_schedule
    from ipuplan.model import build_graph, load_model
    from ipuplan.target import load_target
    sched = build_schedule(build_graph(load_model(MODELS / "pe-tiny.yaml"), 1))
    target = load_target(ROOT / "targets" / "c600.yaml")

    def tables(kind):
        return [(i.out, b.layout, i.fields) for i in build_catalogue(Ctx(target, sched, 1, kind))["encoder/qkv"]
                for b in i.bufs if b.role == "RoPE tables"]
    full = {o: lay for o, lay, _ in tables(Catalogue.ROTATING)}
    half = {o: (lay, f) for o, lay, f in tables(Catalogue.COMPACT)}
    same = [o for o in half if o in full]
    assert same and all(half[o][1]["rope"] == "unique" for o in half)
    for o in same:
        assert half[o][0].block_bytes().max() * 2 == full[o].block_bytes().max()


def test_the_compact_catalogue_rotates_through_16_slices(sixteen):
    plan = json.loads((sixteen / "plan.json").read_text())
    assert any(c.get("rotate") == 16 and c.get("accumulate") == "out" for c in plan["choices"].values())


def test_the_compact_catalogue_rings_every_query_cell_of_a_group(full_ring):
    c = json.loads((full_ring / "plan.json").read_text())["choices"]["encoder/attn"]
    assert c["ring"] == c["query_blocks"] == 10 and c["carry"] is True  # the softmax state carried, no merges


@pytest.mark.parametrize("which", ["built", "ringed", "in_place", "rope_rotating", "sixteen", "full_ring"])
def test_package_checks_and_runs_bit_exact(which, request, cli):
    d = request.getfixturevalue(which)
    r = cli("check", d / "model.ipupkg")
    assert r.code == 0 and "PACKAGE CHECK PASSED" in r.out, r.out + r.err
    r = cli("run", d / "model.ipupkg", "--pixels", d / "pixels.npy", "--compare")
    assert r.code == 0 and "BIT-EXACT" in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("field,value,says", [("rotate", 9, "rotate: 9 is invalid"),
                                              ("params", "resident", "params: 'resident' is invalid"),
                                              ("pn", 7, "does not fit")])
def test_the_checker_refuses_a_tampered_rotation(built, cli, tmp_path, field, value, says):
    import shutil
    d = tmp_path / "plan"
    shutil.copytree(built, d, ignore=shutil.ignore_patterns("*.ipupkg"))
    plan = json.loads((d / "plan.json").read_text())
    plan["choices"]["encoder/fc2"][field] = value
    (d / "plan.json").write_text(json.dumps(plan))
    r = cli("check", d)
    assert r.code != 0 and says in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("which,change,says", [
    ("built", "out", "needs FP8 operands"),  # F16 operands accumulate in F32
    ("in_place", "rotating", "the compact catalogue"),  # the rotating catalogue's code has no in-place GEMM
    ("in_place", None, "accumulate: 'F32' is invalid"),
    ("rope_rotating", "rope", "feeding rotary attention"),
    ("rope_rotating", "angles", "unique angles are the compact catalogue's, and only its (absent here"),
    ("sixteen", "rope", "rotate: 16 is invalid"),
    ("full_ring", "rope", "ring: 10 is invalid")])
def test_the_checker_refuses_what_the_plans_catalogue_does_not_offer(request, cli, tmp_path, which, change, says):
    import shutil
    d = tmp_path / "plan"
    shutil.copytree(request.getfixturevalue(which), d, ignore=shutil.ignore_patterns("*.ipupkg"))
    plan = json.loads((d / "plan.json").read_text())
    if change == "out":
        plan["choices"]["encoder/fc2"]["accumulate"] = "out"
    elif change == "rotating":
        plan["options"]["catalogue"] = "rotating"
    elif change == "rope":  # the rotating catalogue, running sums in F32: what else compact offers is out of place
        plan["options"]["catalogue"] = "rotating"
        for c in plan["choices"].values():
            c.pop("accumulate", None)
            c.pop("rope", None)
    elif change == "angles":  # full RoPE tables where the compact catalogue links only the unique-angle epilogue
        plan["choices"]["encoder/qkv"].pop("rope")
    else:
        plan["choices"]["encoder/fc2"]["accumulate"] = "F32"
    (d / "plan.json").write_text(json.dumps(plan))
    r = cli("check", d)
    assert r.code != 0 and says in r.out + r.err, r.out + r.err


@settings(max_examples=60, deadline=None)
@given(pr=st.integers(1, 6), pc=st.integers(1, 6), reps=st.integers(1, 3), cs=st.integers(0, 5), rs=st.integers(0, 5),
       start=st.integers(0, 100))
def test_skewed_layouts_agree_with_the_checkers_geometry(pr, pc, reps, cs, rs, start):
    """A skewed layout's tiles, bytes and offsets as the planner computes them equal the checker's own reading of
    its record, and every block lands on the tile its skew says."""
    from ipuplan.catalogue.records import layout_record
    from ipuplan.checker.geometry import block_tiles, tile_bytes
    from ipuplan.layout import Layout
    lay = Layout(pr * 8, pc * 8, 2, pr=pr, pc=pc, replicas=reps, start=start, row_stride=pc + 1, col_stride=1,
                 rep_stride=pr * (pc + 1), col_skew=cs, row_skew=rs if cs == 0 else 0)
    rec = layout_record(lay)
    T = 1472
    assert (block_tiles(rec, T) == lay.block_tiles(T)).all()
    assert (tile_bytes(rec, T) == lay.tile_bytes(T)).all()
    i, j = np.meshgrid(np.arange(pr), np.arange(pc), indexing="ij")
    rpos, cpos = (i + lay.row_skew * j) % pr, (j + lay.col_skew * i) % pc
    assert (lay.block_tiles(T)[0] == (start + rpos * (pc + 1) + cpos) % T).all()


def test_the_checker_refuses_a_ring_that_does_not_divide_the_query_blocks(ringed, cli, tmp_path):
    import shutil
    d = tmp_path / "plan"
    shutil.copytree(ringed, d, ignore=shutil.ignore_patterns("*.ipupkg"))
    plan = json.loads((d / "plan.json").read_text())
    c = plan["choices"]["encoder/attn"]
    c["ring"] = next(r for r in (3, 5, 6, 7) if c["query_blocks"] % r)
    (d / "plan.json").write_text(json.dumps(plan))
    r = cli("check", d)
    assert r.code != 0 and "r must divide the query blocks" in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("edit", ["contiguous", "odd columns"])
def test_the_package_check_refuses_a_unique_angle_table_bound_from_other_columns(rope_rotating, tmp_path, edit):
    """The compact package binds every second column of rope.sin beside each QKV block; bound from the first half
    of each row instead (contiguous), or from the odd columns (equal values, other elements), the replay names the
    table: it checks the elements a vertex reads, not their values."""
    from ipuplan.checker.package import check_package
    from ipuplan.package.archive import rewrite

    def mutate(man, arrays):
        key = next(b["key"] for b in man["bindings"] if b["name"] == "rope.sin")
        assert (arrays[f"{key}/estride"] == 2).all() and (arrays[f"{key}/n"] == 1).all()
        if edit == "contiguous":
            arrays[f"{key}/estride"] = np.ones_like(arrays[f"{key}/estride"])
        else:
            arrays[f"{key}/e0"] = arrays[f"{key}/e0"] + 1
    bad = rewrite(rope_rotating / "model.ipupkg", tmp_path / "model.ipupkg", mutate)
    ok, _, why = check_package(bad)
    assert not ok and "sin table rows are not the rows' token positions" in why, why
