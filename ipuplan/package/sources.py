"""A package's own sources: the model and target files, plan.json and placement.json it was built from, carried
as members, so that a package is checked and run from any directory and can be shipped alone."""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from pathlib import Path

import numpy as np

from .archive import Archive, PackageError

# kind -> the path inside a solve directory; unpacked, the layout is a solve directory's (plan.json names its
# inputs by these copies)
LAYOUT = {"model": "inputs/model.yaml", "target": "inputs/target.yaml", "plan": "plan.json",
          "placement": "placement.json"}


def collect(out_dir: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(the manifest's `sources` record, the members) from a solve directory that holds every file of LAYOUT."""
    record, arrays = {}, {}
    for kind, rel in LAYOUT.items():
        raw = (out_dir / rel).read_bytes()
        member = f"sources/{kind}"
        arrays[member] = np.frombuffer(raw, np.uint8)
        record[kind] = {"member": member, "file": rel, "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}
    return record, arrays


def read(path: str | Path, manifest: dict) -> dict[str, bytes]:
    """kind -> bytes of every source, each against its digest; a package without them is named as such."""
    rec = manifest.get("sources")
    if not isinstance(rec, dict) or set(rec) != set(LAYOUT):
        raise PackageError(path, "the package does not carry its sources (model, target, plan, placement); it was "
                                 "built by an older ipuplan: rebuild it with `ipuplan build`")
    ar = Archive(path)
    out = {}
    for kind, r in rec.items():
        try:
            raw = ar.array(r["member"]).astype(np.uint8).tobytes()
        except (KeyError, TypeError) as e:
            raise PackageError(path, f"sources.{kind} is malformed ({e})") from None
        if hashlib.sha256(raw).hexdigest() != r.get("sha256"):
            raise PackageError(path, f"sources.{kind} does not match its digest")
        out[kind] = raw
    return out


@contextlib.contextmanager
def unpacked(path: str | Path, manifest: dict):
    """A temporary solve directory holding the package's sources (plan.json, placement.json, inputs/)."""
    files = read(path, manifest)
    with tempfile.TemporaryDirectory(prefix="ipuplan-package-") as d:
        root = Path(d)
        for kind, raw in files.items():
            p = root / LAYOUT[kind]
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(raw)
        yield root
