"""Every access a package's program makes lands in data the placement holds at that step, at every Repeat iteration:
vertex fields (AMP fields in region 1, none across the end of region 0), exchange runs (whole words within the
transfer limit, source and every destination) and host binding slabs (every element of a non-constant binding
bound exactly once). The checker's own statement, from the placement, the target and ipuplan's codelets; it
shares no code with the package writer's validation (`ipuplan/package/validate.py`)."""

from __future__ import annotations

import numpy as np

from ..codelets import BY_NAME
from ..ir.graph import DType
from .placement import CODE, CODE_WINDOW, TABLES


ITEMSIZE = {d.short: d.itemsize for d in DType}


class AccessError(Exception):
    """An access outside the data its step holds, named by tile, step, vertex or run, iteration and field."""


def _support_names(target) -> set[str]:
    """Buffers no field, run or binding may touch: the memory map's reservations, the code, the tables (the
    descriptors are recognized by name)."""
    return {r.name for r in target.memory_map.reservations} | {CODE_WINDOW, CODE, TABLES}


class Held:
    """The placement's data buffers, per tile group; at a step, the one holding [lo, hi) on a tile.

    Live buffers of one group never overlap (the placement check proves it), so the buffer that holds [lo, hi),
    if any, is the live one of that group with the least end at or past hi; it holds the range when it also
    starts at or before lo."""

    def __init__(self, placement: dict, target):
        self.owner = np.full(target.tiles, -1, np.int64)
        support = _support_names(target)
        base = int(placement["base"])
        self.tables = np.zeros(target.tiles, np.int64)  # each tile's exchange-tables buffer
        rows = []
        for gi, g in enumerate(placement["groups"]):
            tables = sum(int(b[2]) for b in g["buffers"] if b[0] == TABLES)
            for lo, hi in g["tiles"]:
                self.owner[lo:hi + 1], self.tables[lo:hi + 1] = gi, tables
            rows += [(gi, base + int(off), base + int(off) + int(size), int(first), int(last))
                     for name, off, size, first, last in g["buffers"]
                     if int(size) > 0 and name not in support and "descriptors" not in name]
        a = np.array(rows, np.int64).reshape(-1, 5)
        self.group, self.start, self.end, self.first, self.last = a.T
        self._steps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _live(self, step: int):
        if step not in self._steps:
            live = np.flatnonzero((self.first <= step) & (self.last >= step))
            key = self.group[live] * (1 << 40) + self.end[live]
            order = np.argsort(key, kind="stable")
            self._steps[step] = key[order], live[order]
        return self._steps[step]

    def holds(self, step: int, tile: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Whether a data buffer live at `step` on each `tile` holds [lo, hi)."""
        tile = np.asarray(tile, np.int64)
        g = np.where((tile >= 0) & (tile < len(self.owner)), self.owner[np.clip(tile, 0, len(self.owner) - 1)], -1)
        keys, idx = self._live(step)
        if not len(keys):
            return np.zeros(len(tile), bool)
        k = np.searchsorted(keys, g * (1 << 40) + hi, side="left")
        b = idx[np.minimum(k, len(keys) - 1)]
        return (g >= 0) & (k < len(keys)) & (self.group[b] == g) & (self.start[b] <= lo) & (lo < hi)


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _fields(held: Held, s, steps: dict[str, int], iterations: range, region0: int, tiles: int) -> int:
    """Check one compute set's vertex fields; `steps` gives the step a field's data must be live at (default
    the compute set's own)."""
    n = 0
    for v in s.vertices:
        codelet = BY_NAME.get(v.codelet)
        where = f"step {s.step} ({s.op} {s.name}) {v.codelet}"
        if codelet is None:
            raise AccessError(f"{where}: not one of ipuplan's codelets")
        V, F = len(v.tile), len(codelet.fields)
        if any(getattr(v, c).shape != (V, F) for c in ("addr", "rows", "row_bytes", "pitch", "stride")):
            raise AccessError(f"{where}: the field columns are not [{V} vertices, {F} fields]")
        if V and ((v.tile < 0) | (v.tile >= tiles)).any():
            raise AccessError(f"{where} vertex {_first((v.tile < 0) | (v.tile >= tiles))}: no such tile")
        for f, name in enumerate(codelet.fields):
            k = np.flatnonzero(v.addr[:, f] >= 0)
            if not len(k):
                continue
            rows, rb, pitch = v.rows[k, f], v.row_bytes[k, f], v.pitch[k, f]
            bad = (rows < 1) | (rb < 1) | ((rows > 1) & (pitch < rb))
            if bad.any():
                j = _first(bad)
                raise AccessError(f"tile {int(v.tile[k[j]])} {where} vertex {int(k[j])}: field {name} has "
                                  f"{int(rows[j])} rows of {int(rb[j])} B at pitch {int(pitch[j])}")
            extent = (rows - 1) * pitch + rb
            step = steps.get(name, s.step)
            for it in iterations:  # addresses are linear in the iteration: each one is checked as it runs
                lo = v.addr[k, f] + it * v.stride[k, f]
                hi = lo + extent
                at = lambda j: (f"tile {int(v.tile[k[j]])} {where} vertex {int(k[j])}"
                                + (f" iteration {it}" if len(iterations) > 1 else "") + f": field {name} "
                                f"[{int(lo[j]):#x}, +{int(extent[j])})")
                if name in codelet.interleaved and (lo < region0).any():
                    raise AccessError(f"{at(_first(lo < region0))} is not in interleaved memory (region 1)")
                across = (lo < region0) & (hi > region0)
                if across.any():
                    raise AccessError(f"{at(_first(across))} crosses the end of region 0")
                ok = held.holds(step, v.tile[k], lo, hi)
                if not ok.all():
                    raise AccessError(f"{at(_first(~ok))} is not inside a data buffer live at step {step}")
        n += V
    return n


def _runs(held: Held, s, iterations: range, target) -> int:
    """Check one exchange's runs: sizes, tiles, the source at every iteration, every destination."""
    N, T = len(s.src), target.tiles
    where = f"step {s.step} ({s.op} {s.name}) exchange"
    if s.dst.ndim != 2 or s.dst.shape[0] != N or s.dst_addr.shape != s.dst.shape or \
            any(getattr(s, c).shape != (N,) for c in ("src_addr", "nbytes", "src_stride")):
        raise AccessError(f"{where}: its run columns are not [{N}] and [{N}, replicas]")
    cap = target.encoding.transfer_max_words * 4
    bad = (s.nbytes < 4) | (s.nbytes % 4 != 0) | (s.nbytes > cap)
    if bad.any():
        raise AccessError(f"{where} run {_first(bad)}: {int(s.nbytes[_first(bad)])} B is not a whole number of words "
                          f"from 4 to the transfer limit of {cap} B")
    bad = (s.src < 0) | (s.src >= T) | (s.dst >= T).any(1) | (s.dst < -1).any(1) | (s.dst < 0).all(1)
    if bad.any():
        raise AccessError(f"{where} run {_first(bad)}: a tile out of range, or no destination")
    for it in iterations:
        lo = s.src_addr + it * s.src_stride
        ok = held.holds(s.step, s.src, lo, lo + s.nbytes)
        if not ok.all():
            j = _first(~ok)
            raise AccessError(f"tile {int(s.src[j])} {where} run {j}" + (f" iteration {it}" if len(iterations) > 1
                              else "") + f": source [{int(lo[j]):#x}, +{int(s.nbytes[j])}) is not inside a data "
                              f"buffer live at step {s.step}")
    r, c = np.nonzero(s.dst >= 0)
    lo = s.dst_addr[r, c]
    ok = held.holds(s.step, s.dst[r, c], lo, lo + s.nbytes[r])
    if not ok.all():
        j = _first(~ok)
        raise AccessError(f"tile {int(s.dst[r[j], c[j]])} {where} run {int(r[j])}: destination [{int(lo[j]):#x}, "
                          f"+{int(s.nbytes[r[j]])}) is not inside a data buffer live at step {s.step}")
    return N


def _bindings(held: Held, prog, last_step: int) -> int:
    """Each binding's slabs within its tensor, every element of a non-constant one bound exactly once, every
    slab of every copy inside data live where the host reads or writes it (the output after the last step,
    everything else before the first)."""
    total = 0
    for b in prog.bindings:
        s, where = b.slabs, f"binding {b.name}"
        numel = int(np.prod(b.shape)) if b.shape else 1
        end = s.e0 + (s.rows - 1) * s.estride + s.n
        if ((s.n < 1) | (s.rows < 1) | (s.e0 < 0) | (end > numel)).any():
            raise AccessError(f"{where}: a slab lies outside the tensor's {numel} elements")
        if b.role != "const":  # a constant table is laid beside each block that reads it: only coverage matters
            cover = np.zeros(numel, np.int64)
            for row in range(int(s.rows.max(initial=0))):
                m = s.rows > row
                first = s.e0[m] + row * s.estride[m]
                np.add.at(cover, np.repeat(first, s.n[m]) + _ramp(s.n[m]), 1)
            if (cover != 1).any():
                e = _first(cover != 1)
                raise AccessError(f"{where}: element {e} is bound {int(cover[e])} times (each exactly once)")
        esize = ITEMSIZE.get(b.dtype)  # the model's dtype: the manifest comparison has checked it is
        if esize is None:
            raise AccessError(f"{where}: dtype {b.dtype!r} is not one of {', '.join(ITEMSIZE)}")
        step = last_step if b.role == "output" else 0
        r, c = np.nonzero(s.tile >= 0)
        extent = (s.rows[r] - 1) * s.pitch[r] + s.n[r] * esize
        for copy in range(b.count):
            lo = s.addr[r, c] + copy * s.stride[r, c]
            ok = held.holds(step, s.tile[r, c], lo, lo + extent)
            if not ok.all():
                j = _first(~ok)
                raise AccessError(f"tile {int(s.tile[r[j], c[j]])} {where}" + (f" copy {copy}" if b.count > 1 else "")
                                  + f": slab [{int(lo[j]):#x}, +{int(extent[j])}) is not inside a data buffer live "
                                  f"at step {step}")
        total += numel * b.count
    return total


def _ramp(n: np.ndarray) -> np.ndarray:
    """0 .. n[i] - 1 for each i, concatenated."""
    return np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)


def check_access(prog, manifest: dict, placement: dict, target) -> dict[str, int]:
    """Raise AccessError at the first access outside held data; return the vertices, runs and bound elements."""
    held = Held(placement, target)
    region0 = target.memory_map.executable_limit
    body = manifest.get("body")
    count = prog.count
    vertices = runs = 0
    for s in prog.steps:
        iterations = range(count if s.section.value == "body" else 1)
        if s.kind == "exchange":
            runs += _runs(held, s, iterations, target)
        else:
            vertices += _fields(held, s, {}, iterations, region0, target.tiles)
    if prog.carry is not None:
        if body is None:
            raise AccessError("a carry without a Repeat body")
        # between iterations i and i + 1: the body's result as its last step left it, into the buffer its first reads
        vertices += _fields(held, prog.carry, {"src": body[1], "dst": body[0]}, range(max(count - 1, 0)), region0,
                            target.tiles)
    over = prog.tables > held.tables
    if over.any():
        i = _first(over)
        raise AccessError(f"tile {i}: {int(prog.tables[i]):,} B of exchange code exceed its {int(held.tables[i]):,} B "
                          "tables buffer")
    elements = _bindings(held, prog, len(prog.step_names) - 1)
    return {"vertices": vertices, "runs": runs, "bound_elements": elements}
