"""model.ipupkg as bytes: a zip of `manifest.json` and numpy arrays (`.npy`, deflated), every member's
sha256 in the manifest and the manifest's own digest in `digest.txt` (the whole: it covers every member
through their digests). Reading checks the format, every member's digest and the whole before anything
is parsed further, and names the first violation."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..formats import canonical

FORMAT = "ipuplan-package/1"
MANIFEST = "manifest.json"
DIGEST = "digest.txt"


class PackageError(InputError):
    """A package that is not what it claims: unreadable, altered, or violating the target (exit code 2)."""

    def __init__(self, path, problem: str):
        super().__init__(str(path), None, problem)


def _small(a: np.ndarray) -> np.ndarray:
    """Integers in the narrowest of int8/16/32/64 that holds them (load speed and size)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu" or a.size == 0 or a.dtype == np.uint8:  # bytes (the sources) stay bytes
        return a
    lo, hi = int(a.min()), int(a.max())
    for t in (np.int8, np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return a.astype(t)
    return a.astype(np.int64)


def write_archive(path: Path, manifest: dict, arrays: dict[str, np.ndarray]) -> int:
    """Write the package; returns its size in bytes."""
    members = {}
    blobs = {}
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.save(buf, _small(a), allow_pickle=False)
        blobs[name] = buf.getvalue()
        members[name] = hashlib.sha256(blobs[name]).hexdigest()
    man = dict(manifest, format=FORMAT, members=members)
    raw = canonical(man)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        _member(z, MANIFEST, raw)
        for name in sorted(blobs):  # a fixed order: identical inputs give identical bytes
            _member(z, name, blobs[name])
        _member(z, DIGEST, hashlib.sha256(raw).hexdigest().encode())
    tmp.replace(path)
    return path.stat().st_size


def _short(e: Exception) -> str:
    """An exception's message fit for one line: zipfile quotes raw header bytes."""
    msg = str(e)
    return msg if len(msg) <= 120 and msg.isprintable() else f"{type(e).__name__}: a header or member is damaged"


def _member(z: zipfile.ZipFile, name: str, data: bytes) -> None:
    """One member with a fixed timestamp and mode: identical inputs give byte-identical packages."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)


def open_manifest(path: Path, fmt: str, kind: str = "package") -> tuple[zipfile.ZipFile, dict]:
    """A zip artefact (a package, a pipeline package) and its manifest, once the manifest matches `digest.txt` and
    names format `fmt`; anything else is a PackageError naming what is wrong."""
    try:
        z = zipfile.ZipFile(path)
        names = set(z.namelist())
        if MANIFEST not in names or DIGEST not in names:
            raise PackageError(path, f"not an ipuplan {kind} (no {MANIFEST} or {DIGEST})")
        raw = z.read(MANIFEST)
        whole = z.read(DIGEST).decode(errors="replace").strip()
    except FileNotFoundError:
        raise PackageError(path, "no such file") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error) as e:
        raise PackageError(path, f"not a readable {kind} ({_short(e)}); truncated or corrupted") from None
    if hashlib.sha256(raw).hexdigest() != whole:
        raise PackageError(path, f"the manifest does not match the {kind} digest")
    try:
        manifest = json.loads(raw)
    except ValueError as e:
        raise PackageError(path, f"manifest is not JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise PackageError(path, f"format {manifest.get('format') if isinstance(manifest, dict) else None!r} "
                           f"is not {fmt}")
    return z, manifest


class Archive:
    """A read, digest-checked package: `manifest` and `array(name)` (int64 for integers)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.zip, self.manifest = open_manifest(self.path, FORMAT)
        names = set(self.zip.namelist())
        missing = sorted(set(self.manifest["members"]) - names)
        if missing:
            raise PackageError(self.path, f"member {missing[0]} is missing")
        self._cache: dict[str, np.ndarray] = {}

    def array(self, name: str) -> np.ndarray:
        if name not in self._cache:
            if name not in self.manifest["members"]:
                raise PackageError(self.path, f"member {name} is not in the manifest")
            try:
                blob = self.zip.read(name)
            except (zipfile.BadZipFile, OSError, EOFError, KeyError, zlib.error) as e:
                raise PackageError(self.path, f"member {name} is unreadable ({_short(e)}); corrupted") from None
            if hashlib.sha256(blob).hexdigest() != self.manifest["members"][name]:
                raise PackageError(self.path, f"member {name} does not match its digest")
            try:
                a = np.load(io.BytesIO(blob), allow_pickle=False)
            except ValueError as e:
                raise PackageError(self.path, f"member {name} is not a numpy array ({e})") from None
            self._cache[name] = a.astype(np.int64) if a.dtype.kind in "iu" and a.dtype != np.uint8 else a
        return self._cache[name]

    def verify_all(self) -> None:
        """Every member against its digest (reading a member checks it too)."""
        for name in self.manifest["members"]:
            self.array(name)


def rewrite(src: Path | str, dst: Path | str, edit) -> Path:
    """A copy of package `src` with `edit(manifest, arrays)` applied and every digest recomputed: how fault
    injection makes an altered package that only validation and the replay can catch."""
    ar = Archive(src)
    arrays = {n: ar.array(n) for n in ar.manifest["members"]}
    man = {k: v for k, v in ar.manifest.items() if k not in ("members", "format")}
    edit(man, arrays)
    write_archive(Path(dst), man, arrays)
    return Path(dst)
