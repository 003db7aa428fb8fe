"""Verify placement.json against the plan, re-deriving every tile's buffers from the checker's own space.

Trusts nothing in the artefact but the offsets: for every tile it derives which buffers the plan allocates
(with sizes and live steps), the memory map's fixed reservations and code, and the exchange tables' whole
elements; then checks that the artefact lists exactly those buffers once per tile, each inside its range
(region 0 for tables and code, region 1 for interleaved data, standard data anywhere but never across the
region boundary), aligned, the fixed ones at their addresses, no two live at one step overlapping, and the
conflicts the checker derives (send source and receive destination of one transfer on one tile; a GEMM's
left operand and output) in different memory elements. Shares no code with ipuplan.backend.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..formats import PLACEMENT
from .validate import Invalid, get

CODE = "code beyond the window and supervisor program"
CODE_WINDOW = "code window"
TABLES = "exchange tables"


def _names(whats: list[str]) -> list[str]:
    seen: dict[str, int] = defaultdict(int)
    out = []
    for w in whats:
        seen[w] += 1
        out.append(w if seen[w] == 1 else f"{w} #{seen[w]}")
    return out


def _support(target, lim) -> list[tuple[str, int, int]]:
    """(name, size, required offset) of the memory map's reservations, the code window and the rest of the code."""
    mm = target.memory_map
    out = [(r.name, r.size, r.start - mm.base) for r in mm.reservations]
    out.append((CODE_WINDOW, mm.code_window_bytes, mm.code_window[0] - mm.base))
    rest = lim.support - mm.fixed_bytes - mm.code_window_bytes
    if rest:
        rest = -(-rest // 8) * 8
        out.append((CODE, rest, lim.region0 - rest))
    return out


def _left_operand(sp, chosen: set, op) -> str | None:
    for name, (prod, cons, idx, _, _) in sp.ends.items():
        if cons == op.key and idx == 0:
            lit = next(k for k in sp.groups[name] if k in chosen)
            return f"{prod} (output)" if lit[5] == "none" else f"{name} (exchanged copy)"
    for idx, kind, key, _ in op.reads:
        if idx == 0 and kind == "input":
            return f"{key} (host input)"
    return None


def derive_conflicts(sp, chosen: set, names: list[str]) -> list[tuple[int, int, np.ndarray]]:
    """(row, row, tiles it holds on) for buffer rows `names`: the send source and receive destination of one
    transfer on a tile that both sends and receives in it; a GEMM's left operand and its output."""
    T = sp.tiles
    by_what = defaultdict(list)
    for k, n in enumerate(names):
        by_what[n.split(" #")[0]].append(k)
    conf = []
    for lit, c, s, d in sp.xends:
        if lit in chosen:
            both = (c.send_bytes > 0) & (c.recv_bytes > 0)
            conf += [(i, j, both) for i in by_what.get(s, ()) for j in by_what.get(d, ()) if i != j]
    ops = {o.key: o for o in sp.prog.ops}
    for lit, a, b in sp.apart:
        if lit in chosen:
            op = ops[lit[1]]
            ends = [_left_operand(sp, chosen, op) if f == "x" else f"{op.key} (output)" if f == "out" else f
                    for f in (a, b)]
            conf += [(i, j, np.ones(T, bool)) for i in by_what.get(ends[0], ()) for j in by_what.get(ends[1], ())]
    return conf


def selected_names(sp, chosen: set) -> tuple[list[int], list[str]]:
    """The data terms of the chosen literals and their buffer names (duplicates numbered in order)."""
    sel = [k for k, (li, *_rest) in enumerate(sp.mem) if sp.lits[li] in chosen]
    return sel, _names([sp.mem[k][4] for k in sel])


def check_placement(doc, sp, chosen: set, lim, target, rep) -> None:
    """Append violations to `rep` (raises Invalid for a malformed artefact)."""
    W = "placement.json"
    if not isinstance(doc, dict) or doc.get("format") != PLACEMENT:
        raise Invalid(f"{W}: not a placement of format {PLACEMENT}")
    T, nsteps = sp.tiles, sp.prog.nsteps
    seeds = not lim.tables_in_memory
    base = 0 if seeds else target.memory_map.base
    if get(doc, "base", W) != base or get(doc, "capacity", W) != lim.usable:
        raise Invalid(f"{W}: base/capacity {doc.get('base')!r}/{doc.get('capacity')!r} disagree with the target "
                      f"({base}/{lim.usable})")
    # the checker's buffers: one row per selected data term, then the tables
    sel, names = selected_names(sp, chosen)
    D = sp.arrays[0]
    sizes = np.stack([D[k] for k in sel]) if sel else np.zeros((0, T), np.int64)
    span = [(sp.mem[k][2], sp.mem[k][3]) for k in sel]
    il = [sp.mem[k][1] == "il" for k in sel]
    tables = np.zeros(T, np.int64)
    X, xl = sp.arrays[5], sp.arrays[7]
    if len(xl):
        mask = np.array([sp.lits[i] in chosen for i in xl], bool)
        tables = X[mask].sum(0)
    row = {n: k for k, n in enumerate(names)}
    support = [] if seeds else _support(target, lim)
    if seeds and lim.support:
        support = [("seeds' support reserve", lim.support, 0)]
    fixed = {n: (s, o) for n, s, o in support}
    alloc = lim.table_alloc(tables)
    conf = derive_conflicts(sp, chosen, names)
    grid = (target.region0_element_bytes, target.region1_element_bytes)
    seen = np.zeros(T, np.int64)
    groups = get(doc, "groups", W)
    if not isinstance(groups, list):
        raise Invalid(f"{W}.groups: is not a list")
    bad = 0
    for gi, grp in enumerate(groups):
        where = f"{W}.groups[{gi}]"
        tiles = _tiles(get(grp, "tiles", where), T, where)
        np.add.at(seen, tiles, 1)
        bufs = get(grp, "buffers", where)
        if not isinstance(bufs, list):
            raise Invalid(f"{where}.buffers: is not a list")
        rec = {}
        for bi, b in enumerate(bufs):
            if not (isinstance(b, list) and len(b) == 5 and isinstance(b[0], str)
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in b[1:])):
                raise Invalid(f"{where}.buffers[{bi}]: not [name, offset, size, first, last]")
            if b[0] in rec:
                raise Invalid(f"{where}.buffers[{bi}]: {b[0]!r} is listed twice")
            rec[b[0]] = b[1:]
        for msg in _check_group(rec, tiles, names, row, sizes, span, il, fixed, alloc, conf, lim, nsteps, grid):
            rep.fail(f"{where} (tiles {_show(tiles)}): {msg}")
            bad += 1
            if bad >= 20:
                return
    if (seen != 1).any():
        t = int(np.flatnonzero(seen != 1)[0])
        rep.fail(f"{W}: tile {t} is placed {int(seen[t])} times (every tile exactly once)")
        return
    if not bad:
        top = max((o + s for g in groups for _, (o, s, _, _) in
                   ((b[0], b[1:]) for b in g["buffers"])), default=0)
        rep.lines.append(f"placement: {len(groups)} tile groups, every buffer of all {T} tiles at an address "
                         f"(highest end {top:,} B above 0x{base:x}); ranges, alignment, liveness overlaps and "
                         "element conflicts verified")


