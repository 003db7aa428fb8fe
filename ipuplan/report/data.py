"""What a report shows, gathered from a solve, build or run directory into one compact JSON document: the
memory over tiles and steps (per placement group, by region), every tile's address map, the exchange per
tile, the modeled time per superstep (and the emulator's when a run left a profile), and for INFEASIBLE the
certificate's rows and the explanation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise InputError(str(path), None, f"not readable JSON ({e})", "pass a directory ipuplan wrote") from None


def _tiles(ranges) -> np.ndarray:
    return np.concatenate([np.arange(a, b + 1) for a, b in ranges]) if ranges else np.zeros(0, np.int64)


def _memory(plan: dict, placement: dict) -> dict:
    """Per group and step the live bytes in region 0 and region 1; per group its buffers."""
    steps = len(plan["step_names"]) if "step_names" in plan else None
    acc = plan["accounting"]
    base, r0 = placement["base"], acc["region0_bytes"]
    names: dict[str, int] = {}
    groups, tile_group = [], {}
    nsteps = 1 + max(b[4] for g in placement["groups"] for b in g["buffers"])
    for gi, g in enumerate(placement["groups"]):
        for t in _tiles(g["tiles"]).tolist():
            tile_group[t] = gi
        bufs = [[names.setdefault(n, len(names)), off, size, first, last] for n, off, size, first, last in g["buffers"]
                if size > 0]
        live0, live1 = np.zeros(nsteps, np.int64), np.zeros(nsteps, np.int64)
        for _, off, size, first, last in bufs:
            (live0 if off < r0 else live1)[first:last + 1] += size
        groups.append({"buffers": bufs, "r0": live0.tolist(), "r1": live1.tolist()})
    T = max(tile_group) + 1
    return {"base": base, "region0": r0, "usable": acc["usable_bytes"], "steps": nsteps, "names": list(names),
            "tile_group": [tile_group[t] for t in range(T)], "groups": groups, "declared_steps": steps}


def _exchange(plan: dict, placement: dict | None, package) -> dict:
    ex = plan.get("exchange") or {}
    out = {"tables_limit": (ex.get("tables") or {}).get("limit"), "fragments_limit": (ex.get("fragments") or {}).get("limit"),
           "summary": ex}
    if package is not None:
        prog, man = package
        T = prog.tiles
        sent = np.zeros(T, np.int64)
        recv = np.zeros(T, np.int64)
        pieces = np.zeros(T, np.int64)
        largest = []
        for i, s in enumerate(prog.steps):
            if s.kind != "exchange":
                continue
            b_out = np.bincount(s.src, weights=s.nbytes, minlength=T)
            ok = s.dst >= 0
            b_in = np.bincount(s.dst[ok], weights=np.broadcast_to(s.nbytes[:, None], s.dst.shape)[ok], minlength=T)
            sent += b_out.astype(np.int64)
            recv += b_in.astype(np.int64)
            pieces += np.bincount(s.src, minlength=T) + np.bincount(s.dst[ok], minlength=T)
            largest.append({"step": i, "op": s.op, "name": s.name, "runs": len(s),
                            "busiest_bytes": int(max(b_out.max(), b_in.max()))})
        largest.sort(key=lambda r: -r["busiest_bytes"])
        out.update(tables=prog.tables.tolist(), accounted=prog.info["accounted_tables"].tolist(),
                   pieces=pieces.tolist(), sent=sent.tolist(), received=recv.tolist(), largest=largest[:12])
    elif placement is not None:
        T = 1 + max(t for g in placement["groups"] for a, b in g["tiles"] for t in (b,))
        tables = np.zeros(T, np.int64)
        for g in placement["groups"]:
            size = sum(b[2] for b in g["buffers"] if b[0] == "exchange tables")
            tables[_tiles(g["tiles"])] = size
        out.update(tables_allocated=tables.tolist())
    return out


def _time(plan: dict, package, profile: dict | None) -> dict:
    out = {"modeled": (plan.get("cycles") or {}).get("modeled"), "breakdown": (plan.get("cycles") or {}).get("breakdown")}
    if package is not None:
        _, man = package
        names, per = man["step_names"], man["modeled_steps"]
        out["supersteps"] = [{"name": n, "compute": c[0], "exchange": c[1], "sync": c[2]} for n, c in zip(names, per)]
        out["count"], out["body"] = man["count"], man.get("body")
    if profile is not None:
        out["profile"] = [{k: r[k] for k in ("name", "iteration", "compute", "exchange", "sync", "emulator_seconds")}
                          for r in profile["supersteps"]]
    return out


def _sweep(sweep: dict) -> dict:
    """A sweep: the verdict grid (a row per model, target and option values; a column per batch), the modeled
    latency against batch, and each row's boundary pair (largest FIT batch, smallest INFEASIBLE batch)."""
    rows: dict[str, dict] = {}

    def key(c: dict) -> str:
        return " · ".join([Path(c["model"]).stem, Path(c["target"]).stem, f"L{c['layers']}" if c["layers"] else "full"]
                          + [f"{k}={v}" for k, v in c["settings"].items()])
    for c in sweep["cases"]:
        r = rows.setdefault(key(c), {"row": key(c), "cases": {}})
        r["cases"][str(c["batch"])] = {k: c.get(k) for k in ("name", "verdict", "status", "modeled_ms", "checked",
                                                              "certificate", "slack_bytes")}
    for r in rows.values():
        fit = [int(b) for b, c in r["cases"].items() if c["verdict"] == "FIT"]
        inf = [int(b) for b, c in r["cases"].items() if c["verdict"] == "INFEASIBLE"]
        r["largest_fit"] = max(fit) if fit else None
        r["smallest_infeasible"] = min((b for b in inf if not fit or b > max(fit)), default=None)
    for srch in sweep.get("searches", []):  # a largest-batch sweep: the search's answer counts checked probes only
        if key(srch) in rows:
            rows[key(srch)].update({k: srch.get(k) for k in ("largest_fit", "smallest_infeasible", "proven")})
    batches = sorted({c["batch"] for c in sweep["cases"]})
    return {"format": "ipuplan-report/1", "sweep": {"batches": batches, "rows": list(rows.values())},
            "head": {"model": f"sweep of {len(sweep['cases'])} cases", "target": "", "batch": "", "layers": "",
                     "verdict": "SWEEP"}}


