"""Run a sweep on Ray: every case `ipuplan solve` and `ipuplan check` in its own process, as a Ray task on a
local instance sized to the machine or on a cluster (`address`); finished cases are kept (resumable), a
failed or killed case is recorded as failed and re-run only when asked."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ..errors import InputError
from .cases import Case

VERDICTS = ("FIT", "INFEASIBLE", "UNKNOWN")


def execute(case: Case, out: str, cwd: str) -> dict:
    """One case, in a Ray worker: solve, then check what the verdict produced; case.json beside its artefacts."""
    out_p = Path(out)
    out_p.mkdir(parents=True, exist_ok=True)
    rec: dict = {"name": case.name, **case.record(), "status": "failed"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ipuplan.cli", "solve", *case.solve_args(), "-o", out, "--no-explain"],
                       cwd=cwd, capture_output=True, text=True)
    rec["solve_seconds"] = round(time.perf_counter() - t0, 2)
    rec["exit"] = p.returncode
    pipeline = p.returncode == 0 and (out_p / "pipeline.json").exists()
    doc_path = out_p / ("pipeline.json" if pipeline else "plan.json" if p.returncode == 0 else "verdict.json")
    if p.returncode not in (0, 1, 3) or not doc_path.exists():
        rec["error"] = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        (out_p / "case.json").write_text(json.dumps(rec, indent=1))
        return rec
    doc = json.loads(doc_path.read_text())
    rec["status"], rec["verdict"] = "done", doc["verdict"]
    cyc = doc.get("cycles") or {}
    rec["modeled_cycles"], rec["modeled_ms"] = cyc.get("modeled"), cyc.get("ms")
    if cyc.get("ms"):
        rec["images_per_s"] = round(doc["batch"] / cyc["ms"] * 1e3, 3)
    if pipeline:  # the slowest stage plus its link; latency end to end
        rec["modeled_cycles"], rec["modeled_ms"] = doc["latency"]["cycles"], doc["latency"]["ms"]
        rec["images_per_s"] = doc["throughput"]["images_per_s"]
    rec["peak_bytes"] = (doc.get("peaks") or {}).get("total", {}).get("bytes")
    rec["slack_bytes"] = (doc.get("slack") or {}).get("bytes")
    rec["certificate"] = (doc.get("core") or {}).get("certificate", {}).get("kind") or \
        (doc.get("certificate") or {}).get("kind") or \
        ("machine" if doc.get("machine") and doc["verdict"] == "INFEASIBLE" else None)  # pipelines: certificate.kind
    if rec["verdict"] == "UNKNOWN":
        rec["reason"] = (doc.get("unknown") or {}).get("reason")
    if rec["verdict"] in ("FIT", "INFEASIBLE") and (doc_path if rec["verdict"] == "FIT" else
                                                    out_p / "certificate.json").exists():
        t1 = time.perf_counter()
        c = subprocess.run([sys.executable, "-m", "ipuplan.cli", "check", out], cwd=cwd, capture_output=True, text=True)
        rec["checked"] = c.returncode == 0
        rec["check_seconds"] = round(time.perf_counter() - t1, 2)
    (out_p / "case.json").write_text(json.dumps(rec, indent=1))
    return rec


def finished_record(d: Path, retry_failed: bool = False) -> dict | None:
    """A case directory's record when it holds a finished one (done, or failed and not to be retried)."""
    try:
        rec = json.loads((d / "case.json").read_text())
    except (OSError, ValueError):
        return None
    if rec.get("status") == "done" or (rec.get("status") == "failed" and not retry_failed):
        return dict(rec, resumed=True)
    return None


def sweep_status(cases: list[Case], out_dir: Path) -> list[dict]:
    """Every case's finished record, in grid order, solving nothing; a case without one is `open` (being
    solved, stopped before it ended, or not started)."""
    return [finished_record(out_dir / "cases" / c.name) or {"name": c.name, **c.record(), "status": "open"}
            for c in cases]


