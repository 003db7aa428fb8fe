"""Implementations as plan.json and certificates record them, and the catalogue regenerated for a
recorded instance (what a certificate's scope statement refers to)."""

from __future__ import annotations

import dataclasses

from ..layout import Layout
from .impl import Ctx, Impl


def layout_record(lay: Layout) -> dict:
    """A layout as plain fields (enums by value)."""
    d = dataclasses.asdict(lay)
    d["mem"] = lay.mem.value
    for k in ("col_skew", "row_skew"):  # only rotating operands are skewed: unskewed records stay as they were
        if not d[k]:
            del d[k]
    return d


def choice_record(im: Impl, i: int) -> dict:
    """An implementation as plan.json records a choice (and a certificate lists a candidate)."""
    rec = {"impl": i, "label": im.label, **im.fields}
    rec["output"] = layout_record(im.out)
    return rec


def catalogue_records(impls: dict[str, list[Impl]]) -> dict[str, list[dict]]:
    return {op: [choice_record(im, i) for i, im in enumerate(v)] for op, v in impls.items()}


def regenerate_catalogue(graph, target, batch: int, kind: str = "shaped") -> dict[str, list[dict]]:
    """This version's catalogue (`kind`: "rotating", "shaped" or "grid") for an instance, as records."""
    from . import build_catalogue
    from .impl import Catalogue
    from .schedule import build_schedule
    return catalogue_records(build_catalogue(Ctx(target, build_schedule(graph), batch, Catalogue(kind))))
