"""How long the CP-SAT model takes to build, and a fingerprint of what is built.

Usage: python bench/model_build.py [--big]
For each case: the tile classes, then the three models a solve builds (the solving model with guards asserted, the
core's model with free guards, the elastic model of the explanation), each timed, and a SHA-256 prefix of each
model's text and of its guard names. Two checkouts that print the same fingerprints build the same models; run it
from one checkout with `PYTHONPATH=<other checkout>` to time the other on the same machine.
--big adds siglip-large-384 b20 in the compact catalogue (the precheck test's model).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import platform
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [("vit-small", "small64", 2, "shaped", None), ("vit-small", "small64", 4, "grid", None),
         ("siglip", "c600", 2, "shaped", 2), ("pe", "c600", 4, "rotating", 2), ("siglip", "c600", 3, "compact", None)]
BIG = [("siglip-large-384", "c600", 20, "compact", None)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true")
    args = ap.parse_args()
    import ipuplan
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.problem import build_problem
    from ipuplan.solver.rounds import build_model
    from ipuplan.target import load_target
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"ipuplan from {Path(ipuplan.__file__).parent}")
    print("| case | classes | classes s | solving model s | core model s | elastic model s | fingerprints |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for model, target, batch, catalogue, layers in CASES + (BIG if args.big else []):
        spec = load_model(ROOT / "models" / f"{model}.yaml").with_options(layers=layers)
        p = build_problem(build_graph(spec, batch), load_target(ROOT / "targets" / f"{target}.yaml"), batch,
                          catalogue=Catalogue(catalogue))
        t = time.perf_counter()
        classes = problem_classes(p)
        seconds, prints = [time.perf_counter() - t], []
        for kw in (dict(objective=True), dict(objective=False), dict(objective=False, elastic=True)):
            t = time.perf_counter()
            ctx = build_model(p, classes, **kw)
            seconds.append(time.perf_counter() - t)
            prints.append(hashlib.sha256(str(ctx.m.Proto()).encode()).hexdigest()[:12] + "/" +
                          hashlib.sha256(repr([g for _, g in ctx.guards]).encode()).hexdigest()[:8])
        name = f"{model} b{batch} {catalogue}" + (f", {layers} layers" if layers else "") + f" on {target}"
        print(f"| {name} | {len(classes)} | " + " | ".join(f"{s:.1f}" for s in seconds) + f" | {' '.join(prints)} |",
              flush=True)


if __name__ == "__main__":
    main()
