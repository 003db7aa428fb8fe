"""The artefact formats' names and hashes: shared by the writers and the checkers (what a file is, not
what it proves)."""

from __future__ import annotations

import hashlib
import json

PLAN = "ipuplan-plan/2"
CERTIFICATE = "ipuplan-certificate/2"
PLACEMENT = "ipuplan-placement/1"
PIPELINE = "ipuplan-pipeline/1"


def canonical(doc) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def digest(cert: dict) -> str:
    """sha256 of the certificate's canonical JSON without its own digest field."""
    return hashlib.sha256(canonical({k: v for k, v in cert.items() if k != "digest"})).hexdigest()


def catalogue_digest(candidates: dict) -> str:
    return hashlib.sha256(canonical(candidates)).hexdigest()
