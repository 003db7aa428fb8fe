"""Strict YAML reading: every value keeps its file and line; hard limits against hostile input."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from .errors import Loc, YamlError

MAX_FILE_BYTES = 1 << 20
MAX_NODES = 10_000  # after alias expansion; real declarations have well under 200


@dataclass(frozen=True)
class Node:
    """A YAML value with its location: scalars as Python values, mappings as dict[str, Node]."""

    value: Any
    loc: Loc

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.value, dict)


def load_yaml(path: str | Path, what: str) -> Node:
    """Read one YAML mapping document from `path`, rejecting anything odd with a located error."""
    p = Path(path)
    name = str(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise YamlError(Loc(name), None, f"no such {what} file", "pass the path of a .yaml file") from None
    except OSError as e:
        raise YamlError(Loc(name), None, f"cannot read {what} file ({e.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise YamlError(Loc(name), None, f"{what} file is {len(raw):,} bytes, over the 1 MiB limit",
                        "a declaration is a few hundred bytes of YAML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise YamlError(Loc(name, line), None, f"byte 0x{raw[e.start]:02x} at offset {e.start} is not UTF-8",
                        "save the file as UTF-8") from None
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()):
        raise YamlError(Loc(name), None, f"{what} file is empty", f"a {what} file is a YAML mapping of keys")
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else 0
        raise YamlError(Loc(name, line), None, f"not valid YAML: {e.problem}") from None
    except yaml.YAMLError as e:
        raise YamlError(Loc(name), None, f"not valid YAML: {e}") from None
    docs = [d for d in docs if d is not None]
    if len(docs) != 1:
        raise YamlError(Loc(name), None, f"{len(docs)} YAML documents", "a declaration is exactly one document")
    return _Converter(name).convert(docs[0], top=True)


class _Converter:
    def __init__(self, name: str):
        self.name = name
        self.count = 0
        self.constructor = yaml.SafeLoader("")

    def convert(self, node: yaml.Node, top: bool = False) -> Node:
        self.count += 1
        loc = Loc(self.name, node.start_mark.line + 1)
        if self.count > MAX_NODES:
            raise YamlError(loc, None, f"more than {MAX_NODES:,} values after expanding aliases",
                            "do not use anchors/aliases to multiply content")
        if top and not isinstance(node, yaml.MappingNode):
            kind = "list" if isinstance(node, yaml.SequenceNode) else "scalar"
            raise YamlError(loc, None, f"the document is a {kind}", "a declaration is a mapping of `key: value`")
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Node] = {}
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":
                    raise YamlError(Loc(self.name, knode.start_mark.line + 1), None, "merge keys (<<) are not allowed",
                                    "write each key out")
                if not isinstance(knode, yaml.ScalarNode):
                    raise YamlError(Loc(self.name, knode.start_mark.line + 1), None, "keys must be plain strings")
                key = str(knode.value)
                kline = knode.start_mark.line + 1
                if key in out:
                    raise YamlError(Loc(self.name, kline), key,
                                    f"duplicate key (first at line {out[key].loc.line})", "give each key once")
                out[key] = self.convert(vnode)
            return Node(out, loc)
        if isinstance(node, yaml.SequenceNode):
            return Node([self.convert(v) for v in node.value], loc)
        return Node(self.constructor.construct_object(node), loc)


# --- typed field reading -------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One key of a declaration: its type, range, choices and default (MISSING = required)."""

    key: str
    kind: type
    help: str
    default: Any = ...
    lo: float | None = None
    hi: float | None = None
    choices: Sequence[Any] | None = None


def _type_name(t: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "a mapping",
            list: "a list"}[t]


def read_fields(node: Node, fields: Sequence[Field], error: Callable[..., Exception], prefix: str = "",
                ) -> tuple[dict[str, Any], dict[str, Loc]]:
    """Check `node` against `fields`; return values and per-key locations. Unknown keys are errors."""
    where = prefix.rstrip(".") or "document"
    if not node.is_mapping:
        raise error(node.loc, prefix.rstrip(".") or None, "expected a mapping", "write `key: value` lines")
    known = {f.key: f for f in fields}
    for key, sub in node.value.items():
        if key not in known:
            near = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
            hint = f"did you mean `{near[0]}`?" if near else f"valid keys in {where}: {', '.join(known)}"
            raise error(sub.loc, prefix + key, "unknown key", hint)
    values: dict[str, Any] = {}
    locs: dict[str, Loc] = {}
    for f in fields:
        full = prefix + f.key
        if f.key not in node.value:
            if f.default is ...:
                raise error(node.loc, full, "missing required key", f"add `{f.key}:` ({f.help})")
            values[f.key] = f.default
            locs[f.key] = node.loc
            continue
        sub = node.value[f.key]
        locs[f.key] = sub.loc
        if f.kind is dict:
            values[f.key] = sub
            if not sub.is_mapping:
                raise error(sub.loc, full, f"expected a mapping, got {sub.value!r}", f.help)
            continue
        if f.kind is list:
            values[f.key] = sub
            if not isinstance(sub.value, list):
                raise error(sub.loc, full, "expected a list", f.help)
            continue
        v = sub.value
        ok = isinstance(v, f.kind) and not (f.kind in (int, float) and isinstance(v, bool))
        if f.kind is float and isinstance(v, int) and not isinstance(v, bool):
            v, ok = float(v), True
        if not ok:
            got = "a mapping" if isinstance(v, dict) else "a list" if isinstance(v, list) else repr(v)
            raise error(sub.loc, full, f"expected {_type_name(f.kind)}, got {got}", f.help)
        if isinstance(v, float) and not math.isfinite(v):
            raise error(sub.loc, full, f"{v} is not a finite number", f.help)
        if f.choices is not None and v not in f.choices:
            raise error(sub.loc, full, f"{v!r} is not a valid choice",
                        "valid: " + ", ".join(str(c) for c in f.choices))
        if f.lo is not None and v < f.lo:
            raise error(sub.loc, full, f"{v} is below the minimum {f.lo:g}", f.help)
        if f.hi is not None and v > f.hi:
            raise error(sub.loc, full, f"{v} is above the maximum {f.hi:g}", f.help)
        values[f.key] = v
    return values, locs
