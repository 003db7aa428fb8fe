"""Every bad-input case: exit code 2, one message naming file:line and key, no traceback."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import MODELS

GOOD = (MODELS / "vit-small.yaml").read_text()


def _write(tmp_path: Path, text: str | bytes, name: str = "m.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def _expect_bad(cli, path: Path, *fragments: str, line: int | None = None):
    r = cli("show", path)
    assert r.code == 2, (r.code, r.out, r.err)
    assert "Traceback" not in r.err + r.out
    msg = r.err.strip()
    assert msg.startswith("error: "), msg
    assert len(msg.splitlines()) == 1, msg
    assert str(path) in msg, msg
    if line is not None:
        assert f"{path}:{line}:" in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


def _line_of(text: str, key: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(key))


def test_unknown_key_suggests_nearest(cli, tmp_path):
    text = GOOD.replace("heads: 2\n", "haeds: 2\n", 1)
    msg = _expect_bad(cli, _write(tmp_path, text), "haeds", "unknown key", "did you mean `heads`",
                      line=_line_of(text, "haeds"))
    assert msg


def test_wrong_type(cli, tmp_path):
    text = GOOD.replace("width: 144", "width: wide")
    _expect_bad(cli, _write(tmp_path, text), "width", "expected an integer", line=_line_of(text, "width"))


def test_bool_is_not_an_integer(cli, tmp_path):
    _expect_bad(cli, _write(tmp_path, GOOD.replace("width: 144", "width: true")), "expected an integer")


def test_missing_field(cli, tmp_path):
    text = "\n".join(ln for ln in GOOD.splitlines() if not ln.startswith("mlp:"))
    _expect_bad(cli, _write(tmp_path, text), "mlp", "missing required key")


@pytest.mark.parametrize("value,word", [("0", "below the minimum"), ("-144", "below the minimum"),
                                        ("1000000000", "above the maximum")])
def test_out_of_range_sizes(cli, tmp_path, value, word):
    text = GOOD.replace("width: 144", f"width: {value}")
    _expect_bad(cli, _write(tmp_path, text), "width", word, line=_line_of(text, "width"))


def test_nested_out_of_range(cli, tmp_path):
    text = GOOD.replace("  patch: 14", "  patch: 0")
    _expect_bad(cli, _write(tmp_path, text), "image.patch", "below the minimum", line=_line_of(text, "  patch:"))


def test_width_not_divisible_by_heads(cli, tmp_path):
    text = GOOD.replace("heads: 2\n", "heads: 5\n", 1)
    _expect_bad(cli, _write(tmp_path, text), "heads", "not divisible by 5 heads", line=_line_of(text, "heads:"))


def test_image_not_multiple_of_patch(cli, tmp_path):
    text = GOOD.replace("  size: 28", "  size: 30")
    _expect_bad(cli, _write(tmp_path, text), "image.size", "not a multiple of the patch size 14",
                line=_line_of(text, "  size:"))


def test_duplicate_keys(cli, tmp_path):
    text = GOOD + "width: 288\n"
    msg = _expect_bad(cli, _write(tmp_path, text), "width", "duplicate key", line=len(text.splitlines()))
    assert f"first at line {_line_of(GOOD, 'width')}" in msg


@pytest.mark.parametrize("text,kind", [("- 1\n- 2\n", "list"), ("just a string\n", "scalar")])
def test_non_mapping_document(cli, tmp_path, text, kind):
    _expect_bad(cli, _write(tmp_path, text), f"the document is a {kind}")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_file(cli, tmp_path, text):
    _expect_bad(cli, _write(tmp_path, text), "empty")


def test_file_over_one_mib(cli, tmp_path):
    _expect_bad(cli, _write(tmp_path, GOOD + "#" * (1 << 20) + "\n"), "over the 1 MiB limit")


def test_alias_expansion_bomb(cli, tmp_path):
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, n in enumerate("bcdefg"):
        prev = "abcdefg"[i]
        bomb.append(f"{n}: &{n} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]")
    _expect_bad(cli, _write(tmp_path, "\n".join(bomb) + "\n"), "after expanding aliases")


def test_non_utf8_bytes(cli, tmp_path):
    raw = GOOD.encode().replace(b"vit-small", b"vit-\xffsmall", 1)
    line = next(i for i, ln in enumerate(GOOD.splitlines(), 1) if "vit-small" in ln)
    _expect_bad(cli, _write(tmp_path, raw), "not UTF-8", "0xff", line=line)


def test_invalid_yaml_syntax(cli, tmp_path):
    _expect_bad(cli, _write(tmp_path, GOOD + "width: [1, 2\n"), "not valid YAML")


def test_bad_choice_lists_valid_values(cli, tmp_path):
    _expect_bad(cli, _write(tmp_path, GOOD.replace("activation: gelu_tanh", "activation: relu")),
                "activation", "valid: gelu, gelu_tanh")


def test_missing_file(cli, tmp_path):
    _expect_bad(cli, tmp_path / "nope.yaml", "no such model file")


def test_bad_target(cli, tmp_path):
    from conftest import TARGET
    text = TARGET.read_text().replace("tiles: 1472", "tiles: -3")
    p = _write(tmp_path, text, "t.yaml")
    pix = tmp_path / "x.npy"
    np.save(pix, np.zeros((1, 3, 28, 28), np.float32))
    r = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", tmp_path / "y.npy", "--target", p)
    assert r.code == 2 and "Traceback" not in r.err
    assert re.search(rf"{re.escape(str(p))}:\d+: tiles: -3 is below the minimum", r.err), r.err


def test_bad_pixels_shape(cli, tmp_path):
    pix = tmp_path / "x.npy"
    np.save(pix, np.zeros((1, 3, 27, 28), np.float32))
    r = cli("reference", MODELS / "vit-small.yaml", "--pixels", pix, "-o", tmp_path / "y.npy")
    assert r.code == 2 and "is not [batch, 3, 28, 28]" in r.err and "Traceback" not in r.err


def test_bad_batch_and_layers(cli):
    r = cli("show", MODELS / "vit-small.yaml", "--batch", "0")
    assert r.code == 2 and "--batch" in r.err
    r = cli("show", MODELS / "vit-small.yaml", "--layers", "0")
    assert r.code == 2 and "--layers" in r.err


def test_negative_slack_effort(cli, tmp_path):
    r = cli("solve", MODELS / "vit-small.yaml", "--slack-effort", "-1", "-o", tmp_path / "x")
    assert r.code == 2 and "--slack-effort" in r.err and "0 skips it" in r.err
