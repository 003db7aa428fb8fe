"""The emulator: vit-small's package bit for bit equal to the plan-faithful mixed reference, cosine against fp32;
a read of never-written bytes and a buffer moved onto a live neighbour stop with named errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipuplan.ir.graph import DType
from ipuplan.numerics import gemm, gemm_batched, gemm_groups, round_to
from ipuplan.package.archive import rewrite
from ipuplan.runner import Device, Emulator, RunError
from ipuplan.runner.job import run_package
from tests.conftest import MODELS, ROOT
from tests.tests_helpers import run_main

SMALL = ROOT / "targets" / "small64.yaml"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("vsr")
    assert run_main("build", MODELS / "vit-small.yaml", "--target", SMALL, "--batch", "2", "-o", d) == 0
    x = np.random.default_rng(7).standard_normal((2, 3, 28, 28)).astype(np.float32)
    np.save(d / "pixels.npy", x)
    return d


def test_bit_exact_with_the_plan_faithful_reference(built, cli, tmp_path):
    r = cli("run", built / "model.ipupkg", "--pixels", built / "pixels.npy", "--compare", "--profile",
            tmp_path / "profile.json", "-o", tmp_path / "y.npy")
    assert r.code == 0, r.err
    assert "BIT-EXACT" in r.out and "fp32 reference: cosine 0.99" in r.out
    y = np.load(tmp_path / "y.npy")
    assert y.shape == (2, 144) and np.isfinite(y).all()
    r2 = cli("reference", MODELS / "vit-small.yaml", "--pixels", built / "pixels.npy", "--mode", "mixed", "--plan", built,
             "-o", tmp_path / "ref.npy")
    assert r2.code == 0 and np.array_equal(np.load(tmp_path / "ref.npy"), y)
    prof = json.loads((tmp_path / "profile.json").read_text())
    plan = json.loads((built / "plan.json").read_text())
    assert prof["total"]["cycles"] == prof["modeled_cycles"] == plan["cycles"]["modeled"]
    assert len(prof["supersteps"]) > 40 and "the plan's" in r.out


def test_plan_faithful_differs_from_plain_mixed_only_by_rounding(built):
    x = np.load(built / "pixels.npy")
    c = run_package(built / "model.ipupkg", x, compare=True).compare
    assert c["plan_faithful"]["bit_exact"] and c["mixed"]["cosine"] > 0.9999 and c["fp32"]["cosine"] > 0.999


def test_progress_covers_the_emulator_and_every_reference(built):
    """`run --compare` reports progress through the emulator's supersteps, then each reference's ops, each phase
    counting up to its own total (the time-left estimate extrapolates within it)."""
    seen = []
    run_package(built / "model.ipupkg", np.load(built / "pixels.npy"), compare=True,
                progress=lambda what, done, total: seen.append((what, done, total)))
    phases = {}
    for what, done, total in seen:
        key = what.split(" reference:")[0] if " reference:" in what else "emulator"
        phases.setdefault(key, []).append((done, total))
    assert list(phases) == ["emulator", "plan-faithful", "mixed", "fp32"]
    for steps in phases.values():
        assert steps[-1][0] == steps[-1][1] and all(a[0] < b[0] for a, b in zip(steps, steps[1:]))


def test_emulator_is_a_device(built):
    dev = Emulator(None)
    assert isinstance(dev, Device)
    dev.load(built / "model.ipupkg")
    with pytest.raises(ValueError, match="initialize and run"):
        dev.call("train", {})


def test_a_read_of_never_written_bytes_stops_named(built, tmp_path):
    def edit(man, arrays):
        man["bindings"] = [b for b in man["bindings"] if b["name"] != "layers.fc2.w"]
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    (tmp_path / "plan.json").write_bytes((built / "plan.json").read_bytes())
    with pytest.raises(RunError, match=r"tile \d+ step \d+ \(encoder/fc2 gemm\) AmpGemmF16 vertex \d+: field w reads "
                                       r"byte 0x[0-9a-f]+ of tile \d+, never written"):
        run_package(bad, np.load(built / "pixels.npy"))


def test_a_buffer_moved_onto_a_live_neighbour_is_refused(built, tmp_path, cli):
    def edit(man, arrays):
        names = man["buffer_names"]
        name, addr, size = arrays["buffers/name"], arrays["buffers/addr"].copy(), arrays["buffers/size"]
        group, first, last = arrays["buffers/group"], arrays["buffers/first"], arrays["buffers/last"]
        a = next(i for i in range(len(addr)) if names[name[i]].endswith("(output)") and first[i] > 0)
        # any neighbour in the same tile group whose lifetime meets the output's: which one depends on the plan
        b = next(i for i in range(len(addr)) if i != a and group[i] == group[a] and size[i] > 0
                 and first[i] <= last[a] and first[a] <= last[i] and addr[i] != addr[a])
        addr[a] = addr[b]
        arrays["buffers/addr"] = addr
    bad = rewrite(built / "model.ipupkg", tmp_path / "model.ipupkg", edit)
    r = cli("run", bad, "--pixels", built / "pixels.npy")
    assert r.code == 2 and "overlap in address and lifetime" in r.err


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 70), st.integers(1, 6), st.sampled_from([16, 32]),
       st.booleans(), st.integers(0, 2**31))
def test_batched_gemm_rounds_every_element_as_the_reference(v, m, k, n, chunk, fp8, seed):
    rng = np.random.default_rng(seed)
    d = DType.F143 if fp8 else DType.F16
    x = round_to(rng.standard_normal((v, m, k)) * 4, d)
    w = round_to(rng.standard_normal((v, k, n)) * 4, d)
    acc = DType.F16 if fp8 else DType.F32
    got = gemm_batched(x, w, acc, chunk)
    want = np.stack([gemm(x[i], w[i], acc, chunk) for i in range(v)])
    assert np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.integers(1, 3), st.integers(1, 3), st.integers(1, 40), st.integers(1, 5), st.booleans(),
       st.integers(0, 2**31))
def test_grouped_gemm_equals_the_batched_one(v, xgroups, wgroups, k, n, fp8, seed):
    """Operands held once and shared between vertices (x over column blocks, w over row blocks) give the same
    bits as every vertex's own product."""
    rng = np.random.default_rng(seed)
    d = DType.F143 if fp8 else DType.F16
    xs = round_to(rng.standard_normal((xgroups, 3, k)) * 4, d)
    ws = round_to(rng.standard_normal((wgroups, k, n)) * 4, d)
    ws[0, 0, 0] = -0.0
    xi, wi = rng.integers(0, xgroups, v), rng.integers(0, wgroups, v)
    acc = DType.F16 if fp8 else DType.F32
    assert np.array_equal(gemm_groups(xs, xi, ws, wi, acc, 16), gemm_batched(xs[xi], ws[wi], acc, 16))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 70), st.integers(1, 4), st.integers(-12, 12), st.integers(0, 2**31))
def test_f32_accumulation_in_float32_is_the_float64_rounding(m, k, n, e, seed):
    """The F32 accumulator adds in float32; that is the exact float64 sum rounded once, as the AMP rounds."""
    rng = np.random.default_rng(seed)
    x = round_to(rng.standard_normal((m, k)) * 2.0 ** e, DType.F16)
    w = round_to(rng.standard_normal((k, n)) * 2.0 ** -e, DType.F16)
    x2, w2 = x.astype(np.float64), w.astype(np.float64)
    out = None
    for k0 in range(0, k, 16):
        part = (x2[:, k0:k0 + 16] @ w2[k0:k0 + 16]).astype(np.float32).astype(np.float64)
        out = part if out is None else (out + part).astype(np.float32).astype(np.float64)
    assert np.array_equal(gemm(x, w, DType.F32, 16), out.astype(np.float32))
