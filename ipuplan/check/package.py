"""`ipuplan check DIR/model.ipupkg`: read and validate the package, confirm it is the package of the model
and plan beside it, and replay it symbolically against the model (independent of the backend that built it)."""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import InputError
from ..plan import sha256
from .replay import ReplayError, replay


def check_package(path: str | Path) -> tuple[bool, list[str], str]:
    """(passed, report lines, first violation). A package that cannot be read or fails validation raises
    PackageError (exit 2); a program that does not compute its model is a failed check."""
    from ..model import build_graph, load_model
    from ..package.io import read_package
    from ..package.validate import validate
    path = Path(path)
    t0 = time.perf_counter()
    prog, m = read_package(path)
    counts = validate(prog, m, path)
    t1 = time.perf_counter()
    lines = [f"package {path}: {m['model']} batch {m['batch']}, {m['layers']} layers, {len(prog.steps)} steps "
             f"(Repeat x{prog.count}), {counts['vertices']:,} vertices, {counts['runs']:,} exchange runs, "
             f"{counts['bound_elements']:,} bound elements: valid ({t1 - t0:.1f} s)"]
    model = Path(m["inputs"]["model"]["path"])
    if not model.exists():
        raise InputError(str(path), "inputs.model.path", f"{model} does not exist",
                         "run the check from the directory the package was built in")
    if sha256(model) != m["inputs"]["model"]["sha256"]:
        return False, lines, f"{model} has changed since the package was built (sha256 differs)"
    plan = path.parent / "plan.json"
    if plan.exists() and sha256(plan) != m["plan"]["sha256"]:
        return False, lines, f"{plan} is not the plan this package was built from (sha256 differs)"
    spec = load_model(str(model)).with_options(layers=m["layers"], precision=m["precision"],
                                                 fuse_qkv=m["fuse_qkv"])
    graph = build_graph(spec, m["batch"])
    try:
        r = replay(prog, m, graph)
    except ReplayError as e:
        return False, lines, f"replay: {e}"
    t2 = time.perf_counter()
    lines.append(f"replay: {r['vertices_checked']:,} vertex executions read what their op reads and wrote what it "
                 f"writes, iterations {r['iterations_replayed']} of {prog.count}; the output binding holds "
                 f"{', '.join(r['outputs'])} ({t2 - t1:.1f} s)")
    return True, lines, ""
