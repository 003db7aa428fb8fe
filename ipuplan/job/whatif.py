"""What would fit: the largest batch or depth, or the smallest per-tile memory, at which a plan exists; and how
fast the catalogue could be with memory aside.

Batch and depth are searched by solving (doubling, then bisection between the largest FIT and the smallest
INFEASIBLE seen); each probe's plan or verdict is written under DIR/what-if/<kind>-<value>/ and each FIT
is re-verified by the independent plan checker, each INFEASIBLE's certificate by the certificate checker. The search assumes more images or layers never need less
memory, which holds for this catalogue (every buffer grows with both); the boundary pair itself is solved.
Memory comes from the least-overflowing plan: its exact deficit added to the tile budget, confirmed by
solving on a target with that much more SRAM.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Callable

from ..artefacts import resolve_input
from ..catalogue import Catalogue
from ..checker import check_dir
from ..checker.certificate import check_certificate
from ..errors import InputError
from ..solver.budget import Budget, WallClockExpired
from ..solver.ceiling import floor, free_optimum, memory_costs
from ..solver.classes import problem_classes
from ..solver.explain import elastic_explanation
from ..solver.solve import SolveOptions
from ..source import load_yaml
from .solve import Job, load_job, run_solve


def job_from_doc(doc: dict, base: Path | None = None) -> Job:
    """The solve an artefact records, its inputs read from the copies its directory keeps (or their paths)."""
    o = doc["options"]
    files = {}
    for kind in ("model", "target"):
        files[kind], why = resolve_input(doc["inputs"][kind], base)
        if files[kind] is None:
            raise InputError(str(base) if base else "the artefact", f"inputs.{kind}", why,
                             "solve again, or keep the directory's inputs/ beside its plan")
    return Job(files["model"], files["target"], doc["batch"], doc["layers"],
               doc["precision"], doc["fuse_qkv"],
               SolveOptions(batch=doc["batch"], support_reserve=o["support_reserve"], relays=o["relays"],
                            table_budget=o["exchange_table_budget"], headroom=o["headroom"],
                            seed=doc["search"]["seed"], effort=doc["search"]["effort"],
                            catalogue=Catalogue(o.get("catalogue", "grid"))),
               fp8_scales=_scales(doc))


def _scales(doc: dict) -> tuple | None:
    rec = doc.get("fp8_scales")
    return tuple((k, x, w) for k, (x, w) in rec.items()) if rec else None


def _verify(d: Path, doc: dict) -> str:
    """Re-verify a probe's artefact with the independent checkers: 'plan and placement checked', 'certificate checked
    (<kind>)', or why there is none."""
    if doc["verdict"] == "FIT":
        if not check_dir(d).ok:
            raise RuntimeError(f"what-if probe {d} produced a plan or placement the checker rejects")
        return "plan and placement checked"
    if not (d / "certificate.json").exists():
        return "no certificate (CP-SAT's verdict only)"
    cert = json.loads((d / "certificate.json").read_text())
    rep = check_certificate(cert, base=d)
    if not rep.ok:
        raise RuntimeError(f"what-if probe {d}: certificate rejected: {rep.violations[0]}")
    return f"certificate checked ({cert['kind']})"


def _probe(job: Job, kind: str, value: int, out: Path, report, evidence: dict) -> bool | None:
    """True FIT, False INFEASIBLE (each independently checked), None UNKNOWN (no plan and no proof)."""
    j = dataclasses.replace(job, batch=value if kind == "batch" else job.batch,
                            layers=value if kind == "layers" else job.layers,
                            options=dataclasses.replace(job.options, batch=value if kind == "batch" else job.batch,
                                                        explain=False))
    d = out / f"{kind}-{value}"
    res, doc = run_solve(j, d)
    if doc["verdict"] == "UNKNOWN":
        evidence[value] = f"UNKNOWN: {doc['unknown']['reason']}"
        if report:
            report(f"{kind} {value}: UNKNOWN")
        return None
    evidence[value] = _verify(d, doc)
    if report:
        report(f"{kind} {value}: {doc['verdict']}, {evidence[value]}")
    return doc["verdict"] == "FIT"


