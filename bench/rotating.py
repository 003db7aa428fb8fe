"""Rotating matmuls and ring attention emulated at full width: each case built with `--catalogue rotating` (or
`--catalogue compact`) and every
matmul and attention that has a rotating (ring) implementation restricted to those, so that they are what runs;
then `ipuplan check` of the package (its replay included) and `ipuplan run --compare` on seeded N(0, 1) pixels,
random weights (the emulator against the plan-faithful reference, which follows every rotation's order).

Usage: python bench/rotating.py [--cases siglip:2:4] [--catalogue rotating] [--rotate 0] [--ring 0]
       [--out bench/out/rotating]
(a case is model:layers:batch; --rotate N / --ring N keep only N-slice rotating matmuls / N-panel ring attention
where an op has them, 0 any)
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def restrict(rotate: int, ring: int) -> None:
    """Matmuls to their rotating implementations (`rotate` slices, 0: any), attention to its ring ones (`ring`
    panels, 0: any), where an op has any."""
    from ipuplan.catalogue import CATALOGUE
    from ipuplan.ir.graph import OpKind
    keep = {OpKind.MATMUL: lambda f: "rotate" in f and (not rotate or f["rotate"] == rotate),
            OpKind.ATTENTION: lambda f: "ring" in f and (not ring or f["ring"] == ring)}
    for kind, ok in keep.items():
        every = CATALOGUE[kind]

        def only(ctx, sop, every=every, ok=ok):
            impls = every(ctx, sop)
            return [im for im in impls if ok(im.fields)] or impls
        CATALOGUE[kind] = only


def build(model: str, layers: int, batch: int, out: Path, catalogue: str) -> int:
    """`ipuplan build` in this process (so that the restricted catalogue is what it plans with)."""
    sys.path.insert(0, str(ROOT))
    from tests.tests_helpers import run_main
    return run_main("build", ROOT / "models" / f"{model}.yaml", "--layers", layers, "--batch", batch, "--catalogue",
                    catalogue, "-o", out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="siglip:2:4")
    ap.add_argument("--catalogue", default="rotating", choices=("rotating", "compact"))
    ap.add_argument("--rotate", type=int, default=0)
    ap.add_argument("--ring", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "rotating"))
    a = ap.parse_args()
    restrict(a.rotate, a.ring)
    print(f"# rotating-only builds, --catalogue {a.catalogue}, c600, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}")
    for case in a.cases.split(","):
        model, layers, batch = case.split(":")
        d = Path(a.out) / f"{model}-l{layers}-b{batch}-{a.catalogue}-r{a.rotate}-ring{a.ring}"
        t0 = time.perf_counter()
        rc = build(model, int(layers), int(batch), d, a.catalogue)
        print(f"## {case}: build exit {rc}, {time.perf_counter() - t0:.0f} s", flush=True)
        if rc:
            continue
        plan = json.loads((d / "plan.json").read_text())
        for op, c in plan["choices"].items():
            if c.get("kind") in ("matmul", "attention"):
                print(f"  {op}: {c['label']}")
        from ipuplan.model import load_model
        spec = load_model(ROOT / "models" / f"{model}.yaml")
        px = np.random.default_rng(0).standard_normal((int(batch), spec.channels, spec.image_size, spec.image_size))
        np.save(d / "pixels.npy", px.astype(np.float32))
        for cmd in (["check", d / "model.ipupkg"], ["run", d / "model.ipupkg", "--pixels", d / "pixels.npy", "--compare"]):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "ipuplan.cli", *map(str, cmd)], capture_output=True, text=True)
            lines = [x for x in r.stdout.splitlines() if x.strip()]  # stderr carries the progress lines
            if r.returncode:
                lines += r.stderr.splitlines()[-3:]
            print(f"  ipuplan {cmd[0]}: exit {r.returncode}, {time.perf_counter() - t0:.0f} s")
            for x in lines[-6:]:
                print(f"    {x}")


if __name__ == "__main__":
    main()
