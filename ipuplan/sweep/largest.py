"""The largest-batch sweep: for every combination of models, targets, depths and option values, the largest batch
with a checked plan and the smallest with a checked certificate, found by the what-if search (doubling, then
bisection) with each probe an ordinary sweep case (solve and check in its own process, resumable); and what a
sweep directory says of each search so far, solving nothing."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..job.whatif import bracket
from .cases import Case
from .run import _counts, execute, finished_record, on_ray, write_results


@dataclass(frozen=True)
class Search:
    """One combination: its probes are `case` at each batch the search asks for, from `start` up to `cap`."""
    template: Case  # the combination, at the starting batch
    cap: int = 64

    @property
    def name(self) -> str:
        """The combination's directory-style name: its cases' names without the batch."""
        t = self.template
        parts = [Path(t.model).stem, Path(t.target).stem, f"L{t.layers}" if t.layers else "full"]
        slug = "-".join(parts + [f"{k}={v}" for k, v in t.settings] + ["largest"])
        return slug if len(slug) < 100 else slug[:80] + "-" + hashlib.sha256(slug.encode()).hexdigest()[:12]

    def case(self, batch: int) -> Case:
        return replace(self.template, batch=batch)

    def record(self) -> dict:
        r = self.template.record()
        del r["batch"]
        return {"name": self.name, **r, "start": self.template.batch, "cap": self.cap}


def searches(cases: list[Case], cap: int = 64) -> list[Search]:
    """One search per combination of the grid, starting at its smallest batch."""
    first: dict[tuple, Case] = {}
    for c in cases:
        key = (c.model, c.target, c.layers, c.settings)
        if key not in first or c.batch < first[key].batch:
            first[key] = c
    return [Search(c, cap) for c in first.values()]


def answer(rec: dict) -> bool | None:
    """A probe's answer for the search: True only for a FIT the plan checker passed, False only for an INFEASIBLE
    whose certificate the certificate checker passed; anything else (UNKNOWN, failed, unchecked) proves nothing."""
    if rec.get("status") != "done" or rec.get("checked") is not True:
        return None
    return {"FIT": True, "INFEASIBLE": False}.get(rec.get("verdict"))


def run_search(search: Search, out_dir: str, cwd: str, retry_failed: bool = False) -> dict:
    """In a Ray worker: the search's probes one after the other (a finished probe's case.json is reused), then
    the boundary. The record holds every probe's case record."""
    out = Path(out_dir)
    probes: dict[int, dict] = {}

    def at(batch: int) -> bool | None:
        d = out / "cases" / search.case(batch).name
        rec = finished_record(d, retry_failed) or execute(search.case(batch), str(d), cwd)
        probes[batch] = rec
        return answer(rec)

    known, lo, hi, unknown = bracket(search.template.batch, at, search.cap)
    return boundary(search, probes, lo, hi, unknown)


class _Waiting(Exception):
    """The search asks for a probe whose record is not finished."""


def status(search: Search, out_dir: Path) -> dict:
    """The search as far as the directory's finished probes take it, solving nothing: the same doubling and
    bisection replayed over their records, stopped at the first probe without one (`waits_on`: being solved,
    or stopped before it ended). The bracket is the one those probes prove."""
    probes: dict[int, dict] = {}
    waits: list[int] = []

    def at(batch: int) -> bool | None:
        rec = finished_record(out_dir / "cases" / search.case(batch).name)
        if rec is None:
            waits.append(batch)
            raise _Waiting
        probes[batch] = rec
        return answer(rec)

    try:
        _, lo, hi, unknown = bracket(search.template.batch, at, search.cap)
    except _Waiting:  # the largest FIT so far, the smallest certified INFEASIBLE above it, the UNKNOWNs between
        known = {b: answer(r) for b, r in probes.items()}
        lo = max((b for b, a in known.items() if a is True), default=0)
        hi = min((b for b, a in known.items() if a is False and b > lo), default=None)
        unknown = sorted(b for b, a in known.items() if a is None and b > lo and (hi is None or b < hi))
    rec = boundary(search, probes, lo, hi, unknown)
    if waits:
        rec.update(status="open", waits_on=waits[0])
    return rec


def boundary(search: Search, probes: dict[int, dict], lo: int, hi: int | None, unknown: list[int]) -> dict:
    fit = {b: r for b, r in probes.items() if answer(r) is True and r.get("images_per_s")}
    best = max(fit, key=lambda b: fit[b]["images_per_s"]) if fit else None
    failed = [b for b, r in sorted(probes.items()) if r.get("status") != "done"]
    unchecked = [b for b, r in sorted(probes.items()) if r.get("status") == "done"
                 and r.get("verdict") in ("FIT", "INFEASIBLE") and r.get("checked") is not True]
    return {**search.record(), "status": "done" if not failed else "failed",
            "largest_fit": lo or None, "smallest_infeasible": hi, "unknown": unknown,
            "proven": bool(lo) and hi == lo + 1, "capped": lo == search.cap,
            "images_per_s": fit[lo]["images_per_s"] if lo in fit else None,
            "modeled_ms": probes[lo].get("modeled_ms") if lo else None,
            "best_batch": best, "best_images_per_s": fit[best]["images_per_s"] if best else None,
            "infeasible_certificate": probes[hi].get("certificate") if hi else None,
            "failed": failed, "unchecked": unchecked,
            "probes": [probes[b] for b in sorted(probes)]}


def run_largest(found: list[Search], out_dir: Path, workers: int | None = None, address: str | None = None,
                retry_failed: bool = False, progress: Callable[[dict, int, int], None] | None = None) -> list[dict]:
    """Every search's boundary record, in grid order; each search is one Ray task whose probes run in turn (a
    finished probe is not solved again)."""
    out_dir = out_dir.resolve()
    cwd = str(Path.cwd().resolve())
    results: dict[str, dict] = {}

    def finished(s: Search, rec: dict | None, error: str | None) -> None:
        results[s.name] = rec if rec is not None else {**s.record(), "status": "failed", "error": error,
                                                       "probes": []}
        done = [results[x.name] for x in found if x.name in results]
        write_results(out_dir, [p for r in done for p in r["probes"]], done)
        if progress:
            progress(_counts([p for r in done for p in r["probes"]]), len(done), len(found))

    if progress:
        progress(_counts([]), 0, len(found))
    on_ray(run_search, [(s, (s, str(out_dir), cwd, retry_failed)) for s in found], finished, workers, address)
    return [results[s.name] for s in found]
