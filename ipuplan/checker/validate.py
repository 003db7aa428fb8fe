"""Reading plan.json values the checker is asked to trust: every value type- and range-checked, every failure
a message naming the value's path in the file and what would be valid (`plan.json: choices.encoder/gelu.
output.row_align: 0 is invalid; ...`)."""

from __future__ import annotations


class Invalid(Exception):
    """A recorded value the checker rejects (the artefact, not the user's input, is at fault)."""


def get(rec, key: str, path: str):
    if not isinstance(rec, dict):
        raise Invalid(f"{path}: is not a mapping")
    if key not in rec:
        raise Invalid(f"{path}.{key}: missing")
    return rec[key]


def integer(rec, key: str, path: str, lo: int, hi: int) -> int:
    v = get(rec, key, path)
    if not isinstance(v, int) or isinstance(v, bool):
        raise Invalid(f"{path}.{key}: {v!r} is not an integer; valid: {lo}..{hi}")
    if not lo <= v <= hi:
        raise Invalid(f"{path}.{key}: {v} is invalid; valid: {lo}..{hi}")
    return v


def one_of(rec, key: str, path: str, options) -> str:
    v = get(rec, key, path)
    if v not in options:
        raise Invalid(f"{path}.{key}: {v!r} is invalid; valid: {', '.join(map(str, options))}")
    return v


def boolean(rec, key: str, path: str) -> bool:
    v = get(rec, key, path)
    if not isinstance(v, bool):
        raise Invalid(f"{path}.{key}: {v!r} is not true or false")
    return v


def optional_equal(rec, key: str, path: str, want) -> None:
    """A label the checker derives itself: absent is fine, present must agree."""
    if isinstance(rec, dict) and key in rec and rec[key] != want:
        raise Invalid(f"{path}.{key}: {rec[key]!r} disagrees with the model ({want!r})")


GEOMETRY = ("pr", "pc", "replicas", "start", "row_stride", "col_stride", "rep_stride", "row_groups", "group_stride",
            "row_align", "col_align", "row_grain", "col_grain")


def output_layout(rec, path: str, T: int, rows: int, cols: int, elem: int) -> dict:
    """An element-wise op's recorded output layout: shape fields must be the tensor's, geometry fields in range
    and consistent; returned canonical (default strides resolved)."""
    lay = get(rec, "output", path)
    p = f"{path}.output"
    for k, want in (("rows", rows), ("cols", cols), ("elem", elem)):
        v = get(lay, k, p)
        if v != want or isinstance(v, bool):
            raise Invalid(f"{p}.{k}: {v!r} is invalid; valid: {want} (the tensor's)")
    if boolean(lay, "flat", p):
        raise Invalid(f"{p}.flat: true is invalid; valid: false (only parameter homes are flat)")
    per_word = max(1, 4 // elem)
    out = {"rows": rows, "cols": cols, "elem": elem, "flat": False,
           "mem": one_of(lay, "mem", p, ("std", "il")),
           "pr": integer(lay, "pr", p, 1, rows), "pc": integer(lay, "pc", p, 1, -(-cols // per_word)),
           "replicas": integer(lay, "replicas", p, 1, T), "start": integer(lay, "start", p, 0, T - 1),
           "row_stride": integer(lay, "row_stride", p, 0, T), "col_stride": integer(lay, "col_stride", p, 0, T),
           "row_groups": integer(lay, "row_groups", p, 1, rows), "row_align": integer(lay, "row_align", p, 1, 64),
           "col_align": integer(lay, "col_align", p, 1, 64), "row_grain": integer(lay, "row_grain", p, 1, 4),
           "col_grain": integer(lay, "col_grain", p, 0, 4)}
    g = out["row_groups"]
    if rows % g or out["pr"] % g:
        raise Invalid(f"{p}.row_groups: {g} is invalid with pr {out['pr']} on {rows} rows; valid: a divisor of both")
    # a grid of more cells than tiles wraps (tiles are taken modulo T), so the strides a default resolves to may
    # exceed T: each is valid up to T or its default, whichever is larger
    default = canonical(dict(out, rep_stride=0, group_stride=0))
    for k in ("rep_stride", "group_stride"):
        out[k] = integer(lay, k, p, 0, max(T, default[k]))
    return canonical(out)


def canonical(lay: dict) -> dict:
    """Default strides (0) resolved: equal geometry, equal record."""
    lay = dict(lay)
    pc = 1 if lay["flat"] else lay["pc"]
    lay["row_stride"] = lay["row_stride"] or pc
    lay["rep_stride"] = lay["rep_stride"] or lay["pr"] * pc
    lay["group_stride"] = lay["group_stride"] or (lay["pr"] // lay["row_groups"]) * lay["row_stride"]
    if lay.get("col_grain") == max(1, 4 // lay["elem"]):
        lay["col_grain"] = 0  # the default grain, spelled one way
    return lay
