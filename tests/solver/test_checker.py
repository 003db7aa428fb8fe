"""The plan checker trusts nothing in plan.json: the audited edits are rejected with the value's path, and any
edit of any leaf is either rejected or verifies to exactly the original figures (hypothesis)."""

from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MODELS, ROOT
from ipuplan.checker import check_plan
from tests_helpers import leaves, run_main, set_leaf

SMALL = ROOT / "targets" / "small64.yaml"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan")
    assert run_main("solve", MODELS / "vit-small.yaml", "--batch", "2", "--target", SMALL, "-o", out) == 0
    return json.loads((out / "plan.json").read_text())


def _op(plan, kind):
    return next(k for k, c in plan["choices"].items() if c.get("kind") == kind)


def _rejected(doc, fragment):
    rep = check_plan(doc)
    assert not rep.ok, "accepted"
    assert any(fragment in v for v in rep.violations), rep.violations
    return rep


@pytest.mark.parametrize("field", ["row_align", "col_align"])
def test_zero_alignment_is_rejected(plan, field):
    for kind in ("gelu", "matmul"):
        bad = copy.deepcopy(plan)
        op = _op(bad, kind)
        bad["choices"][op]["output"][field] = 0
        _rejected(bad, f"choices.{op}.output.{field}: 0 ")


def test_row_groups_that_do_not_divide_the_rows_are_rejected(plan):
    bad = copy.deepcopy(plan)
    op = _op(bad, "gelu")
    bad["choices"][op]["output"]["row_groups"] = 3
    _rejected(bad, f"choices.{op}.output.row_groups: 3 is invalid")


def test_a_relabelled_kind_is_rejected(plan):
    bad = copy.deepcopy(plan)
    op = _op(bad, "matmul")
    bad["choices"][op]["kind"] = "Matmul"
    _rejected(bad, f"choices.{op}.kind: 'Matmul' disagrees with the model")


def test_labels_are_derived_not_read(plan):
    """A missing label changes nothing: kind, statistics and exchanges are derived from the model."""
    ok = copy.deepcopy(plan)
    for c in ok["choices"].values():
        c.pop("kind", None)
        c.pop("label", None)
    assert check_plan(ok).lines == check_plan(plan).lines


@pytest.mark.parametrize("value", [0, -1, "2", None, 1.5, True])
def test_malformed_replicas_never_crash(plan, value):
    bad = copy.deepcopy(plan)
    op = _op(bad, "gelu")
    bad["choices"][op]["output"]["replicas"] = value
    _rejected(bad, f"choices.{op}.output.replicas")


def _mutations(value):
    if isinstance(value, bool):
        return [not value, 0, "true"]
    if isinstance(value, int):
        return [0, -1, value + 1, value - 8, value * 2, 10 ** 9, str(value), None]
    if isinstance(value, float):
        return [0.0, -value, value * 2, None]
    if isinstance(value, str):
        return ["", value + "x", "matmul", None, 3]
    return [0, "x"]


@settings(max_examples=int(os.environ.get("IPUPLAN_MUTANTS", 150)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_every_leaf_edit_is_rejected_or_changes_nothing(plan, data):
    """Mutate one leaf: the checker rejects the mutant or reports exactly the original figures."""
    paths = list(leaves(plan))
    path, value = data.draw(st.sampled_from(paths), label="leaf")
    new = data.draw(st.sampled_from(_mutations(value)), label="value")
    bad = copy.deepcopy(plan)
    set_leaf(bad, path, new)
    rep = check_plan(bad)
    if rep.ok:
        assert rep.lines == check_plan(plan).lines, f"{path} = {new!r} changed the verified figures"