def _tiles(runs, T: int, where: str) -> np.ndarray:
    if not isinstance(runs, list) or not runs:
        raise Invalid(f"{where}.tiles: not a list of [first, last] runs")
    out = []
    for r in runs:
        if not (isinstance(r, list) and len(r) == 2 and all(isinstance(v, int) for v in r) and 0 <= r[0] <= r[1] < T):
            raise Invalid(f"{where}.tiles: {r!r} is not a run of tiles 0..{T - 1}")
        out.extend(range(r[0], r[1] + 1))
    return np.array(out, np.int64)


def _show(tiles: np.ndarray) -> str:
    return f"{int(tiles[0])}" + (f" and {len(tiles) - 1} more" if len(tiles) > 1 else "")


def _check_group(rec, tiles, names, row, sizes, span, il, fixed, alloc, conf, lim, nsteps, grid):
    """Violations of one tile group (messages)."""
    last = nsteps - 1
    r0, cap = lim.region0, lim.usable
    seeds = not lim.tables_in_memory
    # which buffers every tile of the group must have, and their sizes: the same on every tile of the group
    sub = sizes[:, tiles]
    want = {}
    for k in np.flatnonzero(sub.any(1)):
        col = sub[k]
        if (col != col[0]).any():
            yield f"{names[k]} has different sizes on tiles of one group"
            return
        want[names[k]] = (int(col[0]), *span[k])
    ta = alloc[tiles]
    if (ta != ta[0]).any():
        yield "exchange tables differ in size on tiles of one group"
        return
    if not seeds and ta[0]:
        want[TABLES] = (int(ta[0]), 0, last)
    for n, (s, _) in fixed.items():
        want[n] = (s, 0, last)
    for n in sorted(set(want) ^ set(rec)):
        yield (f"{n}: listed but the plan allocates no such buffer here" if n in rec else f"{n}: not placed")
    if set(want) != set(rec):
        return
    items = []
    for n, (size, first, lst) in want.items():
        off, s, f, la = rec[n]
        if (s, f, la) != (size, first, lst):
            yield f"{n}: size/steps {s}/{f}..{la} disagree with the plan ({size}/{first}..{lst})"
            continue
        k = row.get(n)
        if n in fixed:
            if off != fixed[n][1]:
                yield f"{n}: at {off}, the memory map fixes it at {fixed[n][1]}"
        elif n == TABLES:
            el = grid[0]
            if off % el or off < 0 or off + s > r0:
                yield f"{n}: [{off}, {off + s}) is not whole region-0 elements"
        elif k is not None and il[k] and not seeds:
            if off % 32 or off < r0 or off + s > cap:
                yield f"{n}: interleaved [{off}, {off + s}) is not 32 B aligned in region 1 [{r0}, {cap})"
        elif off % 8 or off < 0 or off + s > cap or (not seeds and off < r0 < off + s):
            yield f"{n}: [{off}, {off + s}) is not 8 B aligned inside one region of [0, {cap})"
        items.append((n, off, s, first, lst))
    order = sorted(items, key=lambda x: x[1])
    for a in range(len(order)):  # overlaps: sorted by offset, compare with those that start below a's end
        na, oa, sa, fa, la = order[a]
        for b in range(a + 1, len(order)):
            nb, ob, sb, fb, lb = order[b]
            if ob >= oa + sa:
                break
            if fa <= lb and fb <= la and sa and sb:
                yield f"{na} and {nb} overlap at [{max(oa, ob)}, {min(oa + sa, ob + sb)}) while both live"
    if seeds:
        return
    t0 = int(tiles[0])
    for i, j, on in conf:
        if not on[tiles].any() or not sizes[i, t0] or not sizes[j, t0]:
            continue
        a, b = rec[names[i]], rec[names[j]]
        if not (a[2] <= b[3] and b[2] <= a[3]):
            continue
        ea, eb = _elements(a[0], a[1], lim.region0, grid), _elements(b[0], b[1], lim.region0, grid)
        if ea[0] == eb[0] and ea[1] <= eb[2] and eb[1] <= ea[2]:
            yield f"{names[i]} and {names[j]} share a memory element ({'region 0' if ea[0] == 0 else 'region 1'})"


def _elements(off: int, size: int, r0: int, grid) -> tuple[int, int, int]:
    """(region, first element, last element) of [off, off + size)."""
    if off < r0:
        return 0, off // grid[0], (off + size - 1) // grid[0]
    return 1, (off - r0) // grid[1], (off + size - 1 - r0) // grid[1]
