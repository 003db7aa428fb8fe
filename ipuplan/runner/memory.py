"""The emulated tiles' memory: every tile's SRAM bytes at their real addresses, a shadow byte map of what has
been written since its buffer's lifetime began, and slab access for groups of equally shaped vertices."""

from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np

from ..errors import IpuplanError

NP = {"f32": np.float32, "f16": np.float16, "f143": ml_dtypes.float8_e4m3fnuz, "f152": ml_dtypes.float8_e5m2fnuz}
# every bit pattern of the narrow types as float32: a table look-up decodes them (exactly, and fast)
_LUT = {"f16": np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32),
        "f143": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fnuz).astype(np.float32),
        "f152": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2fnuz).astype(np.float32)}


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bytes [..., n * itemsize] as float32 values [..., n]."""
    raw = np.ascontiguousarray(raw)
    if dtype == "f32":
        return raw.view(np.float32).copy()
    if dtype == "f16":
        return _LUT["f16"][raw.view(np.uint16)]
    return _LUT[dtype][raw]


class RunError(IpuplanError):
    """The program did something the machine would not: an access out of bounds or of its region, a read of
    bytes never written, a write outside a live buffer. Named by tile, step, buffer or field, codelet."""

    exit_code = 1


class TileMemory:
    def __init__(self, tiles: int, base: int, end: int):
        self.base, self.size = base, end - base
        self.bytes = np.zeros((tiles, self.size), np.uint8)
        self.written = np.zeros((tiles, self.size), bool)
        self.flat = self.bytes.reshape(-1)
        self.wflat = self.written.reshape(-1)
        # exchanges move whole 32-bit words: the same memory (and shadow) as words
        self.words = self.flat.view(np.uint32)
        self.wwords = self.wflat.view(np.uint32)

    def word_runs(self, tile, addr, nbytes) -> np.ndarray:
        """Flat word indices of ragged runs of whole words, concatenated."""
        n = np.asarray(nbytes, np.int64) // 4
        off = np.asarray(addr, np.int64) - self.base
        bad = (off < 0) | (off + 4 * n > self.size) | (off % 4 != 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise RunError(f"tile {int(np.asarray(tile)[k])}: run [{int(np.asarray(addr)[k]):#x}, +{int(4 * n[k])}) "
                           "outside the tile's memory or not word-aligned")
        start = (np.asarray(tile, np.int64) * self.size + off) // 4
        return np.repeat(start - np.cumsum(n) + n, n) + np.arange(int(n.sum()))

    def index(self, tile, addr, rows: int, nbytes: int, pitch) -> np.ndarray:
        """[V, rows, nbytes] flat byte indices of equally shaped slabs."""
        off = np.asarray(addr, np.int64) - self.base
        if (off < 0).any() or (off + (rows - 1) * np.asarray(pitch) + nbytes > self.size).any():
            k = int(np.flatnonzero((off < 0) | (off + (rows - 1) * np.asarray(pitch) + nbytes > self.size))[0])
            raise RunError(f"tile {int(np.asarray(tile).ravel()[k])}: access [{int(np.asarray(addr).ravel()[k]):#x}, "
                           f"+{(rows - 1) * int(np.asarray(pitch).ravel()[k]) + nbytes}) outside the tile's memory")
        start = np.asarray(tile, np.int64) * self.size + off
        r = np.arange(rows)[None, :, None] * np.asarray(pitch, np.int64).reshape(-1, 1, 1)
        return start.reshape(-1, 1, 1) + r + np.arange(nbytes)[None, None, :]

    def runs(self, tile, addr, nbytes) -> np.ndarray:
        """Flat byte indices of ragged runs, concatenated."""
        n = np.asarray(nbytes, np.int64)
        off = np.asarray(addr, np.int64) - self.base
        bad = (off < 0) | (off + n > self.size)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise RunError(f"tile {int(np.asarray(tile)[k])}: run [{int(np.asarray(addr)[k]):#x}, +{int(n[k])}) outside "
                           "the tile's memory")
        start = np.asarray(tile, np.int64) * self.size + off
        return np.repeat(start - np.cumsum(n) + n, n) + np.arange(int(n.sum()))

    def clear(self, tiles: np.ndarray, addr: int, size: int) -> None:
        """A buffer's lifetime begins: nothing in it has been written."""
        self.written[np.asarray(tiles), addr - self.base:addr - self.base + size] = False

    def check(self, tile, addr, rows: int, nbytes: int, pitch) -> np.ndarray:
        """Byte offsets of equally shaped slabs, after checking they lie inside the tile's memory."""
        off = np.asarray(addr, np.int64) - self.base
        end = off + (rows - 1) * np.asarray(pitch, np.int64) + nbytes
        bad = (off < 0) | (end > self.size)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise RunError(f"tile {int(np.asarray(tile).ravel()[k])}: access [{int(np.asarray(addr).ravel()[k]):#x}, "
                           f"+{int(end[k] - off[k])}) outside the tile's memory")
        return off

    def slabs(self, which: np.ndarray, tile, off, rows: int, nbytes: int, pitch) -> list[np.ndarray]:
        """[rows, nbytes] strided views of `which` (the bytes or the shadow), one per vertex."""
        st = which.strides[1]
        return [np.lib.stride_tricks.as_strided(which[t, o:], shape=(rows, nbytes), strides=(p * st, st))
                for t, o, p in zip(np.asarray(tile).tolist(), np.asarray(off).tolist(), np.asarray(pitch).tolist())]


