"""Lowering and the package: vit-small built, validated and replayed; the exchange tables the runs encode stay
within what the plan accounted; every corruption (a flipped byte, a truncated file, an address edited with the
checksums recomputed, a missing binding) is rejected with a named error."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ipuplan.checker.package import check_package
from ipuplan.package.archive import PackageError, rewrite
from ipuplan.package.io import read_package
from ipuplan.package.validate import validate
from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("vsb")
    assert run_main("build", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "-o", d) == 0
    return d


def _check(path):
    prog, m = read_package(path)
    validate(prog, m, path)
    return check_package(path)


def test_build_validates_and_replays(built, cli):
    r = cli("check", built / "model.ipupkg")
    assert r.code == 0, r.out
    assert "PACKAGE CHECK PASSED" in r.out and "the output binding holds pooled" in r.out


def test_lowered_tables_never_exceed_the_plan(built):
    prog, m = read_package(built / "model.ipupkg")
    low, acc = prog.tables, prog.info["accounted_tables"]
    assert low.sum() > 0 and (low <= acc).all()


def test_every_run_within_the_transfer_limit(built):
    prog, _ = read_package(built / "model.ipupkg")
    ex = [s for s in prog.steps if s.kind == "exchange"]
    assert ex and all((s.nbytes <= 4148 * 4).all() and (s.nbytes % 4 == 0).all() for s in ex)


def test_flipped_byte_is_rejected(built, tmp_path, cli):
    import zipfile
    data = bytearray((built / "model.ipupkg").read_bytes())
    # a byte of a member's compressed data (a zip's headers hold fields no reader interprets, e.g. its dates)
    big = max(zipfile.ZipFile(built / "model.ipupkg").infolist(), key=lambda i: i.compress_size)
    data[big.header_offset + 30 + len(big.filename) + big.compress_size // 2] ^= 0x55
    bad = tmp_path / "model.ipupkg"
    bad.write_bytes(bytes(data))
    r = cli("check", bad)
    assert r.code == 2 and "model.ipupkg" in r.err


def test_truncated_file_is_rejected(built, tmp_path, cli):
    data = (built / "model.ipupkg").read_bytes()
    bad = tmp_path / "model.ipupkg"
    bad.write_bytes(data[: len(data) * 2 // 3])
    r = cli("check", bad)
    assert r.code == 2 and "truncated or corrupted" in r.err


def _first_gemm(man):
    for s in man["steps"]:
        if s["kind"] == "compute" and s["vertices"][0]["codelet"].startswith("AmpGemm"):
            return s
    raise AssertionError("no GEMM compute set")


def test_address_moved_out_of_its_buffer_fails_validation(built, tmp_path):
    def edit(man, arrays):
        s = _first_gemm(man)
        a = arrays[f"{s['key']}/0/addr"].copy()
        a[3, 2] += 1 << 16  # the output field of vertex 3, far past its buffer
        arrays[f"{s['key']}/0/addr"] = a
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    with pytest.raises(PackageError, match=r"tile \d+ compute set \d+ .* vertex 3: field out .* is not inside a buffer"):
        _check(bad)


def test_the_check_refuses_it_without_the_writers_validation(built, tmp_path):
    """The same edit, `check` alone: its own access rule (checker/access.py) names the vertex and field."""
    def edit(man, arrays):
        s = _first_gemm(man)
        a = arrays[f"{s['key']}/0/addr"].copy()
        a[3, 2] += 1 << 16
        arrays[f"{s['key']}/0/addr"] = a
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    ok, _, why = check_package(bad)
    assert not ok and why.startswith("access: tile ") and "vertex 3: field out" in why and "live at step" in why, why


def test_the_package_check_never_loads_the_writers_validation(built):
    """DESIGN: `check PKG` must not reuse package/validate.py — a gap there would hide itself."""
    import subprocess
    import sys
    code = ("import sys; from ipuplan.checker.package import check_package; "
            f"ok, _, why = check_package({str(built / 'model.ipupkg')!r}); assert ok, why; "
            "assert 'ipuplan.package.validate' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_operand_shifted_a_row_fails(built, tmp_path):
    """x of one GEMM vertex read one row later: rejected by validation (outside its buffer) or by the replay."""
    def edit(man, arrays):
        s = _first_gemm(man)
        a = arrays[f"{s['key']}/0/addr"].copy()
        a[0, 0] += arrays[f"{s['key']}/0/pitch"][0, 0]
        arrays[f"{s['key']}/0/addr"] = a
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    try:
        ok, _, why = _check(bad)
    except PackageError as e:
        assert "vertex 0: field x" in str(e)
        return
    assert not ok and "replay" in why


def test_compute_set_of_another_op_fails_the_replay(built, tmp_path):
    """Addresses untouched, the compute set claims to be another op's: its reads are not that op's inputs."""
    def edit(man, arrays):
        gemms = [s for s in man["steps"] if s["kind"] == "compute" and s["name"] == "gemm" and "encoder/" in s["op"]]
        gemms[0]["op"] = gemms[1]["op"]
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    ok, _, why = _check(bad)
    assert not ok and "expected" in why


def test_exchange_destination_shift_fails_the_replay(built, tmp_path):
    def edit(man, arrays):
        s = next(s for s in man["steps"] if s["kind"] == "exchange" and s["runs"] > 8)
        d = arrays[f"{s['key']}/dst_addr"].copy()
        n = arrays[f"{s['key']}/nbytes"]
        j = int(np.argmax(n))
        d[j, 0] += 4  # one word later: still inside the buffer, every element off by one word
        arrays[f"{s['key']}/dst_addr"] = d
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    try:
        ok, _, why = _check(bad)
    except PackageError as e:
        assert "destination" in str(e)
        return
    assert not ok and "replay" in why


def test_missing_binding_is_named(built, tmp_path):
    def edit(man, arrays):
        man["bindings"] = [b for b in man["bindings"] if b["name"] != "layers.fc1.w"]
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    ok, _, why = _check(bad)
    assert not ok and "no binding for layers.fc1.w" in why


def test_export_writes_an_exchange_snapshot(built, tmp_path, cli):
    d = tmp_path / "b"
    shutil.copytree(built, d)
    r = cli("export", d, "--exchange-snapshot")
    assert r.code == 0, r.err
    snap = json.loads((d / "exchange-snapshot.json").read_text())
    prog, _ = read_package(d / "model.ipupkg")
    ex = [s for s in prog.steps if s.kind == "exchange"]
    assert snap["schema_version"] == 4 and snap["tile_count"] == 64 and len(snap["phases"]) == len(ex)
    t = snap["phases"][0]["transfers"][0]
    assert set(t) == {"source", "source_addresses", "destinations", "words", "width"} and t["width"] == "Word32"
    assert sum(len(p["transfers"]) for p in snap["phases"]) == sum(len(s) for s in ex)
    moving = [t for p in snap["phases"] for t in p["transfers"] if len(t["source_addresses"]) > 1]
    assert all(len(t["source_addresses"]) == prog.count for t in moving)


def test_identical_inputs_give_byte_identical_packages(built, tmp_path):
    """A second build of the same model, target and batch, later and into another directory, gives the same
    bytes: members carry a fixed timestamp and order."""
    import time
    time.sleep(2.1)  # the zip format's clock has two-second resolution
    d = tmp_path / "again"
    assert run_main("build", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "-o", d) == 0
    assert (d / "model.ipupkg").read_bytes() == (built / "model.ipupkg").read_bytes()


def _bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location("package_mutants", ROOT / "bench" / "package_mutants.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()
MUTANTS = BENCH.MUTANTS


@pytest.fixture(scope="module")
def pe_tiny_48(tmp_path_factory):
    """pe-tiny at 48 px, 2 layers, batch 3 on 64 tiles: class token, RoPE and an attention-pool head."""
    d = tmp_path_factory.mktemp("pe-tiny-48")
    (d / "model.yaml").write_text(BENCH.pe_tiny_48((MODELS / "pe-tiny.yaml").read_text()))
    assert run_main("build", d / "model.yaml", "--target", SMALL, "--batch", "3", "-o", d / "out") == 0
    return d / "out"


@pytest.mark.parametrize("mutant", MUTANTS, ids=[f"{i + 1:02d}-{m[0].replace(' ', '-')}" for i, m in enumerate(MUTANTS)])
def test_every_semantic_mutant_is_rejected(built, request, tmp_path, mutant):
    """bench/package_mutants.py's edits, each with every digest recomputed: `check` rejects every one, by a
    failed check or as an invalid package, and names what is wrong."""
    cls, what, edit, *base = mutant
    src = request.getfixturevalue("pe_tiny_48") if base == ["pe-tiny-48"] else built
    bad = rewrite(src / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    try:
        ok, _, why = check_package(bad)
    except PackageError as e:
        assert "model.ipupkg" in str(e)
        return
    assert not ok and why, f"{cls}: {what} was accepted"


def test_mutation_bases_check(pe_tiny_48):
    """The unmutated bases pass: the rules that reject the mutants hold for what the backend writes."""
    ok, lines, why = check_package(pe_tiny_48 / "model.ipupkg")
    assert ok, why
    assert any("descriptor and program bytes" in ln for ln in lines)
