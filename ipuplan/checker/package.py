"""`ipuplan check PKG`: read the package (every digest), unpack the sources it carries (model, target, plan,
placement), re-check plan and placement as `check DIR` does, re-derive what the manifest states from them and
compare, check that every access at every Repeat iteration lands in data the placement holds at its step
(`access.py`, not the writer's validation), then replay the program symbolically against the model (independent
of the backend that built it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..errors import InputError
from ..plan import sha256
from .access import AccessError, check_access
from .manifest import Mismatch, compare
from .replay import ReplayError, replay


def check_package(path: str | Path) -> tuple[bool, list[str], str]:
    """(passed, report lines, first violation). A package that cannot be read or fails validation raises
    PackageError (exit 2); a package its sources do not imply, or a program that does not compute its model,
    is a failed check."""
    from ..model import build_graph, load_model
    from ..package import sources
    from ..package.io import read_package
    from ..target import load_target
    from .plan import check_dir
    path = Path(path)
    t0 = time.perf_counter()
    prog, m = read_package(path)
    lines = []
    with sources.unpacked(path, m) as d:
        plan_raw = (d / sources.LAYOUT["plan"]).read_bytes()
        rep = check_dir(d)
        t1 = time.perf_counter()
        if not rep.ok:
            return False, lines, f"the package's own plan: {rep.violations[0]}"
        lines.append(f"sources: the plan and placement the package carries check ({len(rep.lines)} checks, "
                     f"{t1 - t0:.1f} s)")
        plan = json.loads(plan_raw)
        placement = json.loads((d / sources.LAYOUT["placement"]).read_text())
        target = load_target(str(d / sources.LAYOUT["target"]))
        spec = load_model(str(d / sources.LAYOUT["model"])).with_options(
            layers=plan["layers"], precision=plan["precision"], fuse_qkv=plan["fuse_qkv"],
            fp8_scales=plan.get("fp8_scales") or None)
    if m.get("plan", {}).get("sha256") != m["sources"]["plan"]["sha256"]:
        return False, lines, "the manifest names a plan other than the one the package carries"
    beside = path.parent / "plan.json"
    if beside.exists() and sha256(beside) != m["sources"]["plan"]["sha256"]:
        return False, lines, f"{beside} is not the plan this package was built from (sha256 differs)"
    from ..model.stage import Stage
    try:
        stage = Stage.in_doc(plan, plan["layers"], "plan")
    except InputError as e:
        return False, lines, f"the package's plan: {e}"
    graph = build_graph(spec, plan["batch"], stage)
    try:
        compare(prog, m, plan, placement, graph, target, rep)
    except Mismatch as e:
        return False, lines, f"the package is not what its sources imply: {e}"
    t2 = time.perf_counter()
    lines.append(f"manifest: identity, target record, codelets, Repeat x{prog.count}, {len(prog.bindings)} bindings, "
                 f"{len(prog.buffers.name):,} buffers, step list, table, descriptor and program bytes and vertex "
                 f"parameters are what model, target, plan and placement imply ({t2 - t1:.1f} s)")
    try:
        counts = check_access(prog, m, placement, target)
    except AccessError as e:
        return False, lines, f"access: {e}"
    t3 = time.perf_counter()
    lines.insert(0, f"package {path}: {m['model']} batch {m['batch']}, {m['layers']} layers, {len(prog.steps)} steps "
                    f"(Repeat x{prog.count}), {counts['vertices']:,} vertices, {counts['runs']:,} exchange runs, "
                    f"{counts['bound_elements']:,} bound elements: every access inside data its step holds, at every "
                    f"iteration ({t3 - t2:.1f} s)")
    try:
        r = replay(prog, m, graph)
    except ReplayError as e:
        return False, lines, f"replay: {e}"
    t4 = time.perf_counter()
    lines.append(f"replay: {r['vertices_checked']:,} vertex executions read what their op reads and wrote what it "
                 f"writes, iterations {r['iterations_replayed']} of {prog.count}; the output binding holds "
                 f"{', '.join(r['outputs'])} ({t4 - t3:.1f} s)")
    return True, lines, ""