class Slabs:
    """One field of a vertex group, as strided views of each vertex's slab: read as values of a dtype (every
    byte written, else the run stops, named), written as values rounded to it."""

    def __init__(self, mem: TileMemory, tile, addr, rows: int, nbytes: int, pitch, where: Callable[[int], str],
                 what: str):
        off = mem.check(tile, addr, rows, nbytes, pitch)
        self.mem, self.tile, self.addr, self.pitch, self.where, self.what = mem, tile, addr, pitch, where, what
        self.data = mem.slabs(mem.bytes, tile, off, rows, nbytes, pitch)
        self.flags = mem.slabs(mem.written, tile, off, rows, nbytes, pitch)

    def raw(self) -> np.ndarray:
        return np.stack(self.data) if self.data else np.zeros((0, 0, 0), np.uint8)

    def read(self, dtype: str, rows_ok: np.ndarray | None = None) -> np.ndarray:
        self.read_check(rows_ok)
        return decode(self.raw(), dtype)

    def read_unique(self, dtype: str) -> tuple[np.ndarray, np.ndarray]:
        """(the distinct slabs' values [U, rows, n], which one each vertex holds [V]): replicated operands
        are decoded, and multiplied, once. Slabs are grouped by a hash of 64 sampled bytes, then every slab is
        compared whole with its group's first (a collision splits the group), without copying them all."""
        self.read_check()
        V = len(self.data)
        if V == 0:
            return decode(np.zeros((0, 0, 0), np.uint8), dtype), np.zeros(0, np.int64)
        rows, n = self.data[0].shape
        probe = np.unique(np.linspace(0, rows * n - 1, min(rows * n, 64)).astype(np.int64))
        pr, pc = probe // n, probe % n
        h = np.stack([d[pr, pc] for d in self.data]).astype(np.float64) @ np.random.default_rng(0).random(len(probe))
        _, first, inv = np.unique(h, return_index=True, return_inverse=True)
        inv = np.asarray(inv).ravel()
        reps = list(first)
        for v in range(V):
            u = inv[v]
            if v != first[u] and not np.array_equal(self.data[v], self.data[first[u]]):
                match = next((k for k, r in enumerate(reps) if np.array_equal(self.data[v], self.data[r])), None)
                if match is None:
                    reps.append(v)
                    match = len(reps) - 1
                inv[v] = match
        return decode(np.stack([self.data[r] for r in reps]), dtype), inv

    def read_check(self, rows_ok: np.ndarray | None = None) -> None:
        """Every byte read was written in its buffer's lifetime (rows the codelet skips excepted)."""
        if rows_ok is None and all(f.all() for f in self.flags):  # the common case, without a copy
            return
        ok = np.stack(self.flags)
        if rows_ok is not None:
            ok = ok | ~rows_ok[:, :, None]
        if not ok.all():
            v = int(np.flatnonzero(~ok.reshape(len(ok), -1).all(1))[0])
            r, b = np.argwhere(~ok[v])[0]
            addr = int(self.addr[v]) + int(r) * int(self.pitch[v]) + int(b)
            raise RunError(f"{self.where(v)}: {self.what} reads byte {addr:#x} of tile {int(self.tile[v])}, never "
                           "written in its buffer's lifetime")

    def write(self, values: np.ndarray, dtype: str) -> None:
        raw = np.ascontiguousarray(np.asarray(values, np.float32).astype(NP[dtype])).view(np.uint8)
        for d, f, x in zip(self.data, self.flags, raw):
            d[...] = x
            f[...] = True
