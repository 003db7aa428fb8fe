"""The emulated tiles' memory: every tile's SRAM bytes at their real addresses, a shadow byte map of what has
been written since its buffer's lifetime began, and slab access for groups of equally shaped vertices."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import IpuplanError

NP = {"f32": np.float32, "f16": np.float16, "f143": ml_dtypes.float8_e4m3fnuz, "f152": ml_dtypes.float8_e5m2fnuz}


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
        self.written[np.asarray(tiles)[:, None], np.arange(addr - self.base, addr - self.base + size)[None, :]] = False


class Slabs:
    """One field of a vertex group: read as values of a dtype, write values rounded to it."""

    def __init__(self, mem: TileMemory, where):
        self.mem, self.where = mem, where

    def read(self, idx: np.ndarray, dtype: str, what: str) -> np.ndarray:
        ok = self.mem.wflat[idx]
        if not ok.all():
            v = int(np.flatnonzero(~ok.reshape(len(idx), -1).all(1))[0])
            b = int(idx[v].ravel()[int(np.flatnonzero(~ok[v].ravel())[0])])
            t, off = divmod(b, self.mem.size)
            raise RunError(f"{self.where(v)}: {what} reads byte {off + self.mem.base:#x} of tile {t}, never written "
                           "in its buffer's lifetime")
        raw = self.mem.flat[idx]
        return np.ascontiguousarray(raw).view(NP[dtype]).astype(np.float32)

    def write(self, idx: np.ndarray, values: np.ndarray, dtype: str) -> None:
        raw = np.ascontiguousarray(np.asarray(values, np.float32).astype(NP[dtype])).view(np.uint8)
        self.mem.flat[idx] = raw.reshape(idx.shape)
        self.mem.wflat[idx] = True
