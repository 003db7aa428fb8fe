"""Validate a read package before anything runs: buffers inside the tile and their region, no two live
buffers overlapping, every vertex field and exchange run inside a buffer live at its step at every Repeat
iteration (by arithmetic on the strides), AMP fields in interleaved memory, runs within the transfer limit,
tables within their buffer, bindings covering every element exactly once. The first violation is raised, named
by tile, step, compute set or exchange, vertex or run, iteration and field."""

from __future__ import annotations

import numpy as np

from ..backend.lower.program import ComputeSet, Program
from .archive import PackageError

TABLES = "exchange tables"
CODE = "code window"
BEYOND = "code beyond the window and supervisor program"


class _Live:
    """Which buffer holds [lo, hi) on a tile at a step: the buffers live at a step never overlap on a tile."""

    def __init__(self, prog: Program, reserved: set[str]):
        bt = prog.buffers
        self.bt, self.g = bt, bt.group_of_tile
        self._cache: dict[int, tuple] = {}
        # buffers no vertex field, run or binding may touch: the reservations, code, tables and descriptors
        kinds = np.array([n in reserved or "descriptors" in n for n in bt.names], bool)
        self.reserved = kinds[bt.name] if len(bt.name) else np.zeros(0, bool)

    def data(self, step: int, tile: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(buffer index holding each [lo, hi) on `tile` at `step`, -1 where none does; where it is a
        reservation, code, tables or descriptors instead of data)."""
        b = self.find(step, tile, lo, hi)
        return b, (b >= 0) & self.reserved[np.maximum(b, 0)]

    def at(self, step: int):
        if step not in self._cache:
            bt = self.bt
            live = np.flatnonzero((bt.first <= step) & (bt.last >= step) & (bt.size > 0))
            key = bt.group[live] * (1 << 40) + bt.addr[live]
            o = np.argsort(key, kind="stable")
            self._cache[step] = (key[o], live[o])
        return self._cache[step]

    def find(self, step: int, tile: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Buffer index holding each [lo, hi) on `tile` at `step`, -1 where none does."""
        keys, idx = self.at(step)
        if not len(keys):
            return np.full(len(tile), -1)
        q = self.g[tile] * (1 << 40) + lo
        k = np.searchsorted(keys, q, side="right") - 1
        kk = np.maximum(k, 0)
        b = idx[kk]
        ok = (k >= 0) & (self.bt.group[b] == self.g[tile]) & (hi <= self.bt.addr[b] + self.bt.size[b])
        return np.where(ok, b, -1)


def _fail(path, where: str, problem: str):
    raise PackageError(path, f"{where}: {problem}")


def validate(prog: Program, manifest: dict, path) -> dict:
    """Raise PackageError on the first violation; return a few counts."""
    t = manifest["target"]
    T, base, r0, end = prog.tiles, t["base"], t["region0_end"], t["loadable_end"]
    nsteps = len(prog.step_names)
    _buffers(prog, manifest, path, T, base, r0, end)
    reserved = {r[0] for r in t["reservations"]} | {CODE, BEYOND, TABLES}
    live = _Live(prog, reserved)
    body = manifest.get("body")
    count = prog.count
    cat = {c["name"]: c for c in manifest["codelets"]}
    verts = runs = 0
    for i, s in enumerate(prog.steps):
        if not 0 <= s.step < nsteps:
            _fail(path, f"step {i}", f"plan step {s.step} is outside the program's {nsteps} steps")
        iters = count if (s.section.value == "body") else 1
        if isinstance(s, ComputeSet):
            verts += _compute(path, f"compute set {i} ({s.op} {s.name})", s, s.step, s.step, live, cat, T, r0, iters)
        else:
            runs += _exchange(path, f"exchange {i} ({s.op} {s.name})", s, live, t, T, iters)
    if prog.carry is not None:
        if body is None:
            _fail(path, "carry", "a carry without a Repeat body")
        verts += _compute(path, "carry", prog.carry, body[1], body[0], live, cat, T, r0, 1)
    _tables(prog, path, T)
    elems = _bindings(prog, path, live, nsteps, T)
    return {"vertices": verts, "runs": runs, "bound_elements": elems}


def _buffers(prog, manifest, path, T, base, r0, end):
    bt = prog.buffers
    if len(bt.group_of_tile) != T or (bt.group_of_tile < 0).any():
        _fail(path, "buffers", f"the group table does not cover the {T} tiles")
    lo, hi = bt.addr, bt.addr + bt.size
    bad = (lo < base) | (hi > end) | (bt.size < 0)
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        _fail(path, f"tile {_tile_of(bt, b)} buffer {bt.names[bt.name[b]]!r}",
              f"[{lo[b]:#x}, +{bt.size[b]}) lies outside the tile's memory [{base:#x}, {end:#x})")
    straddle = (lo < r0) & (hi > r0)
    if straddle.any():
        b = int(np.flatnonzero(straddle)[0])
        _fail(path, f"tile {_tile_of(bt, b)} buffer {bt.names[bt.name[b]]!r}",
              f"[{lo[b]:#x}, +{bt.size[b]}) crosses the end of region 0")
    for g in np.unique(bt.group):
        m = np.flatnonzero((bt.group == g) & (bt.size > 0))
        a, z, f, l = lo[m], hi[m], bt.first[m], bt.last[m]
        clash = (a[:, None] < z[None, :]) & (a[None, :] < z[:, None]) & (f[:, None] <= l[None, :]) & \
            (f[None, :] <= l[:, None])
        np.fill_diagonal(clash, False)
        if clash.any():
            i, j = np.argwhere(clash)[0]
            _fail(path, f"tile {_tile_of(bt, m[i])}", f"buffers {bt.names[bt.name[m[i]]]!r} and "
                  f"{bt.names[bt.name[m[j]]]!r} overlap in address and lifetime")


def _tile_of(bt, b: int) -> int:
    return int(np.flatnonzero(bt.group_of_tile == bt.group[b])[0])


def _slab_end(rows, row_bytes, pitch):
    return (rows - 1) * pitch + row_bytes


def _compute(path, where, s: ComputeSet, src_step: int, dst_step: int, live, cat, T, r0, iters) -> int:
    n = 0
    for v in s.vertices:
        if v.codelet not in cat:
            _fail(path, where, f"codelet {v.codelet} is not in the package's catalogue")
        fields = cat[v.codelet]["fields"]
        V = len(v.tile)
        if v.addr.shape != (V, len(fields)) or any(getattr(v, c).shape != (V, len(fields)) for c in
                                                   ("rows", "row_bytes", "pitch", "stride")):
            _fail(path, where, f"{v.codelet}: field columns are not [{V}, {len(fields)}]")
        if V and ((v.tile < 0) | (v.tile >= T)).any():
            k = int(np.flatnonzero((v.tile < 0) | (v.tile >= T))[0])
            _fail(path, f"{where} vertex {k}", f"tile {int(v.tile[k])} is not one of the {T} tiles")
        for f, name in enumerate(fields):
            used = np.flatnonzero(v.addr[:, f] >= 0)
            if not len(used):
                continue
            rows, rb, pitch = v.rows[used, f], v.row_bytes[used, f], v.pitch[used, f]
            if ((rows < 1) | (rb < 1) | (pitch < rb) & (rows > 1)).any():
                k = used[int(np.flatnonzero((rows < 1) | (rb < 1) | (pitch < rb) & (rows > 1))[0])]
                _fail(path, f"tile {int(v.tile[k])} {where} vertex {k}", f"field {name} has a malformed shape")
            size = _slab_end(rows, rb, pitch)
            step = src_step if f == 0 and s.op == "repeat" else dst_step
            # every iteration, by arithmetic on the strides: addresses are linear in the iteration
            its = np.repeat(np.arange(iters), len(used))
            k_of = np.tile(used, iters)
            lo = np.tile(v.addr[used, f], iters) + its * np.tile(v.stride[used, f], iters)
            size = np.tile(size, iters)
            hi = lo + size
            tile = v.tile[k_of]

            def at(k):
                return f"tile {int(tile[k])} {where} vertex {k_of[k]}" + (f" iteration {its[k]}" if iters > 1 else "")
            if name in cat[v.codelet]["interleaved"]:
                below = lo < r0
                if below.any():
                    k = int(np.flatnonzero(below)[0])
                    _fail(path, at(k), f"field {name} [{lo[k]:#x}, +{size[k]}) is not in interleaved memory (region 1)")
            cross = (lo < r0) & (hi > r0)
            if cross.any():
                k = int(np.flatnonzero(cross)[0])
                _fail(path, at(k), f"field {name} [{lo[k]:#x}, +{size[k]}) crosses the end of region 0")
            b, res = live.data(step, tile, lo, hi)
            if (b < 0).any():
                k = int(np.flatnonzero(b < 0)[0])
                _fail(path, at(k), f"field {name} [{lo[k]:#x}, +{size[k]}) is not inside a buffer live at step {step}")
            if res.any():
                k = int(np.flatnonzero(res)[0])
                _fail(path, at(k), f"field {name} [{lo[k]:#x}, +{size[k]}) lies in {live.bt.names[live.bt.name[b[k]]]!r}, "
                      "not in a data buffer")
        n += V
    return n


def _exchange(path, where, s, live, t, T, iters) -> int:
    N = len(s.src)
    if s.dst.ndim != 2 or s.dst.shape[0] != N or s.dst_addr.shape != s.dst.shape:
        _fail(path, where, "destination columns are malformed")
    cap = t["transfer_max_words"] * 4
    bad = (s.nbytes <= 0) | (s.nbytes % 4 != 0) | (s.nbytes > cap)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        _fail(path, f"tile {int(s.src[k])} {where} run {k}",
              f"{int(s.nbytes[k])} B is not a whole number of words up to the transfer limit of {cap} B")
    tiles_ok = (s.src >= 0) & (s.src < T) & ((s.dst < T).all(1)) & (s.dst >= 0).any(1)
    if not tiles_ok.all():
        _fail(path, f"{where} run {int(np.flatnonzero(~tiles_ok)[0])}", "a tile is out of range or no destination")
    its = np.repeat(np.arange(iters), N)
    k_of = np.tile(np.arange(N), iters)
    lo = s.src_addr[k_of] + its * s.src_stride[k_of]
    b, res = live.data(s.step, s.src[k_of], lo, lo + s.nbytes[k_of])
    if (b < 0).any() or res.any():
        k = int(np.flatnonzero((b < 0) | res)[0])
        _fail(path, f"tile {int(s.src[k_of[k]])} {where} run {k_of[k]}" + (f" iteration {its[k]}" if iters > 1 else ""),
              f"source [{lo[k]:#x}, +{int(s.nbytes[k_of[k]])}) is not inside a data buffer live at step {s.step}")
    r, c = np.nonzero(s.dst >= 0)
    b, res = live.data(s.step, s.dst[r, c], s.dst_addr[r, c], s.dst_addr[r, c] + s.nbytes[r])
    if (b < 0).any() or res.any():
        k = int(np.flatnonzero((b < 0) | res)[0])
        _fail(path, f"tile {int(s.dst[r[k], c[k]])} {where} run {int(r[k])}",
              f"destination [{s.dst_addr[r[k], c[k]]:#x}, +{int(s.nbytes[r[k]])}) is not inside a data buffer live at "
              f"step {s.step}")
    return N


def _tables(prog, path, T):
    bt = prog.buffers
    if TABLES not in bt.names:
        return
    k = bt.names.index(TABLES)
    cap = np.zeros(T, np.int64)
    m = bt.name == k
    per_group = np.zeros(int(bt.group.max()) + 1, np.int64)
    per_group[bt.group[m]] = bt.size[m]
    cap = per_group[bt.group_of_tile]
    low, acc = prog.tables, prog.info["accounted_tables"]
    over = (low > acc) | (low > cap)
    if over.any():
        i = int(np.flatnonzero(over)[0])
        _fail(path, f"tile {i}", f"exchange tables of {int(low[i]):,} B exceed the plan's {int(acc[i]):,} B or their "
              f"{int(cap[i]):,} B buffer")


def _bindings(prog, path, live, nsteps, T) -> int:
    total = 0
    for b in prog.bindings:
        s = b.slabs
        where = f"binding {b.name}"
        numel = int(np.prod(b.shape)) if b.shape else 1
        if ((s.n < 1) | (s.rows < 1)).any() or ((s.e0 < 0) | (s.e0 + (s.rows - 1) * s.estride + s.n > numel)).any():
            _fail(path, where, "a slab lies outside the tensor's elements")
        # a constant table is laid beside every block that reads it, only the elements its readers read (a
        # unique-angle RoPE table takes every second column of the interleaved one; the replay checks each element
        # read); everything else is bound exactly once (replicas are a record's several destinations)
        if b.role != "const":
            counts = np.repeat(s.n, s.rows)
            starts = np.repeat(s.e0, s.rows) + (np.arange(int(s.rows.sum())) - np.repeat(np.cumsum(s.rows) - s.rows,
                                                                                           s.rows)) * np.repeat(s.estride, s.rows)
            idx = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
            cover = np.bincount(idx, minlength=numel)
            if (cover != 1).any():
                e = int(np.flatnonzero(cover != 1)[0])
                _fail(path, where, f"element {e} is bound {int(cover[e])} times (each element exactly once)")
        total += numel * b.count
        esize = {"f32": 4, "f16": 2, "f143": 1, "f152": 1}.get(b.dtype)
        if esize is None:
            _fail(path, where, f"dtype {b.dtype!r} is not f32, f16, f143 or f152")
        step = nsteps - 1 if b.role == "output" else 0
        r, c = np.nonzero(s.tile >= 0)
        size = (s.rows[r] - 1) * s.pitch[r] + s.n[r] * esize
        its = np.repeat(np.arange(b.count), len(r))
        rr, cc = np.tile(r, b.count), np.tile(c, b.count)
        lo = s.addr[rr, cc] + its * s.stride[rr, cc]
        found, res = live.data(step, s.tile[rr, cc], lo, lo + np.tile(size, b.count))
        if (found < 0).any() or res.any():
            k = int(np.flatnonzero((found < 0) | res)[0])
            _fail(path, f"tile {int(s.tile[rr[k], cc[k]])} {where}" + (f" copy {its[k]}" if b.count > 1 else ""),
                  f"slab [{lo[k]:#x}, +{int(size[k % len(r)])}) is not inside a data buffer live at step {step}")
    return total
