"""Wall time and peak memory of `ipuplan check PKG` (plan, placement, manifest and the symbolic replay) with the
code on the import path, under either heap policy: run it once per checkout and policy (`PYTHONPATH=<other
worktree> python bench/check_speed.py ...` for the other side of a before/after), under either page policy. One
JSON line.

Usage: python bench/check_speed.py PACKAGE [--heap retain|default] [--pages small|huge]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import ipuplan
from ipuplan.checker.package import check_package


def _policy(name: str, instead: str):
    """ipuplan.heap's `name`, or exit saying which option runs a checkout from before it."""
    try:
        from ipuplan import heap
        return getattr(heap, name)
    except (ImportError, AttributeError):
        raise SystemExit(f"this checkout has no ipuplan.heap.{name}: run it with {instead}") from None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("package")
    ap.add_argument("--heap", choices=("retain", "default"), default="retain",
                    help="retain: the command line's policy (ipuplan/heap.py); default: glibc's own")
    ap.add_argument("--pages", choices=("small", "huge"), default="small",
                    help="small: the command line's (numpy advises no huge pages); huge: numpy's default")
    a = ap.parse_args()
    retained = a.heap == "retain" and _policy("retain_freed_memory", "--heap default")()
    small = a.pages == "small" and _policy("use_small_pages", "--pages huge")()
    t = time.time()
    ok, lines, why = check_package(a.package)
    replay = next((ln for ln in lines if ln.startswith("replay:")), "")
    print(json.dumps({"code": ipuplan.__file__, "heap": a.heap, "policy_applied": retained, "pages": a.pages,
                      "small_pages_applied": small, "passed": ok,
                      "total_s": round(time.time() - t, 1), "replay": replay[-60:] or why,
                      "peak_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))


if __name__ == "__main__":
    main()
