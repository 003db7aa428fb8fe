"""Compiled byte movers of the emulated memory: slabs gathered, compared and scattered with their shadow,
exchange runs copied word by word, host tensors written into strided slabs, FP8 bytes decoded. Pure data
movement: every bound is checked by the caller (TileMemory, Slabs) before a kernel runs. Loops are written
element by element: numba compiles them to vector code, where its slice assignments stay generic."""

from __future__ import annotations

import numba
import numpy as np


ALL_WRITTEN = np.uint64(0x0101010101010101)  # eight shadow bytes, all True


@numba.njit(cache=True)
def written_rows(wflat, w64, start, rows, nbytes, pitch, written) -> None:
    """written[v, r]: every byte of row r of slab v has been written (the shadow map `wflat` as bytes and,
    `w64`, as 8-byte words: whole words are checked eight bytes at once)."""
    for v in range(start.size):
        for r in range(rows):
            a = start[v] + r * pitch[v]
            e = a + nbytes
            ok = True
            while a < e and a % 8:
                ok &= wflat[a]
                a += 1
            for i in range(a // 8, e // 8):
                ok &= w64[i] == ALL_WRITTEN
            for b in range(max(a, e - e % 8), e):
                ok &= wflat[b]
            written[v, r] = ok


@numba.njit(cache=True)
def gather(flat, start, rows, nbytes, pitch, out) -> None:
    """out[v, r] <- the nbytes at flat[start[v] + r * pitch[v]]."""
    for v in range(start.size):
        for r in range(rows):
            a = start[v] + r * pitch[v]
            o = out[v, r]
            for b in range(nbytes):
                o[b] = flat[a + b]


@numba.njit(cache=True)
def same_slabs(flat, f64, start, rows, nbytes, pitch, cand) -> bool:
    """Slab v holds the same bytes as slab cand[v], for every v (`f64`: the memory as 8-byte words, compared
    a word at a time where both rows share their alignment)."""
    for v in range(start.size):
        c = cand[v]
        if c == v:
            continue
        for r in range(rows):
            a, o = start[v] + r * pitch[v], start[c] + r * pitch[c]
            e = a + nbytes
            d = 0
            if a % 8 == o % 8:
                while a < e and a % 8:
                    d |= flat[a] ^ flat[o]
                    a += 1
                    o += 1
                k = (o - a) // 8
                for i in range(a // 8, e // 8):
                    d |= f64[i] ^ f64[i + k]
                t = max(a, e - e % 8)
                o += t - a
                a = t
            while a < e:
                d |= flat[a] ^ flat[o]
                a += 1
                o += 1
            if d:
                return False
    return True


@numba.njit(cache=True)
def scatter(flat, wflat, start, rows, nbytes, pitch, data) -> None:
    """The nbytes at flat[start[v] + r * pitch[v]] <- data[v or 0, r or 0], and marked written (a source of one
    vertex or one row is broadcast)."""
    one_v, one_r = data.shape[0] == 1, data.shape[1] == 1
    for v in range(start.size):
        for r in range(rows):
            a = start[v] + r * pitch[v]
            x = data[0 if one_v else v, 0 if one_r else r]
            for b in range(nbytes):
                flat[a + b] = x[b]
                wflat[a + b] = True


@numba.njit(cache=True)
def copy_slabs(flat, wflat, src, src_pitch, src_rows, dst, dst_pitch, rows, nbytes) -> None:
    """Vertex by vertex, `rows` rows of nbytes (bytes and shadow) from src to dst; a one-row source is copied
    to every destination row. Each vertex's source is read whole before its destination is written."""
    data = np.empty((src_rows, nbytes), flat.dtype)
    flags = np.empty((src_rows, nbytes), wflat.dtype)
    for v in range(src.size):
        for r in range(src_rows):
            a = src[v] + r * src_pitch[v]
            for b in range(nbytes):
                data[r, b] = flat[a + b]
                flags[r, b] = wflat[a + b]
        for r in range(rows):
            a = dst[v] + r * dst_pitch[v]
            k = 0 if src_rows == 1 else r
            for b in range(nbytes):
                flat[a + b] = data[k, b]
                wflat[a + b] = flags[k, b]


@numba.njit(cache=True)
def copy_runs(words, wwords, src, n, dst) -> None:
    """Exchange: every run of n[i] words at src[i] read first (with its shadow), then written to each dst[i, r]
    that is not -1 (a run's sources are never changed by the same exchange's writes)."""
    total = 0
    for i in range(src.size):
        total += n[i]
    data = np.empty(total, words.dtype)
    flags = np.empty(total, wwords.dtype)
    o = 0
    for i in range(src.size):
        s = src[i]
        for j in range(n[i]):
            data[o + j] = words[s + j]
            flags[o + j] = wwords[s + j]
        o += n[i]
    o = 0
    for i in range(src.size):
        for r in range(dst.shape[1]):
            d = dst[i, r]
            if d >= 0:
                for j in range(n[i]):
                    words[d + j] = data[o + j]
                    wwords[d + j] = flags[o + j]
        o += n[i]


@numba.njit(cache=True)
def write_rows(flat, wflat, start, rows, nbytes, pitch, raw, src, src_stride) -> None:
    """Host writes: slab i is rows[i] rows of nbytes[i] bytes at flat[start[i] + r * pitch[i]], taken from
    raw[src[i] + r * src_stride[i]]."""
    for i in range(start.size):
        for r in range(rows[i]):
            a, s = start[i] + r * pitch[i], src[i] + r * src_stride[i]
            for b in range(nbytes[i]):
                flat[a + b] = raw[s + b]
                wflat[a + b] = True


@numba.njit(cache=True)
def lookup(table, raw, out) -> None:
    """out[i] <- table[raw[i]] (one-byte formats decoded through their 256 values)."""
    for i in range(raw.size):
        out[i] = table[raw[i]]
