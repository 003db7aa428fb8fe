"""Implementation spaces side by side (`--catalogue`: shaped, the default, against grid, or any list such as
shaped,rotating), in one run on one machine.

For each case: modeled cycles and ms, images per second at the target's clock, compute / exchange / exchange
beyond bytes / sync, the ratio to the compute roofline, the solve's wall time (whole CLI process, placement and
the checker included); then, with --what-if, the largest FIT batch of each model (`ipuplan explain --what-if
batch`), each catalogue in turn.

The compute roofline of a case: every matmul and attention product of the IR at the AMP's peak rate on every
tile (FP8 operands at the target's f8 MACs per cycle, F16 at its f16 rate), nothing else.

Usage: python bench/catalogues.py [--cases siglip:1,siglip:2,pe:1,pe:2,pe:4,siglip-base-224:1,siglip-base-224:8,
       vit-small:1] [--catalogues shaped,grid] [--what-if siglip,pe] [--out bench/out/catalogues]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = "siglip:1,siglip:2,pe:1,pe:2,pe:4,siglip-base-224:1,siglip-base-224:8,vit-small:1"


def roofline(model: str, batch: int) -> int:
    """Cycles of the IR's matmul and attention products at the AMP's peak on every tile."""
    from ipuplan.ir.graph import OpKind
    from ipuplan.model import build_graph, load_model
    from ipuplan.target import load_target
    t = load_target(ROOT / "targets" / "c600.yaml")
    g = build_graph(load_model(ROOT / "models" / f"{model}.yaml"), batch)
    macs = 0.0

    def walk(graph, trips):
        nonlocal macs
        for op in graph.ops:
            if op.kind is OpKind.REPEAT:
                walk(op.attrs.body, trips * op.attrs.count)
            elif op.kind is OpKind.MATMUL:
                x, w = graph.value(op.inputs[0]), graph.value(op.inputs[1])
                m = 1
                for d in x.shape[:-1]:
                    m *= d
                rate = t.amp_macs_per_cycle["f8" if x.dtype.is_fp8 else "f16"]
                macs += trips * m * x.shape[-1] * w.shape[-1] / rate
            elif op.kind is OpKind.ATTENTION:
                q, k = graph.value(op.inputs[0]), graph.value(op.inputs[1])
                a = op.attrs
                macs += trips * 2 * q.shape[0] * a.heads * q.shape[1] * k.shape[1] * a.head_dim / \
                    t.amp_macs_per_cycle["f16"]

    walk(g, 1)
    return round(macs / t.tiles)


def solve(model: str, batch: int, catalogue: str, out: Path) -> dict:
    d = out / f"{model}-b{batch}-{catalogue}"
    t0 = time.perf_counter()
    rc = subprocess.run(["ipuplan", "solve", f"models/{model}.yaml", "--batch", str(batch), "--catalogue", catalogue,
                         "-o", str(d)], capture_output=True, cwd=ROOT).returncode
    wall = time.perf_counter() - t0
    doc = json.loads((d / ("plan.json" if rc == 0 else "verdict.json")).read_text())
    return {"rc": rc, "wall": wall, "doc": doc}


def largest_batch(model: str, catalogue: str, out: Path) -> str:
    d = out / f"{model}-whatif-{catalogue}"
    subprocess.run(["ipuplan", "solve", f"models/{model}.yaml", "--batch", "1", "--catalogue", catalogue, "-o", str(d)],
                   capture_output=True, cwd=ROOT)
    t0 = time.perf_counter()
    r = subprocess.run(["ipuplan", "explain", str(d), "--what-if", "batch", "--json"], capture_output=True, text=True,
                       cwd=ROOT)
    wall = time.perf_counter() - t0
    try:
        w = json.loads(r.stdout)["what_if"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return f"failed (exit {r.returncode}): {r.stderr.strip().splitlines()[-1:] if r.stderr else ''}"
    probes = ", ".join(f"{k}={v}" for k, v in w.get("probes", {}).items())
    return (f"{w.get('largest_fit')} ({w.get('fit_evidence')}); smallest INFEASIBLE {w.get('smallest_infeasible')} "
            f"({w.get('infeasible_evidence')}); unknown {w.get('unknown') or 'none'}; probes {probes}; {wall:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--catalogues", default="shaped,grid", help="implementation spaces, comma-separated")
    ap.add_argument("--what-if", default="", help="models whose largest FIT batch to find, comma-separated")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "catalogues"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d')} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    cats = a.catalogues.split(",")
    print("| case | catalogue | verdict | modeled cycles | ms | images/s | compute | exchange | beyond bytes | sync | "
          "x roofline | solve s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case in a.cases.split(","):
        model, batch = case.split(":")
        roof = roofline(model, int(batch))
        for cat in cats:
            r = solve(model, int(batch), cat, out)
            doc = r["doc"]
            if doc["verdict"] != "FIT":
                print(f"| {model} b{batch} | {cat} | {doc['verdict']} | | | | | | | | | {r['wall']:.0f} |", flush=True)
                continue
            c = doc["cycles"]
            b = c["breakdown"]
            print(f"| {model} b{batch} | {cat} | FIT | {c['modeled']:,} | {c['ms']:.2f} | {int(batch) * 1000 / c['ms']:.1f} | "
                  f"{b['compute']:,} | "
                  f"{b['exchange']:,} | {b['exchange_beyond_bytes']:,} | {b['sync']:,} | {c['modeled'] / roof:.2f} | "
                  f"{r['wall']:.0f} |", flush=True)
    for model in filter(None, a.what_if.split(",")):
        for cat in cats:
            print(f"largest FIT batch, {model}, {cat}: {largest_batch(model, cat, out)}", flush=True)


if __name__ == "__main__":
    main()
