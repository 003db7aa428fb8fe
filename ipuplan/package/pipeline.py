"""model.ipupipe as bytes: a zip of one package per stage (stored as they are), `pipeline.json` (the pipeline
plan) and `manifest.json` naming every member with its sha256, the stages and their boundary bindings; the
manifest's own digest in `digest.txt`. Reading checks the format and every digest before anything is used."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from ..formats import canonical
from .archive import DIGEST, MANIFEST, PackageError, open_manifest

FORMAT = "ipuplan-pipeline-package/1"
PLAN = "pipeline.json"


def write_pipeline_package(path: Path, manifest: dict, members: dict[str, Path]) -> int:
    """Write `members` (name -> file) and the manifest, which gains the format and every member's digest."""
    man = dict(manifest, format=FORMAT,
               members={n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in sorted(members.items())})
    tmp = path.with_name(path.name + ".partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        for n, p in sorted(members.items()):
            z.write(p, n)
        body = canonical(man)
        z.writestr(MANIFEST, body)
        z.writestr(DIGEST, hashlib.sha256(body).hexdigest())
    tmp.replace(path)
    return path.stat().st_size


class PipelinePackage:
    """A read, digest-checked pipeline artefact: its manifest and its members' bytes on demand."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._zip, self.manifest = open_manifest(self.path, FORMAT, "pipeline package")
        members = self.manifest.get("members")
        if not isinstance(members, dict) or set(members) != set(self._zip.namelist()) - {MANIFEST, DIGEST}:
            raise PackageError(self.path, "the manifest's members are not the archive's")
        self.members = members

    def read(self, name: str) -> bytes:
        if name not in self.members:
            raise PackageError(self.path, f"no member {name!r}")
        data = self._zip.read(name)
        if hashlib.sha256(data).hexdigest() != self.members[name]:
            raise PackageError(self.path, f"{name}: sha256 differs from the manifest's")
        return data

    def extract(self, name: str, dest: Path) -> Path:
        out = dest / name
        out.write_bytes(self.read(name))
        return out
