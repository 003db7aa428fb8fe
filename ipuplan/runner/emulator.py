"""The emulated IPU21: executes a package the way Poplar's IPUModel executes a graph — every tile's memory at
its real addresses, host calls through the bindings, compute sets codelet by codelet (codelets.EXECUTE),
exchanges as byte copies, the Repeat as a loop with address advancement. The package is validated before it
is loaded (every access inside a buffer live at its step, at the first and last iteration); while running, a
shadow map stops any codelet that reads bytes not written since their buffer's lifetime began."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np

import ipuplan.codelets as cl
from ..ir.graph import DType
from ..numerics import round_to
from .device import Device
from ..codelets.base import CODE_DTYPE
from . import kernels
from .memory import NP, RunError, Slabs, TileMemory

_DT = {d.short: d for d in DType}


class FieldAccess:
    """A group of equally shaped vertices of one codelet, as the codelet's `execute` sees them."""

    def __init__(self, mem: TileMemory, v, sel: np.ndarray, fields: tuple[str, ...], it: int, where: Callable):
        self.mem, self.v, self.sel, self.fields, self.it = mem, v, sel, fields, it
        self.params = v.params[sel]
        self.codelet = v.codelet
        self.tile = v.tile[sel]
        self._where = lambda k: where(int(sel[k]))

    def dtype(self, col: int, allowed: tuple[str, ...]) -> str:
        """The dtype parameter word `col`, one of `allowed` for every vertex of the group, else a named error."""
        codes = np.unique(self.params[:, col])
        names = [CODE_DTYPE.get(int(c)) for c in codes]
        if len(codes) != 1 or names[0] not in allowed:
            raise RunError(f"{self._where(0)}: parameter {col} is dtype code {int(codes[0])} "
                           f"({names[0] or 'no dtype'}); this codelet takes {', '.join(allowed)}")
        return names[0]

    def _f(self, field: str) -> int:
        return self.fields.index(field)

    def used(self, field: str) -> bool:
        return bool((self.v.addr[self.sel, self._f(field)] >= 0).all())

    def nbytes(self, field: str) -> int:
        return int(self.v.row_bytes[self.sel[0], self._f(field)])

    def rows(self, field: str) -> int:
        return int(self.v.rows[self.sel[0], self._f(field)])

    def _slabs(self, field: str, rows: int | None = None, nbytes: int | None = None) -> Slabs:
        f = self._f(field)
        if not self.used(field):
            raise RunError(f"{self._where(0)}: field {field} is not bound")
        a = self.v.addr[self.sel, f] + self.it * self.v.stride[self.sel, f]
        return Slabs(self.mem, self.tile, a, self.rows(field) if rows is None else rows,
                     self.nbytes(field) if nbytes is None else nbytes, self.v.pitch[self.sel, f], self._where,
                     f"field {field}")

    def read(self, field: str, dtype: str, rows_ok: np.ndarray | None = None) -> np.ndarray:
        return self._slabs(field).read(dtype, rows_ok)

    def read_unique(self, field: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
        return self._slabs(field).read_unique(dtype)

    def write(self, field: str, values: np.ndarray, dtype: str) -> None:
        s = self._slabs(field)
        n = self.nbytes(field) // np.dtype(NP[dtype]).itemsize
        s.write(_stored(np.broadcast_to(values, (len(self.sel), self.rows(field), n)), dtype), dtype)

    def read_flat(self, field: str, dtype: str, count: int) -> np.ndarray:
        s = self._slabs(field, 1, count * np.dtype(NP[dtype]).itemsize)
        return s.read(dtype).reshape(len(self.sel), count)

    def write_flat(self, field: str, values: np.ndarray, dtype: str) -> None:
        values = np.asarray(values)
        s = self._slabs(field, 1, values.shape[1] * np.dtype(NP[dtype]).itemsize)
        s.write(_stored(values.reshape(len(self.sel), 1, -1), dtype), dtype)

    def copy(self, src: str, dst: str) -> None:
        s, d = self._slabs(src), self._slabs(dst)
        srows = 1 if s.rows != d.rows else s.rows  # one source row over every destination row
        kernels.copy_slabs(self.mem.flat, self.mem.wflat, s.start, s.pitch, srows, d.start, d.pitch, d.rows,
                           min(s.nbytes, d.nbytes))


def _stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """FP8 saturates (the casts' policy); F16 and F32 round to nearest."""
    return round_to(values, _DT[dtype]) if dtype in ("f143", "f152") else values


class Emulator(Device):
    """Device interface on the emulator: load a package, call `initialize` and `run`."""

    def __init__(self, policy, progress: Callable[[str, int, int], None] | None = None):
        self.policy, self.progress = policy, progress
        self.profile: list[dict] = []

    def load(self, package: str | Path) -> dict:
        from ..package.archive import PackageError
        from ..package.io import read_package
        from ..package.validate import validate
        self.path = Path(package)
        self.prog, self.manifest = read_package(self.path)
        for c in self.manifest["codelets"]:  # the codelets are ipuplan's, whatever the package says of them
            own = cl.BY_NAME.get(c.get("name"))
            if own is None or c.get("fields") != list(own.fields) or c.get("interleaved") != list(own.interleaved) \
                    or c.get("params") != own.params or c.get("code_bytes") != own.code_bytes:
                raise PackageError(self.path, f"codelet {c.get('name')}: the package's description is not ipuplan's "
                                              f"codelet")
        validate(self.prog, self.manifest, self.path)
        t = self.manifest["target"]
        self.mem = TileMemory(self.prog.tiles, t["base"], t["loadable_end"])
        self.fields = {c["name"]: cl.BY_NAME[c["name"]].fields for c in self.manifest["codelets"]}
        bt = self.prog.buffers
        self.tiles_of = [np.flatnonzero(bt.group_of_tile == g) for g in range(int(bt.group_of_tile.max()) + 1)]
        # per step: the byte ranges whose buffers' lifetimes begin there, merged per tile group
        self._starts: dict[int, list[tuple[int, int, int]]] = {}
        live = bt.size > 0
        order = np.lexsort((bt.addr, bt.group, bt.first))
        for b in order[live[order]]:
            step, g, lo, hi = int(bt.first[b]), int(bt.group[b]), int(bt.addr[b]), int(bt.addr[b] + bt.size[b])
            runs = self._starts.setdefault(step, [])
            if runs and runs[-1][0] == g and runs[-1][2] >= lo:
                runs[-1] = (g, runs[-1][1], max(runs[-1][2], hi))
            else:
                runs.append((g, lo, hi))
        self._clear_from(0, 0)  # program-lifetime buffers start empty
        return self.manifest

    def _clear_from(self, lo: int, hi: int) -> None:
        for s in range(lo, hi + 1):
            for g, a, b in self._starts.get(s, ()):
                self.mem.clear(self.tiles_of[g], a, b - a)

    # --- host calls -----------------------------------------------------------------------------------

    def call(self, name: str, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if name == "initialize":
            for b in self.prog.bindings:
                if b.role in ("param", "const"):
                    self._write_binding(b, tensors[b.name])
            return {}
        if name == "run":
            for b in self.prog.bindings:
                if b.role == "input":
                    self._write_binding(b, tensors[b.name])
            self._run()
            return {b.name: self._read_binding(b) for b in self.prog.bindings if b.role == "output"}
        raise ValueError(f"no host call {name!r}; the package has initialize and run")

    def _runs(self, b, it: int, r: int):
        """(element index, byte address) of every element of replica r of a binding, iteration it."""
        s = b.slabs
        ok = s.tile[:, r] >= 0
        rows, n = s.rows[ok], s.n[ok]
        runs = np.repeat(np.flatnonzero(ok), rows)
        k = np.arange(len(runs)) - np.repeat(np.cumsum(rows) - rows, rows)
        cnt = n[np.searchsorted(np.flatnonzero(ok), runs)]
        q = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        e = np.repeat(s.e0[runs] + k * s.estride[runs], cnt) + q
        esize = np.dtype(NP[b.dtype]).itemsize
        a = np.repeat(s.addr[runs, r] + it * s.stride[runs, r] + k * s.pitch[runs], cnt) + q * esize
        return e, np.repeat(s.tile[runs, r], cnt), a

    def _write_binding(self, b, logical: np.ndarray) -> None:
        """Each slab record: rows of n elements, strided in the tensor and at its pitch on the tile."""
        x = np.asarray(logical, np.float32).reshape(b.count, -1)
        es = np.dtype(NP[b.dtype]).itemsize
        s = b.slabs
        mem = self.mem
        for it in range(b.count):
            raw = np.ascontiguousarray(round_to(x[it], _DT[b.dtype], b.scale).astype(NP[b.dtype])).view(np.uint8)
            for r in range(s.tile.shape[1]):
                ok = np.flatnonzero(s.tile[:, r] >= 0)
                tile = s.tile[ok, r]
                off = mem.check(tile, s.addr[ok, r] + it * s.stride[ok, r], 1, 1, s.pitch[ok])
                rows, n, p = (np.asarray(a, np.int64) for a in (s.rows[ok], s.n[ok] * es, s.pitch[ok]))
                past = off + (rows - 1) * p + n > mem.size
                if past.any():
                    raise RunError(f"tile {int(tile[np.flatnonzero(past)[0]])}: binding {b.name} runs past the tile's "
                                   "memory")
                src, sstride = np.asarray(s.e0[ok], np.int64) * es, np.asarray(s.estride[ok], np.int64) * es
                if (src + (rows - 1) * sstride + n > raw.size).any() or (src < 0).any():
                    raise RunError(f"binding {b.name}: a slab reaches outside the tensor's {x.shape[1]} elements")
                kernels.write_rows(mem.flat, mem.wflat, mem.starts(tile, off), rows, n, p, raw, src, sstride)

    def _read_binding(self, b) -> np.ndarray:
        esize = np.dtype(NP[b.dtype]).itemsize
        e, tile, a = self._runs(b, 0, 0)
        idx = self.mem.runs(tile, a, np.full(len(a), esize))
        if not self.mem.wflat[idx].all():
            raise RunError(f"output {b.name}: bytes never written")
        out = np.zeros(int(np.prod(b.shape)) * esize, np.uint8)
        out.reshape(-1, esize)[e] = self.mem.flat[idx].reshape(-1, esize)
        y = out.view(NP[b.dtype]).astype(np.float32).reshape(b.shape)
        return np.ldexp(y, b.scale).astype(np.float32) if b.scale else y

    # --- the program ----------------------------------------------------------------------------------

    def _run(self) -> None:
        prog = self.prog
        body = self.manifest.get("body")
        sec = {"prologue": [], "body": [], "epilogue": []}
        for i, s in enumerate(prog.steps):
            sec[s.section.value].append((i, s))
        self.profile = []
        total = len(sec["prologue"]) + prog.count * len(sec["body"]) + len(sec["epilogue"])
        self._done, self._total = 0, total
        self._cleared = 0
        self._do(sec["prologue"], 0)
        for it in range(prog.count):
            if it:
                if prog.carry is not None:
                    self._compute(prog.carry, it - 1, "carry")
                self._cleared = body[0] - 1
            self._do(sec["body"], it)
        self._do(sec["epilogue"], 0)

    def _do(self, steps, it: int) -> None:
        for i, s in steps:
            if s.step > self._cleared:
                self._clear_from(self._cleared + 1, s.step)
                self._cleared = s.step
            t0 = time.perf_counter()
            if s.kind == "exchange":
                self._exchange(s, it if s.section.value == "body" else 0)
            else:
                self._compute(s, it if s.section.value == "body" else 0, f"step {i} ({s.op} {s.name})")
            self._done += 1
            self.profile.append({"step": i, "plan_step": s.step, "op": s.op, "name": s.name, "kind": s.kind,
                                 "iteration": it, "seconds": time.perf_counter() - t0})
            if self.progress:
                self.progress(f"{s.op} {s.name}", self._done, self._total)

    def _exchange(self, s, it: int) -> None:
        """Every run's words (and their shadow) read from its source, then written to each destination."""
        mem = self.mem
        src = mem.word_starts(s.src, s.src_addr + it * s.src_stride, s.nbytes)
        dst = np.full(s.dst.shape, -1, np.int64)
        for r in range(s.dst.shape[1]):
            ok = s.dst[:, r] >= 0
            dst[ok, r] = mem.word_starts(s.dst[ok, r], s.dst_addr[ok, r], s.nbytes[ok])
        kernels.copy_runs(mem.words, mem.wwords, src, np.asarray(s.nbytes, np.int64) // 4, dst)

    def _compute(self, cs, it: int, where: str) -> None:
        for v in cs.vertices:
            run = cl.EXECUTE.get(v.codelet)
            if run is None:
                raise RunError(f"{where}: no codelet {v.codelet}")
            fields = self.fields[v.codelet]
            key = np.concatenate([v.rows, v.row_bytes, (v.addr >= 0)], 1)
            _, inv = np.unique(key, axis=0, return_inverse=True)
            inv = np.asarray(inv).ravel()
            for g in range(int(inv.max()) + 1 if len(inv) else 0):
                sel = np.flatnonzero(inv == g)
                access = FieldAccess(self.mem, v, sel, fields, it,
                                     lambda k, v=v: f"tile {int(v.tile[k])} {where} {v.codelet} vertex {k}")
                try:
                    run(access, self.policy)
                except (ValueError, KeyError, IndexError) as e:  # a parameter the codelet cannot honour
                    raise RunError(f"{access._where(0)}: cannot execute ({type(e).__name__}: {e})") from None
