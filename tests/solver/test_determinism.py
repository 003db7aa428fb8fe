"""Same inputs and seed give byte-identical plan.json and certificate.json, even when other processes keep
every core busy: no wall-clock value steers a decision (deterministic effort only)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import MODELS, ROOT
from tests_helpers import target_with_tiles


def _solve(args, out, hogs: int = 0) -> int:
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        return subprocess.run([sys.executable, "-m", "ipuplan.cli", "solve", *map(str, args), "-o", str(out)],
                              capture_output=True, cwd=ROOT).returncode
    finally:
        for p in busy:
            p.kill()


def test_plan_is_identical_beside_a_cpu_hog(tmp_path):
    """Two solves of SigLIP Base/16 (1 layer at full width, b2), one beside whatever else the suite runs and one
    beside two more busy loops, write the same plan.json byte for byte: the search is deterministic and
    independent of the wall clock. The effort (8 deterministic seconds) ends the cycle search far short of its
    bound (a 42 % gap), where a wall clock would show."""
    args = (MODELS / "siglip-base-224.yaml", "--batch", "2", "--layers", "1", "--seed", "5", "--effort", "8")
    assert _solve(args, tmp_path / "quiet") == 0
    assert _solve(args, tmp_path / "busy", hogs=2) == 0
    quiet = (tmp_path / "quiet" / "plan.json").read_bytes()
    assert quiet == (tmp_path / "busy" / "plan.json").read_bytes()
    cycles = json.loads(quiet)["cycles"]
    assert cycles["best_bound"] < cycles["fastest_found"]  # the effort, not a proof, ended the search


def test_certificate_is_identical_beside_a_cpu_hog(tmp_path):
    t = target_with_tiles(tmp_path, 16)
    args = (MODELS / "vit-small.yaml", "--batch", "4", "--target", t, "--headroom", "520000")
    assert _solve(args, tmp_path / "quiet") == 1
    assert _solve(args, tmp_path / "busy", hogs=2) == 1
    a, b = (tmp_path / d / "certificate.json" for d in ("quiet", "busy"))
    assert a.read_bytes() == b.read_bytes()
