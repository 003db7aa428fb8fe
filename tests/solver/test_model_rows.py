"""The model builder's array paths against plain definitions: distinct rows by hashing equal np.unique's, and the
liveness rows built per class from difference arrays equal the rows summed step by step from the contributions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from conftest import MODELS, ROOT

SMALL = ROOT / "targets" / "small64.yaml"


def _same_as_numpy(M: np.ndarray) -> None:
    from ipuplan.solver.classes import unique_rows
    uniq, first, inverse = np.unique(M, axis=0, return_index=True, return_inverse=True)
    u, f, i = unique_rows(M)
    assert u.shape == uniq.shape and (u == uniq).all()
    assert (f == first).all() and (i == inverse.ravel()).all()


@settings(max_examples=150, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(0, 30), st.integers(0, 8)), elements=st.integers(-4, 4)),
       st.integers(0, 3))
def test_unique_rows_equal_numpys(M, repeat):
    _same_as_numpy(np.concatenate([M] * (repeat + 1)) if M.size else M)


def test_a_hash_collision_falls_back_to_numpy(monkeypatch):
    """Weights that make every row's hash its sum: rows with equal sums collide and np.unique decides."""
    from ipuplan.solver import classes
    monkeypatch.setattr(classes, "_row_weights", lambda k: np.ones(k, np.uint64))
    M = np.array([[1, 2], [2, 1], [3, 0], [1, 2], [0, 0]])
    _same_as_numpy(M)


def _reference_rows(ctx, mem, threshold: int) -> set:
    """Every (class, step, {literal: bytes}) the liveness family keeps, from its definition: a row per step whose
    largest possible sum exceeds the threshold, less the rows another kept row of the class dominates."""
    from ipuplan.solver.memory.liveness import _group
    p = ctx.p
    cbs = [cb for cb in p.contribs if mem is None or cb.mem is mem]
    steps = len(p.steps)
    out = set()
    for c in ctx.classes:
        rows = []
        for t in range(steps):
            step, prog = {}, {}
            for cb in cbs:
                v = int(p.vectors[cb.vec][c.rep])
                if cb.first == 0 and cb.last == steps - 1:
                    prog[cb.lit] = prog.get(cb.lit, 0) + v
                elif cb.first <= t <= cb.last:
                    step[cb.lit] = step.get(cb.lit, 0) + v
            best: dict = {}
            for k in set(step) | set(prog):
                best[_group(k)] = max(best.get(_group(k), 0), step.get(k, 0) + prog.get(k, 0))
            if sum(best.values()) > threshold:
                rows.append((t, {k: v for k, v in step.items() if v}))
        order = sorted(range(len(rows)), key=lambda a: -sum(rows[a][1].values()))
        kept: list[int] = []
        for a in order:
            if not any(all(rows[b][1].get(k, 0) >= v for k, v in rows[a][1].items()) for b in kept):
                kept.append(a)
        out |= {(c.index, rows[a][0], tuple(sorted(rows[a][1].items(), key=repr))) for a in kept}
    return out


@pytest.mark.parametrize("catalogue", ["shaped", "compact"])
def test_live_rows_equal_their_definition(catalogue):
    from ipuplan.catalogue import Catalogue
    from ipuplan.layout import MemClass
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.choice import add_choice
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.memory.liveness import live_rows
    from ipuplan.solver.model import ModelCtx
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    p = build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), 2), load_target(SMALL), 2,
                      catalogue=Catalogue(catalogue))
    classes = problem_classes(p)
    ctx = ModelCtx(p, classes, fixed=True)
    add_choice(ctx)
    name = {id(v): k for k, v in ctx.x.items()}
    # a threshold every row passes, and one that leaves some steps of some classes out
    for mem, threshold in ((None, 0), (None, 100_000), (MemClass.INTERLEAVED, 100_000)):
        got = set()
        for c, t, (lits, coeffs), _, _ in live_rows(ctx, mem, threshold):
            got.add((c.index, t, tuple(sorted(((name[id(v)], b) for v, b in zip(lits, coeffs)), key=repr))))
        assert got, "the threshold leaves no row: the comparison would be empty"
        assert got == _reference_rows(ctx, mem, threshold)
