"""Artefact directories: written whole or not at all, and carrying the inputs they were made from.

A command writes its files into a staging directory inside DIR and moves them into place only when every one
is complete; an interrupt or an error leaves DIR as it was. A solve directory keeps copies of the model and
target it was made for under DIR/inputs/, named in the artefact's `inputs` record beside their paths and
digests, so that `check`, `explain` and `build --plan` work from any directory and on a copied directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError
from .plan import sha256

INPUTS = "inputs"


def output_dir(path: str | Path, flag: str = "-o") -> Path:
    """An output directory, checked before any work: creatable, not a file, writable."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(flag, None, f"{str(p)!r} is a file", "give a directory (it is created if missing)")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(flag, None, f"cannot create {str(p)!r} ({e.strerror})", "give a writable directory") from None
    if not os.access(p, os.W_OK):
        raise InputError(flag, None, f"{str(p)!r} is not writable", "give a writable directory")
    return p


def output_file(path: str | Path, flag: str, suffix: str | None = None) -> Path:
    """An output file, checked before any work: not a directory, its directory creatable and writable; with
    `suffix`, the file must carry it (nothing is appended behind the user's back)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(flag, None, f"{str(p)!r} is a directory", "give a file name")
    if suffix and p.suffix != suffix:
        raise InputError(flag, None, f"{str(p)!r} does not end in {suffix}", f"give a {suffix} file name")
    output_dir(p.parent if str(p.parent) else ".", flag)
    return p


@contextmanager
def staged(out_dir: Path, names: tuple[str, ...]):
    """Yield a staging directory inside `out_dir`; on success move what was written there into `out_dir`
    (replacing those of `names` it holds, deleting those of `names` it does not: stale artefacts of an earlier
    verdict), on failure leave `out_dir` untouched."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".ipuplan-staging-", dir=out_dir))
    try:
        yield stage
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # a handful of renames, uninterrupted
        try:
            for name in names:
                if not (stage / name).exists():
                    target = out_dir / name
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    else:
                        target.unlink(missing_ok=True)
            for item in sorted(stage.iterdir()):
                target = out_dir / item.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                os.replace(item, target)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def copy_inputs(stage: Path, model: str, target: str) -> dict:
    """Copy the model and target into stage/inputs/; the `inputs` record: path, digest and the copy."""
    (stage / INPUTS).mkdir(exist_ok=True)
    rec = {}
    for kind, path in (("model", model), ("target", target)):
        copy = f"{INPUTS}/{kind}.yaml"
        shutil.copyfile(path, stage / copy)
        rec[kind] = {"path": str(path), "sha256": sha256(path), "copy": copy}
    return rec


def resolve_input(rec: dict, base: Path | None) -> tuple[str | None, str]:
    """The file an artefact's input record names: its copy inside `base` (the artefact's directory) when that
    holds the recorded digest, else its original path when that does; (None, why) when neither does."""
    want = rec.get("sha256") if isinstance(rec, dict) else None
    path = rec.get("path") if isinstance(rec, dict) else None
    copy = rec.get("copy") if isinstance(rec, dict) else None
    if base is not None and isinstance(copy, str) and (base / copy).is_file() and sha256(base / copy) == want:
        return str(base / copy), ""
    if isinstance(path, str) and Path(path).is_file():
        if sha256(path) == want:
            return path, ""
        return None, f"{path} differs from the one the artefact was made for (sha256 mismatch)" + (
            f", and its copy {copy} is missing or changed" if copy else "")
    return None, f"{path!r} is not a file here" + (f" and its copy {copy} is missing or changed" if copy else
                                                   " (an artefact older than input copies: run where it was made)")


def write_file(path: Path, data: bytes | str) -> None:
    """Write a file whole or not at all: a temporary beside it, renamed over it when complete."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_npy(path: Path, array) -> None:
    """numpy.save to exactly `path` (numpy appends .npy to a name without it), whole or not at all."""
    import io

    import numpy as np
    buf = io.BytesIO()
    np.save(buf, array)
    write_file(path, buf.getvalue())
