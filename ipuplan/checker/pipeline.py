"""The checker's view of a pipeline: every stage directory re-checked as a single-chip plan, the stages tiling the
model in order, the boundary activations agreeing on both sides, link transfers, throughput and latency recomputed;
and the pipeline machine certificate (no partition over N chips fits) re-proved from the checker's own walk."""

from __future__ import annotations

import json
from pathlib import Path

from ..model.build import STAGE_INPUT, STAGE_OUTPUT
from .machine import machine_statement
from .plan import CheckReport, load_inputs
from .validate import Invalid, get, integer

PIPELINE = "ipuplan-pipeline/1"
SAME = ("model", "target", "batch", "layers", "precision", "fuse_qkv", "fp8_scales", "options")


def _link_cycles(target, nbytes: int) -> int:
    """A boundary transfer from the target file's link figures (the checker's own arithmetic, not target.Link's)."""
    lk = target.link
    return lk.sync_cycles + -(-lk.crossings * nbytes * target.clock_hz // lk.bytes_per_second)


def check_pipeline_dir(d: Path, check_stage=None) -> CheckReport:
    """Check DIR/pipeline.json and its stage directories; `check_stage(i, stage_dir)` -> (ok, lines, violations)
    re-checks one stage (default: its plan and placement, as `check DIR`)."""
    from . import check_dir

    def plan_and_placement(i: int, sd: Path):
        sub = check_dir(sd)
        return sub.ok, [x for x in sub.lines if x.startswith(("verified", "placement"))], sub.violations
    rep = CheckReport()
    W = "pipeline.json"
    try:
        doc = json.loads((d / W).read_text())
    except (OSError, ValueError, UnicodeDecodeError) as e:
        rep.fail(f"{W}: not readable ({e})")
        return rep
    try:
        _check(doc, d, rep, check_stage or plan_and_placement)
    except Invalid as e:
        rep.fail(str(e))
    return rep


def _check(doc: dict, d: Path, rep: CheckReport, check_stage) -> None:
    W = "pipeline.json"
    if not isinstance(doc, dict) or doc.get("format") != PIPELINE or doc.get("verdict") != "FIT":
        raise Invalid(f"{W}: not a FIT pipeline of format {PIPELINE}")
    loaded = load_inputs(doc, rep, W, d)
    if loaded is None:
        return
    _, target = loaded
    ipus = integer(doc, "ipus", W, 1, 64)
    stages = get(doc, "stages", W)
    if not isinstance(stages, list) or len(stages) != ipus:
        raise Invalid(f"{W}: {ipus} chips but {len(stages) if isinstance(stages, list) else stages!r} stages")
    if ipus > 1 and target.link is None:
        raise Invalid(f"{W}: the target declares no link between chips")
    layers, batch = doc["layers"], doc["batch"]
    graphs, per = [], []
    first = 0
    for i, s in enumerate(stages):
        where = f"{W}: stages[{i}]"
        if not isinstance(s, dict) or s.get("dir") != f"stage-{i}":
            raise Invalid(f"{where}: not stage directory stage-{i}")
        sd = d / s["dir"]
        _, lines, violations = check_stage(i, sd)
        rep.lines += [f"stage {i}: {line}" for line in lines]
        for v in violations:
            rep.fail(f"stage {i}: {v}")
        try:
            plan = json.loads((sd / "plan.json").read_text())
        except (OSError, ValueError, UnicodeDecodeError) as e:
            raise Invalid(f"{where}: no readable plan.json ({e})") from None
        for k in SAME:
            a, b = plan.get(k), doc.get(k)
            if k == "options" and isinstance(a, dict) and isinstance(b, dict):  # placement may have added headroom
                if isinstance(a.get("headroom"), int) and isinstance(b.get("headroom"), int) and \
                        a["headroom"] >= b["headroom"]:
                    a, b = dict(a, headroom=0), dict(b, headroom=0)
            if a != b:
                rep.fail(f"{where}: its plan's {k} ({plan.get(k)!r}) is not the pipeline's ({doc.get(k)!r})")
        for k in ("model", "target"):
            if plan.get("inputs", {}).get(k, {}).get("sha256") != doc["inputs"][k]["sha256"]:
                rep.fail(f"{where}: made for a different {k} file than the pipeline")
        rec = plan.get("stage")
        want = {"first": first, "count": rec.get("count") if isinstance(rec, dict) else None,
                "stem": i == 0, "head": i == ipus - 1}
        if s.get("stage") != rec or not isinstance(rec, dict) or rec != want or \
                not isinstance(rec["count"], int) or rec["count"] < 1:
            raise Invalid(f"{where}: stage {rec!r} does not continue the partition at layer {first} "
                          f"(the stem on the first chip, the head on the last)")
        first += rec["count"]
        got = load_inputs(plan, rep, f"stage-{i}/plan.json", sd)
        if got is None:
            return
        graphs.append(got[0])
        cyc = plan.get("cycles", {}).get("modeled")
        if s.get("cycles") != cyc:
            rep.fail(f"{where}: {s.get('cycles')} cycles, its plan says {cyc}")
        per.append(cyc if isinstance(cyc, int) else 0)
    if first != layers:
        raise Invalid(f"{W}: the stages hold layers 0..{first - 1} of {layers}")
    for i in range(ipus - 1):
        out = graphs[i].value(graphs[i].outputs[0])
        inp = graphs[i + 1].value(STAGE_INPUT)
        if (out.shape, out.dtype) != (inp.shape, inp.dtype):
            rep.fail(f"boundary {i} -> {i + 1}: stage {i} hands {out.type_str()}, stage {i + 1} takes "
                     f"{inp.type_str()}")
        o = stages[i].get("output") or {}
        lc = _link_cycles(target, out.nbytes)
        if (o.get("value"), o.get("bytes"), o.get("link_cycles"), o.get("shape"), o.get("dtype")) != \
                (out.name, out.nbytes, lc, list(out.shape), out.dtype.short) or out.name != STAGE_OUTPUT:
            rep.fail(f"boundary {i} -> {i + 1}: recorded {o}, recomputed {out.nbytes:,} B {list(out.shape)} "
                     f"{out.dtype.short}, {lc:,} link cycles")
        per[i] += lc
        rep.lines.append(f"boundary {i} -> {i + 1}: {out.type_str()} ({out.nbytes:,} B) in both stages' graphs; "
                         f"link {lc:,} cycles")
    if stages[-1].get("output") is not None:
        rep.fail(f"{W}: the last stage hands nothing on")
    bott = max(per)
    tp, lat = doc.get("throughput", {}), doc.get("latency", {})
    if (tp.get("bottleneck_cycles"), lat.get("cycles")) != (bott, sum(per)):
        rep.fail(f"{W}: throughput/latency cycles {tp.get('bottleneck_cycles')}/{lat.get('cycles')}, recomputed "
                 f"{bott}/{sum(per)}")
    rep.lines.append(f"pipeline: {ipus} stage(s) tile layers 0..{layers - 1}; slowest stage + link {bott:,} cycles "
                     f"= {batch * target.clock_hz / bott:,.1f} images/s; latency {sum(per):,} cycles")


def check_pipeline_certificate(cert: dict, rep: CheckReport, base) -> None:
    """Re-prove "no partition of the model over `ipus` chips fits": each recorded range is maximal (one layer
    more exceeds a chip by the checker's machine statement), the ranges are consecutive from layer 0, and after
    `ipus` of them layers remain; or one layer alone (with its stem or head) exceeds a chip."""
    W = "certificate.json"
    layers = integer(cert, "layers", W, 1, 1024)
    ipus = integer(cert, "ipus", W, 1, 64)
    links = get(cert, "links", W)
    if not isinstance(links, list) or len(links) > ipus:
        raise Invalid(f"{W}: links is not a list of at most {ipus} ranges")
    support = get(cert, "options", W).get("support_reserve")

    def statement(first: int, count: int) -> dict | None:
        st = {"first": first, "count": count, "stem": first == 0, "head": first + count == layers}
        got = load_inputs({**cert, "stage": st}, rep, W, base)
        if got is None:
            return None
        g, target = got
        return machine_statement(g, target, support)

    first = 0
    for j, ln in enumerate(links):
        if not isinstance(ln, dict) or ln.get("first") != first or not isinstance(ln.get("reach"), int) \
                or not first < ln["reach"] <= layers:
            raise Invalid(f"{W}: links[{j}] does not start at layer {first} and reach past it")
        reach = ln["reach"]
        if reach < layers:
            m = statement(first, reach + 1 - first)
            if m is None:
                return
            if not m["proves"]:
                rep.fail(f"links[{j}]: layers {first}..{reach} need {m['needs_bytes']:,} B, which fit one chip's "
                         f"{m['capacity_bytes']:,} B: the range is not maximal")
                return
            rep.lines.append(f"links[{j}]: layers {first}..{reach} need {m['needs_bytes']:,} B > "
                             f"{m['capacity_bytes']:,} B of one chip, so a stage starting at or before layer {first} "
                             f"ends before layer {reach}")
        first = reach
    if len(links) == ipus:
        if first >= layers:
            rep.fail(f"{W}: {ipus} maximal ranges cover all {layers} layers: no proof")
            return
        rep.lines.append(f"{ipus} chip(s) hold at most layers 0..{first - 1} of {layers}: no partition fits")
        return
    m = statement(first, 1)
    if m is None:
        return
    if not m["proves"]:
        rep.fail(f"{W}: fewer than {ipus} ranges, and layer {first} alone fits a chip: no proof")
        return
    rep.lines.append(f"layer {first} alone needs {m['needs_bytes']:,} B > {m['capacity_bytes']:,} B of one chip: no "
                     f"partition over any number of chips fits")