def run_sweep(cases: list[Case], out_dir: Path, workers: int | None = None, address: str | None = None,
              retry_failed: bool = False, progress: Callable[[dict, int, int], None] | None = None) -> list[dict]:
    """Every case's record, in grid order; only cases without a finished record are solved."""
    out_dir = out_dir.resolve()
    cwd = str(Path.cwd().resolve())
    results: dict[str, dict] = {}
    todo = []
    for c in cases:
        rec = finished_record(out_dir / "cases" / c.name, retry_failed)
        if rec:
            results[c.name] = rec
        else:
            todo.append(c)
    if progress:
        progress(_counts(results.values()), len(results), len(cases))

    def finished(c: Case, rec: dict | None, error: str | None) -> None:
        if rec is None:  # the worker died or the task raised
            rec = {"name": c.name, **c.record(), "status": "failed", "error": error}
            d = out_dir / "cases" / c.name
            d.mkdir(parents=True, exist_ok=True)
            (d / "case.json").write_text(json.dumps(rec, indent=1))
        results[c.name] = rec
        write_results(out_dir, [results[x.name] for x in cases if x.name in results])
        if progress:
            progress(_counts(results.values()), len(results), len(cases))

    on_ray(execute, [(c, (c, str(out_dir / "cases" / c.name), cwd)) for c in todo], finished, workers, address)
    records = [results[c.name] for c in cases]
    write_results(out_dir, records)
    return records


def on_ray(fn: Callable, tasks: list[tuple], finished: Callable, workers: int | None, address: str | None) -> None:
    """Run fn(*args) for every (key, args) of `tasks` as a Ray task of one CPU, on a local instance of `workers`
    CPUs or the cluster at `address`; finished(key, result, None) as each ends, finished(key, None, error) when
    its worker died or it raised."""
    if not tasks:
        return
    import ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = not ray.is_initialized()
    if started:
        if address:
            _reachable(address)
        try:
            # "local": a head that `ray start` left running on this machine is joined only when asked for
            # (--address); unasked, Ray would join it and refuse our CPU count
            ray.init(address=address or "local", num_cpus=None if address else (workers or os.cpu_count()),
                     include_dashboard=False, log_to_driver=False)
        except ConnectionError as e:  # something answered but would not admit us, e.g. a token-authenticated head
            raise InputError("--address", None, f"{address!r}: {e}",
                             "a head started with a token admits clients with the same RAY_AUTH_MODE=token and "
                             "RAY_AUTH_TOKEN (docs/SWEEP.md)") from None
    task = ray.remote(num_cpus=1, max_retries=0)(fn)
    pending = {task.remote(*args): key for key, args in tasks}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                key = pending.pop(ref)
                try:
                    res, error = ray.get(ref), None
                except ray.exceptions.RayError as e:
                    res, error = None, str(e).strip().splitlines()[-1][:300]
                finished(key, res, error)
    finally:
        if started:
            ray.shutdown()


def _reachable(address: str) -> None:
    """A `host:port` (or `ray://host:port`) that nothing answers on is bad input now, not after Ray's own
    connection retries (minutes) end in a crash."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise InputError("--address", None, f"{address!r}: nothing answers there ({e.strerror or e})",
                         "the address `ray start --head` printed (host:port), or no --address for a local "
                         "instance") from None


def _counts(records) -> dict:
    out = {v: 0 for v in VERDICTS}
    out["failed"] = 0
    for r in records:
        out[r.get("verdict") if r.get("status") == "done" else "failed"] += 1
    return out


COLUMNS = ("name", "model", "target", "batch", "layers", "settings", "status", "verdict", "certificate", "checked",
           "modeled_cycles", "modeled_ms", "images_per_s", "peak_bytes", "slack_bytes", "solve_seconds", "check_seconds", "error")


def write_results(out_dir: Path, records: list[dict], searches: list[dict] | None = None) -> None:
    """sweep.json (every case's record, and each largest-batch search's boundary when there are searches) and
    sweep.csv (one row per case)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "sweep.json.tmp"
    tmp.write_text(json.dumps({"format": "ipuplan-sweep/1", "cases": records}
                              | ({"searches": searches} if searches is not None else {}), indent=1))
    tmp.replace(out_dir / "sweep.json")
    with open(out_dir / "sweep.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in records:
            w.writerow([json.dumps(r.get(k)) if k == "settings" else r.get(k, "") for k in COLUMNS])