def bracket(start: int, at: Callable[[int], bool | None], cap: int = 64) -> tuple[dict, int, int | None, list]:
    """Doubling from `start` until a probe is not FIT (halving when `start` is not), then bisecting between the
    largest FIT and the smallest value above it not proven FIT, assuming more never needs less. `at(v)` is True
    (FIT), False (INFEASIBLE) or None (UNKNOWN: bounds the search like an INFEASIBLE one but proves nothing).
    Returns (every probe's answer, the largest FIT or 0, the smallest INFEASIBLE above it or None, the UNKNOWN
    values between)."""
    known: dict[int, bool | None] = {}

    def probe(v: int) -> bool | None:
        if v not in known:
            known[v] = at(v)
        return known[v]

    lo = 0  # the largest value proven FIT
    top = None  # the smallest value above lo not proven FIT (INFEASIBLE or UNKNOWN)
    v = start
    if probe(v):
        lo = v
        while top is None and v < cap:
            v = min(cap, v * 2)
            if probe(v):
                lo = v
            else:
                top = v
    else:
        top = v
        while lo == 0 and v > 1:
            v = max(1, v // 2)
            if probe(v):
                lo = v
            else:
                top = v
    while top is not None and lo and top - lo > 1:
        mid = (lo + top) // 2
        if probe(mid):
            lo = mid
        else:
            top = mid
    infeasible = [k for k, r in known.items() if r is False and k > lo]
    hi = min(infeasible) if infeasible else None
    unknown = sorted(k for k, r in known.items() if r is None and k > lo and (hi is None or k < hi))
    return known, lo, hi, unknown


def search(job: Job, kind: str, out: Path, report: Callable[[str], None] | None = None, cap: int = 64,
           probe=None) -> dict:
    """The largest FIT and the smallest INFEASIBLE value (`bracket`); the answer names the unknown values
    between the proven FIT and INFEASIBLE."""
    probe = probe or (lambda v, ev: _probe(job, kind, v, out, report, ev))
    evidence: dict[int, str] = {}
    known, lo, hi, unknown = bracket(job.batch if kind == "batch" else job.layers, lambda v: probe(v, evidence), cap)
    return {"kind": kind, "largest_fit": lo or None, "smallest_infeasible": hi, "unknown": unknown,
            "proven": bool(lo) and hi == lo + 1,
            "fit_dir": str(out / f"{kind}-{lo}") if lo else None,
            "infeasible_dir": str(out / f"{kind}-{hi}") if hi else None,
            "fit_evidence": evidence.get(lo), "infeasible_evidence": evidence.get(hi),
            "probes": {str(k): {True: "FIT", False: "INFEASIBLE", None: "UNKNOWN"}[r] for k, r in sorted(known.items())}}


def _problem(job: Job):
    """(target, problem) of a job, built as its solve builds them."""
    _, target, graph = load_job(job)
    return target, job.options.problem(graph, target)


def least_overflow(job: Job, report=None) -> dict:
    """The least-overflowing plan of a job whose solve left none: an UNKNOWN (no plan, no proof), or an
    INFEASIBLE solved with --no-explain or whose explanation its time limit cut short. The same elastic model
    the explanation solves, on the solve's effort; its deficit is exact (the bound equals it) or an upper
    bound, as there."""
    _, p = _problem(job)
    o = job.options
    empty = p.unimplemented
    if empty:
        return {"status": f"the {o.catalogue.value} catalogue has no implementation of {', '.join(empty)}"}
    if report:
        report(f"the least-overflowing plan: every capacity given a slack, their sum minimized ({o.effort:g} "
               "deterministic seconds)")
    try:
        return elastic_explanation(p, problem_classes(p), o, Budget.start(o.effort, o.time_limit))
    except WallClockExpired:
        return {"status": f"the time limit of {o.time_limit:g} s ran out"}


def _summary(ex: dict) -> dict:
    """What a least-overflowing plan puts where it overflows most: tile, step, deficit, contributors, cheaper
    choices."""
    return {k: ex[k] for k in ("deficit_bytes", "tile", "step", "slack_lower_bound", "tables_over",
                               "fragments_over")} | {"contributors": ex["contributors"][:12],
                                                     "alternatives": ex["alternatives"][:6]}


def memory(job: Job, doc: dict, out: Path, report=None) -> dict:
    ex = doc.get("core", {}).get("explanation") or {}
    if doc["verdict"] == "FIT":
        return {"kind": "memory", "note": "the model fits; peak per-tile bytes are in plan.json",
                "peak_bytes": doc["peaks"]["total"]["bytes"]}
    searched = None
    if "deficit_bytes" not in ex:  # the solve left no least-overflowing plan: seek it now
        ex = least_overflow(job, report)
        if "deficit_bytes" not in ex:
            return {"kind": "memory", "note": f"no least-overflowing plan was found within the effort of "
                                              f"{job.options.effort:g} deterministic seconds ({ex['status']})"}
        searched = _summary(ex)
        if report:
            report(f"the least-overflowing plan: {ex['deficit_bytes']:,} B over on tile {ex['tile']} at {ex['step']} "
                   f"(no plan overflows less than {max(0, ex['slack_lower_bound']):,} B)")
        if not (ex["deficit_bytes"] or ex["tables_over"] or ex["fragments_over"]):
            return {"kind": "memory", "deficit_bytes": 0, "least_overflowing": searched,
                    "note": "the least-overflowing plan overflows nothing: the catalogue has a plan within this "
                            "memory (exact on every tile, not yet placed) that the solve did not reach within its "
                            "effort; solve again with more --effort"}
    if ex.get("tables_over") or ex.get("fragments_over"):  # the elastic sum is not a memory figure then
        what = " and ".join(x for x in (f"its exchange tables by {ex['tables_over']:,} B" if ex.get("tables_over")
                                        else "", f"its fragments by {ex['fragments_over']:,}"
                                        if ex.get("fragments_over") else "") if x)
        return {"kind": "memory", "limited_by": "exchange", "deficit_bytes": ex["deficit_bytes"],
                "tables_over": ex.get("tables_over", 0), "fragments_over": ex.get("fragments_over", 0),
                "least_overflowing": searched,
                "note": f"the least-overflowing plan overflows {what}"
                        + (f" (and memory by {ex['deficit_bytes']:,} B)" if ex["deficit_bytes"] else ", not memory")
                        + ": more SRAM per tile alone does not make it fit; the exchange limits are "
                          "--exchange-table-budget and the target's fragment limit"}
    deficit = ex["deficit_bytes"]
    tdir = out / "memory"
    tdir.mkdir(parents=True, exist_ok=True)
    tpath = tdir / "target.yaml"
    tpath.write_text(grown_target(job.target, deficit))
    # the plan that overflowed by the deficit fits the grown target on every tile: the solve starts from it
    j = dataclasses.replace(job, target=str(tpath),
                            options=dataclasses.replace(job.options, hint=tuple(ex.get("choices", {}).items())))
    res, fdoc = run_solve(j, tdir / "fit")
    ok = fdoc["verdict"] == "FIT" and check_dir(tdir / "fit").ok
    if report:
        report(f"usable +{deficit:,} B: {fdoc['verdict']}")
    exact = ex["slack_lower_bound"] == deficit
    below = None
    if ok and exact and deficit > 1:  # the other side of the boundary: one byte less, with its certificate
        bpath = tdir / "below.yaml"
        bpath.write_text(grown_target(job.target, deficit - 1))
        jb = dataclasses.replace(job, target=str(bpath), options=dataclasses.replace(job.options, explain=False))
        _, bdoc = run_solve(jb, tdir / "below")
        below = {"verdict": bdoc["verdict"], "evidence": _verify(tdir / "below", bdoc), "dir": str(tdir / "below")}
        if report:
            report(f"usable +{deficit - 1:,} B: {below['verdict']}, {below['evidence']}")
    return {"kind": "memory", "usable_bytes": ex["usable_bytes"], "needs_usable_bytes": ex["needs_usable_bytes"],
            "deficit_bytes": deficit, "exact": exact, "lower_bound_bytes": ex["usable_bytes"] + ex["slack_lower_bound"],
            "confirmed_fit": ok, "confirm_verdict": fdoc["verdict"], "fit_dir": str(tdir / "fit"),
            "confirm_hinted_ops": fdoc.get("solver", {}).get("probe_hinted_ops"),
            "target": str(tpath), "one_byte_less": below,
            "least_overflowing": searched}


def speed(job: Job, doc: dict, report=None, seconds: float = 120.0) -> dict:
    """The catalogue's ceiling at this instance, memory aside (`ceiling.py`), and for a FIT what memory costs
    it per op: its implementation against the fastest plan's."""
    o = job.options
    target, p = _problem(job)
    empty = p.unimplemented
    if empty:
        return {"kind": "speed", "note": f"the {o.catalogue.value} catalogue has no implementation of "
                                         f"{', '.join(empty)} at batch {o.batch}: no plan, no ceiling"}
    if report:
        report(f"the fastest plan of the {o.catalogue.value} catalogue, memory aside ({len(p.impls)} ops)")
    free = free_optimum(p, seconds, o.workers, o.seed)

    def ips(cycles: int) -> float:
        return round(job.batch * target.clock_hz / cycles, 1)

    r = {"kind": "speed", "catalogue": o.catalogue.value, "floor_cycles": floor(p), "ceiling_cycles": free.cycles,
         "ceiling_optimal": free.optimal, "ceiling_images_per_s": ips(free.cycles)}
    if free.optimal:
        c = free.split(p)
        r["ceiling_split"] = {"compute": c.compute, "exchange": c.exchange, "sync": c.sync}
    if doc["verdict"] != "FIT" or not free.optimal:
        return r
    picks = {}
    for op, ch in doc["choices"].items():
        i = ch.get("impl")
        if op not in p.impls or not isinstance(i, int) or not 0 <= i < len(p.impls[op]) or \
                p.impls[op][i].label != ch.get("label"):
            raise InputError("plan.json", f"choices.{op}", "not an implementation this catalogue builds for the "
                             "instance", "solve again with this version of ipuplan")
        picks[op] = i
    modeled = doc["cycles"]["modeled"]
    rows, plan_pairs, free_pairs = memory_costs(p, picks, modeled, free)
    r |= {"plan_cycles": modeled, "plan_images_per_s": ips(modeled),
          "above_ceiling": round(modeled / free.cycles - 1, 4),
          "conversions": {"plan_cycles": plan_pairs, "ceiling_cycles": free_pairs},
          "ops": [{"op": x.op, "extra_cycles": x.extra, "chosen": x.chosen, "chosen_cycles": x.chosen_cycles,
                   "chosen_bytes": x.chosen_bytes, "fastest": x.fastest, "fastest_cycles": x.fastest_cycles,
                   "fastest_bytes": x.fastest_bytes} for x in rows if x.extra]}
    return r


def grown_target(path: str, extra: int) -> str:
    """The target file with `extra` more bytes of SRAM per tile, added to region 1 (its end moves up)."""
    root = load_yaml(path, "target").value
    sram = root["memory"].value["sram_bytes"].value
    limit = root["memory_map"].value["loadable_limit"]
    lines = Path(path).read_text().splitlines(keepends=True)
    i = root["memory"].value["sram_bytes"].loc.line - 1
    lines[i] = lines[i].replace(f"sram_bytes: {sram}", f"sram_bytes: {sram + extra}", 1)
    j = limit.loc.line - 1
    lines[j] = re.sub(r"loadable_limit: *\S+", f"loadable_limit: {hex(limit.value + extra)}", lines[j], count=1)
    return "".join(lines)


def what_if(directory: Path, kind: str, report=None, time_limit: float | None = None) -> dict:
    """Answer `kind` for the solve in `directory`; `time_limit` (wall seconds) bounds each solve or search it makes."""
    name = "plan.json" if (directory / "plan.json").exists() else "verdict.json"
    doc = json.loads((directory / name).read_text())
    job = job_from_doc(doc, directory)
    if time_limit is not None:
        job = dataclasses.replace(job, options=dataclasses.replace(job.options, time_limit=time_limit))
    out = directory / "what-if"
    out.mkdir(parents=True, exist_ok=True)
    result = memory(job, doc, out, report) if kind == "memory" else speed(job, doc, report) if kind == "speed" \
        else search(job, kind, out, report)
    (out / f"{kind}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
