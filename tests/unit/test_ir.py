"""IR construction, verifier and printer: op counts, model features, verifier errors, golden text."""

from __future__ import annotations

import dataclasses
import os

import pytest

from conftest import MODELS, ROOT
from ipuplan.errors import IRError
from ipuplan.ir import DType, OpKind, Role, print_graph, verify
from ipuplan.ir.graph import Graph, MatmulAttrs, Op, Value
from ipuplan.model import build_graph, load_model

GOLDEN = ROOT / "tests" / "golden"


def _count(g, kind):
    return sum(trips for op, _, trips in g.walk() if op.kind is kind)


@pytest.mark.parametrize("fuse,expected", [(True, 10), (False, 13)])
def test_siglip_depth1_matmul_count(fuse, expected):
    spec = load_model(MODELS / "siglip.yaml").with_options(layers=1, fuse_qkv=fuse)
    assert _count(build_graph(spec, 1), OpKind.MATMUL) == expected


def test_repeat_is_structured_not_unrolled():
    spec = load_model(MODELS / "siglip.yaml")
    g = build_graph(spec, 2)
    reps = [op for op in g.ops if op.kind is OpKind.REPEAT]
    assert len(reps) == 1 and reps[0].attrs.count == 27
    # The IR holds one body; 27 layers cost only the stacked parameter shapes.
    assert sum(1 for op, _, _ in g.walk() if op.kind is OpKind.MATMUL) == 10
    assert _count(g, OpKind.MATMUL) == 1 + 4 * 27 + 5
    qkv = g.value("layers.qkv.w")
    assert qkv.shape == (27, 1152, 3456) and qkv.dtype is DType.F143 and qkv.role is Role.PARAM


def test_pe_has_every_feature():
    spec = load_model(MODELS / "pe.yaml")
    g = build_graph(spec, 1)
    names = {v.name for v in g.values}
    assert {"cls", "pos", "ln_pre.g", "proj.w", "rope.sin", "rope.cos"} <= names
    assert g.value("pos").shape == (577, 1024)
    kinds = [op.kind for op in g.ops]
    assert OpKind.CONCAT in kinds and OpKind.BROADCAST in kinds
    rep = next(op for op in g.ops if op.kind is OpKind.REPEAT)
    attn = next(op for op in rep.attrs.body.ops if op.kind is OpKind.ATTENTION)
    assert attn.attrs.rope and attn.attrs.rope_prefix == 1 and attn.attrs.heads == 16
    pool = next(op for op in g.ops if op.name == "head.attn")
    assert pool.attrs.heads == 8 and g.value("head.attn").shape == (1, 1, 1024)
    assert g.outputs == ("proj",) and g.value("proj").shape == (1, 1024)
    assert not any(op.name == "embed" and len(op.inputs) == 3 for op in g.ops)  # no patch bias in PE


def test_verifier_rejects_bad_matmul():
    x = Value("x", (4, 8), DType.F16, Role.INPUT)
    w = Value("w", (7, 3), DType.F16, Role.PARAM)
    y = Value("y", (4, 3), DType.F16)
    g = Graph("bad", (x, w, y), (Op(OpKind.MATMUL, "mm", ("x", "w"), ("y",), MatmulAttrs()),), ("x", "w"), ("y",))
    with pytest.raises(IRError, match="matmul `mm`: x f16\\[4,8\\] does not contract with w f16\\[7,3\\]"):
        verify(g)


def test_verifier_rejects_wrong_declared_type_and_order():
    x = Value("x", (4, 8), DType.F16, Role.INPUT)
    w = Value("w", (8, 3), DType.F16, Role.PARAM)
    y = Value("y", (4, 5), DType.F16)
    op = Op(OpKind.MATMUL, "mm", ("x", "w"), ("y",), MatmulAttrs())
    with pytest.raises(IRError, match="declares `y` as f16\\[4,5\\]"):
        verify(Graph("bad", (x, w, y), (op,), ("x", "w"), ("y",)))
    y2 = Value("y", (4, 3), DType.F16)
    z = Value("z", (4, 3), DType.F16)
    add = Op(OpKind.ADD, "add", ("y", "y"), ("z",))
    with pytest.raises(IRError, match="reads `y` before it is produced"):
        verify(Graph("bad", (x, w, y2, z), (add, op), ("x", "w"), ("z",)))


def test_verifier_rejects_bad_repeat_sequence():
    spec = load_model(MODELS / "vit-small.yaml")
    g = build_graph(spec, 1)
    rep = next(op for op in g.ops if op.kind is OpKind.REPEAT)
    bad_vals = tuple(dataclasses.replace(v, shape=(3,) + v.shape[1:]) if v.name == "layers.fc1.w" else v
                     for v in g.values)
    with pytest.raises(IRError, match="sequence f16\\[3,144,288\\] is not 2 x f16\\[144,288\\]"):
        verify(dataclasses.replace(g, values=bad_vals))
    assert rep.attrs.count == 2


@pytest.mark.parametrize("model,batch,layers", [("vit-small", 2, None), ("pe", 1, 1)])
def test_printer_golden(model, batch, layers):
    spec = load_model(MODELS / f"{model}.yaml").with_options(layers=layers)
    text = print_graph(build_graph(spec, batch)) + "\n"
    path = GOLDEN / f"{model}-b{batch}.ir.txt"
    if os.environ.get("IPUPLAN_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), "IR text changed; regenerate with IPUPLAN_UPDATE_GOLDEN=1 if intended"
