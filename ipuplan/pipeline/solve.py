"""The pipeline job: plan a model over N chips as contiguous stages, or prove that N chips cannot hold it.

The machine bound over stages answers first (pipeline/bound.py). Otherwise the stage problems are ordinary
single-chip solves: a stage's plan depends only on its layer count and whether it carries the stem or the head, so
each such problem is solved once, however many stages pose it. The boundaries start balanced; while some stage has
no plan, the next partition is the most balanced one whose stages hold fewer layers than any failed stage of their
kind; then one layer at a time moves off the slowest stage (to any other stage, nearest first) while that makes the
pipeline faster (throughput: the slowest stage plus its link transfer; latency: the sum). Every stage of the chosen
partition is written as a solve directory of its own (checked and placed as a single-chip plan) and
DIR/pipeline.json ties them together."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

from ..artefacts import copy_inputs, staged
from ..errors import InputError
from ..formats import PIPELINE
from ..model import build_graph, load_model
from ..model.build import STAGE_OUTPUT
from ..model.stage import Stage
from ..plan import write_json
from ..job.solve import (ARTEFACTS, Job, SolvedJob, certificate_doc, instance, solve_job, write_certificate,
                              write_solved)
from ..solver.solve import Verdict
from ..target import load_target
from .bound import greedy_chain
from . import refute
from .partition import Partition, balanced, under_caps

TOP = ARTEFACTS + ("pipeline.json",)  # what DIR itself holds; stage-K/ are solve directories below it
KIND = {(True, False): "stem", (False, False): "middle", (False, True): "head", (True, True): "stem+head"}


class Objective(Enum):
    THROUGHPUT = "throughput"  # the slowest stage plus its outgoing link transfer
    LATENCY = "latency"  # every stage and every link transfer, one micro-batch end to end


def objective(name: str) -> Objective:
    """The --objective option as the enum (bad input: exit 2 naming what is valid)."""
    try:
        return Objective(name)
    except ValueError:
        raise InputError("--objective", None, f"{name!r} is not an objective", "valid: throughput, latency") from None


@dataclass(frozen=True)
class PipelineJob:
    job: Job  # the whole model's job: model, target, batch, options (its stage is None)
    ipus: int
    objective: Objective = Objective.THROUGHPUT
    max_moves: int = 8  # partitions tried while a stage fails, then boundary moves tried after a plan


def pipeline_job(job: Job, ipus: int, objective_name: str) -> PipelineJob:
    """The command line's and the API's pipeline job, its options checked before any work (bad input: exit 2)."""
    load_target(job.target).require_link(ipus)
    return PipelineJob(job, ipus, objective(objective_name))


@dataclass
class Outcome:
    verdict: Verdict
    doc: dict
    stages: list = field(default_factory=list)  # FIT: per stage (its directory, its solve result, its plan.json)


def run_pipeline(pj: PipelineJob, out_dir: Path, report: Callable[[str], None] | None = None,
                 solved: dict | None = None) -> Outcome:
    """Solve, write DIR/pipeline.json (+ DIR/stage-K/ per stage) for a FIT, DIR/verdict.json (+ certificate.json
    for INFEASIBLE) otherwise. `solved`: stage problems already solved for the same job (other chip counts)."""
    job = pj.job
    say = report or (lambda s: None)
    t0 = time.perf_counter()
    spec = load_model(job.model).with_options(layers=job.layers, precision=job.precision, fuse_qkv=job.fuse_qkv,
                                              fp8_scales=job.fp8_scales)
    target = load_target(job.target)
    target.require_link(pj.ipus)
    chain = greedy_chain(spec, job.batch, target, job.options.support_reserve)
    head = {"format": PIPELINE, "ipus": pj.ipus, "objective": pj.objective.value,
            "search": {"seed": job.options.seed, "effort": job.options.effort},
            "link": dataclasses.asdict(target.link) if target.link else None,
            "bound": {"fewest_ipus": chain.fewest, "chain": [[r.first, r.reach] for r in chain.links]}}
    if chain.proves_fewer_than(pj.ipus):
        say("machine bound over stages: " + ("no chip holds one layer" if chain.fewest is None else
                                             f"at least {chain.fewest} chips"))
        return _infeasible(pj, spec, target, chain, head, out_dir, t0)
    if pj.ipus > spec.layers:
        raise InputError("--ipus", None, f"{pj.ipus} chips for {spec.layers} layers", f"valid: 1..{spec.layers} "
                         "(every stage holds at least one layer)")
    solved = {} if solved is None else solved  # (count, stem, head) -> SolvedJob

    def stage_problem(st: Stage) -> SolvedJob:
        if st.problem not in solved:
            say(f"stage problem: {st.count} layers{' + stem' if st.stem else ''}{' + head' if st.head else ''}")
            solved[st.problem] = solve_job(dataclasses.replace(job, stage=st), report)
            r = solved[st.problem].result
            if r.verdict is not Verdict.FIT:  # its reason and certificate are kept: the problem and core are large
                r.reason = _why(r)
                r.problem, r.core, r.model_rows = None, [], set()
            say(f"  {r.verdict.value}" + (f" {r.plan['cycles']['modeled']:,} cycles" if r.verdict is Verdict.FIT else
                                          f" ({r.reason})" if r.reason else ""))
        return solved[st.problem]

    tried: list[dict] = []
    n, L = pj.ipus, spec.layers
    # what every stage but the last hands on, and its transfer
    boundary = build_graph(spec, job.batch, Stage.of(0, 1, L)).value(STAGE_OUTPUT) if n > 1 else None
    link = target.link.cycles(boundary.nbytes, target.clock_hz) if n > 1 else 0
    # the fewest layers a stage of each kind (stem, head) was seen to fail with, less one: where the search looks
    caps: dict[tuple[bool, bool], int] = {}
    kinds = [(i == 0, i == n - 1) for i in range(n)]
    part: Partition | None = balanced(L, n)
    best = None
    for _ in range(pj.max_moves + 1):  # first a partition with a plan on every stage
        ev = _evaluate(part, stage_problem, link, pj.objective, tried)
        best = ev if best is None or ev["score"] < best["score"] else best
        if not ev["score"][0]:
            break
        for row in ev["rows"]:
            if row["cycles"] is None:
                k = (row["stage"].stem, row["stage"].head)
                caps[k] = min(caps.get(k, L), row["stage"].count - 1)
        part = under_caps(L, [caps.get(k, L) for k in kinds])
        if part is None or any(t["counts"] == list(part.counts) for t in tried):
            break
    for _ in range(pj.max_moves if not best["score"][0] else 0):  # then faster: a layer off the slowest stage
        nxt = None
        for cand in best["partition"].moves(best["worst"]):
            if any(t["counts"] == list(cand.counts) for t in tried) or \
                    any(c > caps.get(k, L) for c, k in zip(cand.counts, kinds)):
                continue
            ev = _evaluate(cand, stage_problem, link, pj.objective, tried)
            if ev["score"] < (nxt or best)["score"]:
                nxt = ev
        if nxt is None:
            break
        best = nxt
    head["partition_search"] = {
        "partitions": tried, "stage_problems": len(solved),
        "failing_from": {KIND[k]: c + 1 for k, c in caps.items()},
        "caps_exhausted": bool(best["score"][0]) and part is None,
        "note": "boundaries: the balanced partition; while a stage has no plan, the most balanced partition whose "
                "stages hold fewer layers than any stage of their kind that failed; then one-layer moves off the "
                "slowest stage to any other stage while they improve the objective. Each stage is optimal within its "
                "catalogue and gap"}
    head["wall_seconds"] = round(time.perf_counter() - t0, 3)
    if best["score"][0]:
        ref = refute.refuted(solved)
        if refute.proves(L, n, ref):
            say("stage certificates: " + ", ".join(f"{k} with {r.count} layers" for k, r in ref.items())
                + f" leave no partition over {n} chips")
            return _refuted(pj, spec, target, head, out_dir, best, tried, ref, t0)
        return _unknown(pj, spec, target, head, out_dir, best, tried)
    return _fit(pj, spec, target, head, out_dir, best, stage_problem, boundary, link)


def _evaluate(part: Partition, stage_problem, link: int, objective: Objective, tried: list) -> dict:
    """The partition's stages solved; its score (stages without a plan, then cycles) and the stage to move a layer
    off: the fullest failing one, else the slowest. `link`: cycles of one boundary transfer."""
    rows = []
    for i, st in enumerate(part.stages()):
        s = stage_problem(st)
        r = s.result
        rows.append({"stage": st, "verdict": r.verdict.value, "reason": _why(r),
                     "cycles": r.plan["cycles"]["modeled"] if r.verdict is Verdict.FIT else None})
    fail = [i for i, row in enumerate(rows) if row["cycles"] is None]
    links = [0 if i == len(rows) - 1 else link for i in range(len(rows))]
    if fail:  # fewer stages without a plan first; a layer moves off the fullest one, INFEASIBLE before UNKNOWN
        score = (len(fail), 0)
        worst = max(fail, key=lambda i: (rows[i]["verdict"] == "INFEASIBLE", part.counts[i]))
    else:
        per = [row["cycles"] + links[i] for i, row in enumerate(rows)]
        score = (0, max(per) if objective is Objective.THROUGHPUT else sum(per))
        worst = max(range(len(per)), key=lambda i: per[i])
    tried.append({"counts": list(part.counts), "verdicts": [r["verdict"] for r in rows],
                  "cycles": [r["cycles"] for r in rows], "link_cycles": links,
                  "score": None if fail else score[1],
                  "reasons": {str(i): rows[i]["reason"] for i in fail}})
    return {"partition": part, "rows": rows, "links": links, "score": score, "worst": worst}


def _why(r) -> str | None:
    if r.verdict is Verdict.FIT:
        return None
    if r.reason:
        return r.reason
    if r.verdict is Verdict.INFEASIBLE:
        if r.stats.get("status") == "MACHINE_BOUND":
            return "machine bound"
        ex = r.stats.get("explanation") or {}
        lack = (f"; the least-overflowing plan lacks {ex['deficit_bytes']:,} B on tile {ex['tile']} at {ex['step']}"
                if ex.get("deficit_bytes") else "")
        return "no combination of the catalogued implementations fits" + lack
    return r.reason or r.verdict.value


def _fit(pj: PipelineJob, spec, target, head: dict, out_dir: Path, best: dict, stage_problem, boundary,
         link: int) -> Outcome:
    part: Partition = best["partition"]
    stages, written = [], []
    for i, st in enumerate(part.stages()):
        d = out_dir / f"stage-{i}"
        s = stage_problem(st)
        r = write_solved(s, d, st)
        if r.verdict is not Verdict.FIT:  # the checker rejected the plan as this stage
            return _unknown(pj, spec, target, head, out_dir, best, head["partition_search"]["partitions"],
                            f"stage {i} ({st.label()}): {r.reason or r.verdict.value}")
        written.append((d, r, s.doc))
        cyc = s.doc["cycles"]["modeled"]
        out = None if st.head else {"value": boundary.name, "shape": list(boundary.shape),
                                    "dtype": boundary.dtype.short, "bytes": boundary.nbytes, "link_cycles": link}
        stages.append({"index": i, "dir": f"stage-{i}", "stage": st.record(), "cycles": cyc,
                       "ms": round(cyc / target.clock_hz * 1e3, 6), "gap": s.doc["cycles"].get("gap"),
                       "output": out})
    per = [s["cycles"] + (s["output"]["link_cycles"] if s["output"] else 0) for s in stages]
    bott = max(per)
    lat = sum(per)
    with staged(out_dir, TOP) as tmp:
        inst = instance(pj.job, spec, target, copy_inputs(tmp, pj.job.model, pj.job.target))
        doc = {**head, "verdict": "FIT", **inst, "stages": stages,
               "throughput": {"bottleneck_stage": per.index(bott), "bottleneck_cycles": bott,
                              "images_per_s": round(pj.job.batch * target.clock_hz / bott, 3)},
               "latency": {"cycles": lat, "ms": round(lat / target.clock_hz * 1e3, 6)}}
        write_json(tmp / "pipeline.json", doc)
    return Outcome(Verdict.FIT, doc, written)


def _infeasible(pj: PipelineJob, spec, target, chain, head: dict, out_dir: Path, t0: float) -> Outcome:
    with staged(out_dir, TOP) as tmp:
        inst = instance(pj.job, spec, target, copy_inputs(tmp, pj.job.model, pj.job.target))
        doc = {**head, "verdict": "INFEASIBLE", **inst, "wall_seconds": round(time.perf_counter() - t0, 3)}
        body = chain.certificate(pj.ipus)
        doc["headline"] = (f"no partition of {spec.layers} layers into {pj.ipus} stage(s) fits: "
                           + (f"layer {body['covered']} alone (with the stem or head it carries) exceeds one chip, "
                              f"{chain.stuck.needs_bytes:,} B of {chain.stuck.capacity_bytes:,}"
                              if chain.fewest is None else
                              f"stages as long as the machine bound allows cover layers 0..{body['covered'] - 1} "
                              f"on {pj.ipus} chip(s); at least {chain.fewest} are needed"))
        doc["certificate"] = {"kind": body["kind"], "file": "certificate.json"}
        write_json(tmp / "verdict.json", doc)
        write_certificate(tmp / "certificate.json", doc, body)
    return Outcome(Verdict.INFEASIBLE, doc)


def _refuted(pj: PipelineJob, spec, target, head: dict, out_dir: Path, best: dict, tried, ref, t0: float) -> Outcome:
    """INFEASIBLE within the catalogue when the checker re-proves the stage certificates at every count the
    argument needs; UNKNOWN, saying why, when it does not."""
    from ..checker.certificate import check_certificate
    L, n = spec.layers, pj.ipus
    with staged(out_dir, TOP) as tmp:
        inst = instance(pj.job, spec, target, copy_inputs(tmp, pj.job.model, pj.job.target))
        body = refute.certificate(inst, L, n, ref)
        cert = certificate_doc(inst, body)
        rep = check_certificate(cert, base=tmp)
        if not rep.ok:
            doc = {**head, "verdict": "UNKNOWN", **inst,
                   "unknown": {"reason": f"the stage certificates do not carry to every larger stage: "
                                         f"{rep.violations[0]}; not a proof"}}
            write_json(tmp / "verdict.json", doc)
            return Outcome(Verdict.UNKNOWN, doc)
        caps = body["caps"]
        doc = {**head, "verdict": "INFEASIBLE", **inst, "wall_seconds": round(time.perf_counter() - t0, 3),
               "headline": f"no partition of {L} layers into {n} stages has a plan on every stage within the "
                           f"catalogue: " + ", ".join(f"a {k} stage has none with {r.count} or more layers"
                                                      for k, r in ref.items() if k in body["stages"])
                           + f", so the stages hold at most {' + '.join(map(str, caps))} = {sum(caps)} layers",
               "certificate": {"kind": body["kind"], "file": "certificate.json",
                               "stages": {k: {"count": c["stage"]["count"], "kind": c["kind"],
                                              "reason": _why_refuted(ref[k])} for k, c in body["stages"].items()}}}
        write_json(tmp / "verdict.json", doc)
        write_json(tmp / "certificate.json", cert)
    return Outcome(Verdict.INFEASIBLE, doc)


def _why_refuted(r) -> str:
    """The stage certificate in a line: its kind and first row (a counting row's cheapest bytes exceed its capacity;
    Farkas, split and z3 rows need the selection rules too, so their cheapest bytes alone may fit)."""
    rows = r.body.get("rows") or [{}]
    row = rows[0]
    what = (f"cheapest {row.get('cheapest_bytes', 0):,} B against {row.get('capacity', 0):,} B"
            if r.body["kind"] == "counting" else f"capacity {row.get('capacity', 0):,} B, with the selection rules"
            + (f" in each case of {r.body['split'].get('op')}'s implementations" if r.body["kind"] == "split" else ""))
    return f"{r.body['kind']} over {len(r.body.get('rows', []))} row(s), e.g. {row.get('name')}: {what}"


def _unknown(pj: PipelineJob, spec, target, head: dict, out_dir: Path, best: dict, tried, why: str = "") -> Outcome:
    with staged(out_dir, TOP) as tmp:
        inst = instance(pj.job, spec, target, copy_inputs(tmp, pj.job.model, pj.job.target))
        ps = head["partition_search"]
        reason = why or (f"no partition tried has a plan on every stage ({len(tried)} tried; stages without a plan: "
                         + ", ".join(f"{k} with {c} layers" for k, c in ps["failing_from"].items()) + ")"
                         + (f". If a stage that has no plan with k layers has none with more either (not proven), "
                            f"{pj.ipus} chips cannot hold it within the catalogue" if ps["caps_exhausted"] else "")
                         + "; not a proof")
        doc = {**head, "verdict": "UNKNOWN", **inst, "unknown": {"reason": reason}}
        write_json(tmp / "verdict.json", doc)
    return Outcome(Verdict.UNKNOWN, doc)
