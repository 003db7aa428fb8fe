"""The Python API: solve, build, run and check as the command line runs them, typed results, bad input as the
exception tree of ipuplan.errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipuplan
from ipuplan.errors import InputError, IpuplanError
from tests.conftest import MODELS, ROOT

SMALL = ROOT / "targets" / "small64.yaml"


def test_solve_build_run_check(tmp_path):
    s = ipuplan.solve(MODELS / "vit-small.yaml", batch=2, target=SMALL, out=tmp_path / "s")
    assert s.verdict == "FIT" and s.exit_code == 0 and s.modeled_cycles > 0 and (s.directory / "plan.json").exists()
    assert ipuplan.check(s.directory).ok
    b = ipuplan.build(MODELS / "vit-small.yaml", batch=2, target=SMALL, out=tmp_path / "b")
    assert b.package is not None and b.package.exists() and b.modeled_cycles == s.modeled_cycles
    c = ipuplan.check(b.package)
    assert c.ok and c.kind == "package"
    pixels = np.random.default_rng(0).standard_normal((2, 3, 28, 28)).astype(np.float32)
    r = ipuplan.run(b.package, pixels, compare=True)
    assert r.output.shape[0] == 2 and r.bit_exact is True


def test_infeasible_is_a_verdict_not_an_error(tmp_path):
    s = ipuplan.solve(MODELS / "vit-small.yaml", batch=4, target=SMALL, headroom=600_000, out=tmp_path / "i")
    assert s.verdict == "INFEASIBLE" and s.exit_code == 1
    c = ipuplan.check(s.directory)
    assert c.kind == "certificate" and c.ok


@pytest.mark.parametrize("kw", [dict(batch=0), dict(batch="2"), dict(effort=float("nan")), dict(seed=-1),
                                dict(catalogue="wide")])
def test_bad_arguments_raise_input_error(tmp_path, kw):
    with pytest.raises(InputError):
        ipuplan.solve(MODELS / "vit-small.yaml", target=SMALL, out=tmp_path / "x", **{"batch": 1, **kw})


def test_a_missing_model_is_an_ipuplan_error(tmp_path):
    with pytest.raises(IpuplanError):
        ipuplan.solve(tmp_path / "nope.yaml", target=SMALL, out=tmp_path / "x")
