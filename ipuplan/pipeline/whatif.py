"""What would fit over several chips: the fewest chips that hold the model, with both sides of the boundary.

The machine bound over stages gives the fewest chips any compiler could use (and, one fewer, a certificate that
`ipuplan check` re-proves); from there pipelines are solved with one chip more each time until one is FIT (every
stage placed and checked), at most `cap` chips."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..checker import check_dir
from ..checker.certificate import check_certificate
from ..checker.pipeline import check_pipeline_dir
from ..model import load_model
from ..job.solve import run_solve
from ..target import load_target
from .bound import greedy_chain
from .solve import Objective, PipelineJob, run_pipeline


def _verify(d: Path, verdict: str) -> str:
    if verdict == "FIT":
        rep = check_pipeline_dir(d)
        if not rep.ok:
            raise RuntimeError(f"what-if probe {d}: the pipeline checker rejects it: {rep.violations[0]}")
        return "pipeline, stages and boundaries checked"
    if verdict == "INFEASIBLE":
        cert = json.loads((d / "certificate.json").read_text())
        rep = check_certificate(cert, base=d)
        if not rep.ok:
            raise RuntimeError(f"what-if probe {d}: certificate rejected: {rep.violations[0]}")
        return f"certificate checked ({cert['kind']})"
    return "UNKNOWN: no plan on every stage and no proof"


def fewest_ipus(job, out: Path, report=None, cap: int = 8, objective: Objective = Objective.THROUGHPUT) -> dict:
    spec = load_model(job.model).with_options(layers=job.layers, precision=job.precision, fuse_qkv=job.fuse_qkv,
                                              fp8_scales=job.fp8_scales)
    target = load_target(job.target)
    chain = greedy_chain(spec, job.batch, target, job.options.support_reserve)
    res: dict = {"kind": "ipus", "bound_fewest": chain.fewest, "probes": {}, "fewest_fit": None}
    if chain.fewest is None:
        res["note"] = "one layer alone (with its stem or head) exceeds a chip: no number of chips holds it"
        return res
    job = dataclasses.replace(job, options=dataclasses.replace(job.options, explain=False))
    solved: dict = {}  # stage problems recur across chip counts
    if chain.fewest > 1:
        d = out / f"ipus-{chain.fewest - 1}"
        o = run_pipeline(PipelineJob(job, chain.fewest - 1, objective), d)
        res["below"] = {"ipus": chain.fewest - 1, "verdict": o.verdict.value, "evidence": _verify(d, o.verdict.value),
                        "dir": str(d)}
        res["probes"][str(chain.fewest - 1)] = o.verdict.value
        if report:
            report(f"ipus {chain.fewest - 1}: {o.verdict.value}, {res['below']['evidence']}")
    for n in range(chain.fewest, min(cap, spec.layers) + 1):
        d = out / f"ipus-{n}"
        if n == 1:  # the ordinary solve
            verdict = run_solve(job, d)[1]["verdict"]
            ev = "plan and placement checked" if verdict == "FIT" and check_dir(d).ok else verdict
        else:
            verdict = run_pipeline(PipelineJob(job, n, objective), d, report, solved).verdict.value
            ev = _verify(d, verdict)
        res["probes"][str(n)] = verdict
        if report:
            report(f"ipus {n}: {verdict}, {ev}")
        if verdict == "FIT":
            res.update(fewest_fit=n, fit_dir=str(d), fit_evidence=ev)
            break
        # one chip fewer than the next probe: the machine bound's, or this one's within the catalogue
        res["below"] = {"ipus": n, "verdict": verdict, "evidence": ev, "dir": str(d)}
    res["proven"] = res["fewest_fit"] is not None and (res["fewest_fit"] == chain.fewest or (
        res.get("below", {}).get("ipus") == res["fewest_fit"] - 1 and res["below"]["verdict"] == "INFEASIBLE"))
    return res