def _pipeline(doc: dict) -> dict:
    """A pipeline: per stage its layers, modeled cycles and outgoing link transfer (each stage's own page is
    DIR/stage-K/report.html); throughput, latency, the partitions the search tried."""
    head = {k: doc.get(k) for k in ("model", "target", "batch", "layers", "precision", "verdict")}
    rows = [{"index": s["index"], "dir": s["dir"], "first": s["stage"]["first"], "count": s["stage"]["count"],
             "stem": s["stage"]["stem"], "head": s["stage"]["head"], "cycles": s["cycles"], "ms": s["ms"],
             "link_cycles": (s.get("output") or {}).get("link_cycles", 0)} for s in doc["stages"]]
    return {"format": "ipuplan-report/1", "head": head,
            "pipeline": {"ipus": doc["ipus"], "stages": rows, "throughput": doc["throughput"],
                         "latency": doc["latency"], "bound": doc["bound"], "link": doc.get("link"),
                         "partitions": (doc.get("partition_search") or {}).get("partitions", [])}}


def _step_names(plan: dict, base: Path | None = None) -> list[str] | None:
    """The plan's steps, from its model (the schedule: each op's exchange and compute step)."""
    try:
        from ..artefacts import resolve_input
        from ..catalogue.schedule import build_schedule
        from ..model import build_graph, load_model
        path, _ = resolve_input(plan["inputs"]["model"], base)
        spec = load_model(path).with_options(
            layers=plan["layers"], precision=plan.get("precision"), fuse_qkv=plan.get("fuse_qkv"),
            fp8_scales=plan.get("fp8_scales") or None)
        from ..model.stage import Stage
        return build_schedule(build_graph(spec, plan["batch"], Stage.in_doc(plan, plan["layers"], "plan"))).steps
    except Exception:  # the model file moved: steps are shown by number
        return None


def collect(directory: str | Path) -> dict:
    d = Path(directory)
    if not d.is_dir():
        raise InputError(str(d), None, "is not a directory", "pass a directory ipuplan solve, build or run wrote")
    sweep = _read(d / "sweep.json")
    if sweep is not None:
        return _sweep(sweep)
    pipe = _read(d / "pipeline.json")
    if pipe is not None:
        return _pipeline(pipe)
    plan, verdict = _read(d / "plan.json"), _read(d / "verdict.json")
    doc = plan or verdict
    if doc is None:
        raise InputError(str(d), None, "holds neither plan.json nor verdict.json",
                         "pass a directory ipuplan solve, build or run wrote")
    head = {k: doc.get(k) for k in ("model", "target", "batch", "layers", "precision", "verdict")}
    out: dict = {"format": "ipuplan-report/1", "head": head, "accounting": doc.get("accounting"),
                 "peaks": doc.get("peaks"), "slack": doc.get("slack")}
    package = None
    if (d / "model.ipupkg").exists():
        from ..package.io import read_package
        package = read_package(d / "model.ipupkg")
    if plan is not None:
        placement = _read(d / "placement.json")
        if placement is not None:
            out["memory"] = _memory(plan, placement)
            out["memory"]["step_names"] = package[1]["step_names"] if package is not None else _step_names(plan, d)
        out["exchange"] = _exchange(plan, placement, package)
        out["time"] = _time(plan, package, _read(d / "profile.json"))
    if doc.get("verdict") == "INFEASIBLE":
        cert = _read(d / "certificate.json") or {}
        out["infeasible"] = {"headline": doc.get("headline"), "core": doc.get("core"), "machine": doc.get("machine"),
                             "explanation": (doc.get("core") or {}).get("explanation"),
                             "kind": cert.get("kind"), "rows": cert.get("rows", [])[:12],
                             "what_if": {p.stem: _read(p) for p in sorted((d / "what-if").glob("*.json"))}}
    if doc.get("verdict") == "UNKNOWN":
        out["unknown"] = doc.get("unknown")
    return out
