"""Validate a placement against its instance, written apart from the search: every buffer placed once, inside
its window, aligned, fixed offsets kept, no two live-at-once buffers overlapping, no straddled barrier, and
conflicting buffers in different memory elements. Returns the violations (empty: valid)."""

from __future__ import annotations

import numpy as np

from .problem import Instance


def violations(inst: Instance, offsets) -> list[str]:
    out = []
    n = len(inst.buffers)
    if len(offsets) != n:
        return [f"{len(offsets)} offsets for {n} buffers"]
    for i, (b, o) in enumerate(zip(inst.buffers, offsets)):
        if o is None:
            out.append(f"{b.name}: not placed")
            continue
        hi = inst.capacity if b.hi is None else b.hi
        if o < b.lo or o + b.size > hi:
            out.append(f"{b.name}: [{o}, {o + b.size}) outside [{b.lo}, {hi})")
        if b.align > 1 and o % b.align:
            out.append(f"{b.name}: offset {o} is not {b.align}-byte aligned")
        if b.fixed is not None and o != b.fixed:
            out.append(f"{b.name}: at {o}, required at {b.fixed}")
        for x in inst.barriers:
            if o < x < o + b.size:
                out.append(f"{b.name}: [{o}, {o + b.size}) straddles {x}")
    if out:
        return out
    start = np.array(offsets, np.int64)
    size = np.array([b.size for b in inst.buffers], np.int64)
    first = np.array([b.first for b in inst.buffers])
    last = np.array([b.last for b in inst.buffers])
    live = (first[:, None] <= last[None, :]) & (first[None, :] <= last[:, None])
    space = (start[:, None] < (start + size)[None, :]) & (start[None, :] < (start + size)[:, None])
    both = live & space & (size[:, None] > 0) & (size[None, :] > 0)
    np.fill_diagonal(both, False)
    for i, j in zip(*np.nonzero(np.triu(both))):
        out.append(f"{inst.buffers[i].name} and {inst.buffers[j].name} overlap while both live")
    for i, j in sorted(inst.conflicts):
        a, b = inst.buffers[i], inst.buffers[j]
        if not (a.first <= b.last and b.first <= a.last) or not a.size or not b.size:
            continue
        ga, a0, a1 = inst.elements_of(start[i], a.size)
        gb, b0, b1 = inst.elements_of(start[j], b.size)
        if ga == gb and a0 <= b1 and b0 <= a1:
            out.append(f"{a.name} and {b.name} share a memory element")
    return out
