"""The emulated tiles' memory: every tile's SRAM bytes at their real addresses, a shadow byte map of what has
been written since its buffer's lifetime began, and slab access for groups of equally shaped vertices."""

from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np

from ..errors import IpuplanError
from ..heap import lazy_zeros
from . import kernels

NP = {"f32": np.float32, "f16": np.float16, "f143": ml_dtypes.float8_e4m3fnuz, "f152": ml_dtypes.float8_e5m2fnuz}
# every bit pattern of the one-byte types as float32: a table look-up decodes them (exactly, and fast)
_LUT = {"f143": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fnuz).astype(np.float32),
        "f152": np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2fnuz).astype(np.float32)}


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bytes [..., n * itemsize] as float32 values [..., n]."""
    raw = np.ascontiguousarray(raw)
    if dtype == "f32":
        return raw.view(np.float32).copy()
    if dtype == "f16":  # numpy's conversion is exact (float16 is a subset of float32), bits included
        return raw.view(np.float16).astype(np.float32)
    out = np.empty(raw.shape, np.float32)
    kernels.lookup(_LUT[dtype], raw.reshape(-1), out.reshape(-1))
    return out


class RunError(IpuplanError):
    """The program did something the machine would not: an access out of bounds or of its region, a read of
    bytes never written, a write outside a live buffer. Named by tile, step, buffer or field, codelet."""

    exit_code = 1


class TileMemory:
    def __init__(self, tiles: int, base: int, end: int):
        self.base, self.size = base, end - base
        # 1.8 GB on a C600, of which a run touches the buffers' rows: pages only where touched
        self.bytes = lazy_zeros((tiles, self.size), np.uint8)
        self.written = lazy_zeros((tiles, self.size), bool)
        self.flat = self.bytes.reshape(-1)
        self.wflat = self.written.reshape(-1)
        # exchanges move whole 32-bit words: the same memory (and shadow) as words
        self.words = self.flat.view(np.uint32)
        self.wwords = self.wflat.view(np.uint32)
        self.flat64 = self.flat.view(np.uint64)  # compared and checked eight bytes at a time
        self.wflat64 = self.wflat.view(np.uint64)

    def word_starts(self, tile, addr, nbytes) -> np.ndarray:
        """Flat word index of the first word of each run of whole words, after checking the runs lie inside the
        tile's memory, word-aligned."""
        n = np.asarray(nbytes, np.int64) // 4
        off = np.asarray(addr, np.int64) - self.base
        bad = (off < 0) | (off + 4 * n > self.size) | (off % 4 != 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise RunError(f"tile {int(np.asarray(tile)[k])}: run [{int(np.asarray(addr)[k]):#x}, +{int(4 * n[k])}) "
                           "outside the tile's memory or not word-aligned")
        return (np.asarray(tile, np.int64) * self.size + off) // 4

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

    def starts(self, tile, off) -> np.ndarray:
        """Flat byte index of each (tile, offset)."""
        return np.asarray(tile, np.int64) * self.size + np.asarray(off, np.int64)


class Slabs:
    """One field of a vertex group, every vertex's slab of `rows` rows of `nbytes` bytes at its pitch: read as
    values of a dtype (every byte written, else the run stops, named), written as values rounded to it."""

    def __init__(self, mem: TileMemory, tile, addr, rows: int, nbytes: int, pitch, where: Callable[[int], str],
                 what: str):
        off = mem.check(tile, addr, rows, nbytes, pitch)
        self.mem, self.tile, self.addr, self.where, self.what = mem, tile, addr, where, what
        self.rows, self.nbytes = rows, nbytes
        self.pitch = np.ascontiguousarray(np.broadcast_to(np.asarray(pitch, np.int64), np.shape(off)))
        self.start = mem.starts(tile, off)

    def _gather(self, which: np.ndarray | None = None) -> np.ndarray:
        """The bytes [V, rows, nbytes] of every slab (or of the slabs `which`), copied."""
        start = self.start if which is None else self.start[which]
        pitch = self.pitch if which is None else self.pitch[which]
        out = np.empty((len(start), self.rows, self.nbytes), np.uint8)
        kernels.gather(self.mem.flat, start, self.rows, self.nbytes, pitch, out)
        return out

    def read(self, dtype: str, rows_ok: np.ndarray | None = None) -> np.ndarray:
        self.read_check(rows_ok)
        return decode(self._gather(), dtype)

    def read_unique(self, dtype: str) -> tuple[np.ndarray, np.ndarray]:
        """(the distinct slabs' values [U, rows, n], which one each vertex holds [V]): replicated operands
        are gathered, decoded and multiplied once. Slabs are grouped by a hash of 64 sampled bytes, every slab
        then compared whole, in place, with its group's first; on a collision, grouped by their whole bytes."""
        self.read_check()
        V, rows, n = len(self.start), self.rows, self.nbytes
        if V == 0:
            return decode(np.zeros((0, rows, n), np.uint8), dtype), np.zeros(0, np.int64)
        probe = np.unique(np.linspace(0, rows * n - 1, min(rows * n, 64)).astype(np.int64))
        at = self.start[:, None] + (probe // n)[None, :] * self.pitch[:, None] + (probe % n)[None, :]
        h = self.mem.flat[at].astype(np.float64) @ np.random.default_rng(0).random(len(probe))
        _, first, inv = np.unique(h, return_index=True, return_inverse=True)
        inv = np.asarray(inv).ravel()
        if not kernels.same_slabs(self.mem.flat, self.mem.flat64, self.start, rows, n, self.pitch, first[inv]):
            _, first, inv = np.unique(self._gather().reshape(V, -1), axis=0, return_index=True,
                                      return_inverse=True)
            inv = np.asarray(inv).ravel()
        return decode(self._gather(first), dtype), inv

    def read_check(self, rows_ok: np.ndarray | None = None) -> None:
        """Every byte read was written in its buffer's lifetime (rows the codelet skips excepted)."""
        written = np.empty((len(self.start), self.rows), bool)
        kernels.written_rows(self.mem.wflat, self.mem.wflat64, self.start, self.rows, self.nbytes, self.pitch, written)
        ok = written if rows_ok is None else written | ~rows_ok
        if ok.all():
            return
        v, r = (int(i) for i in np.argwhere(~ok)[0])
        a = int(self.start[v]) + r * int(self.pitch[v])
        b = int(np.flatnonzero(~self.mem.wflat[a:a + self.nbytes])[0])
        addr = int(self.addr[v]) + r * int(self.pitch[v]) + b
        raise RunError(f"{self.where(v)}: {self.what} reads byte {addr:#x} of tile {int(self.tile[v])}, never "
                       "written in its buffer's lifetime")

    def write(self, values: np.ndarray, dtype: str) -> None:
        """Values [V or 1, rows or 1, n] rounded to `dtype` into the slabs, marked written."""
        raw = np.ascontiguousarray(np.asarray(values, np.float32).astype(NP[dtype])).view(np.uint8)
        kernels.scatter(self.mem.flat, self.mem.wflat, self.start, self.rows, self.nbytes, self.pitch,
                        raw.reshape(raw.shape[0], raw.shape[1], -1))
