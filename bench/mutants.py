"""The checker against edited artefacts: random leaf mutations of real plans (each must be rejected or verify to
exactly the original figures), and the audited plan and certificate edits (each must be rejected).

Usage: python bench/mutants.py [--mutants 2000] [--seed 0] [--out bench/out/mutants]
Prints the counts and one line per audited edit (paste into bench/RESULTS.md with the command and date).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from tests_helpers import leaves, set_leaf, target_with_tiles  # noqa: E402

from ipuplan.checker import check_plan  # noqa: E402
from ipuplan.checker.certificate import check_certificate  # noqa: E402
from ipuplan.formats import digest  # noqa: E402


def _solve(out: Path, *args) -> dict:
    rc = subprocess.run(["ipuplan", "solve", *map(str, args), "-o", str(out)], capture_output=True).returncode
    return json.loads((out / ("plan.json" if rc == 0 else "certificate.json")).read_text())


def _mutations(v):
    if isinstance(v, bool):
        return [not v, 0, "true"]
    if isinstance(v, int):
        return [0, -1, v + 1, v - 8, v * 2, 10 ** 9, str(v), None]
    if isinstance(v, float):
        return [0.0, -v, v * 2, None]
    if isinstance(v, str):
        return ["", v + "x", "matmul", None, 3]
    return [0, "x"]


def mutation_run(plan: dict, n: int, rng: random.Random) -> tuple[int, int, int]:
    """(rejected, verified unchanged, verified with other figures: must be 0)."""
    base = check_plan(plan).lines
    paths = list(leaves(plan))
    rejected = same = other = 0
    for _ in range(n):
        path, value = rng.choice(paths)
        bad = copy.deepcopy(plan)
        set_leaf(bad, path, rng.choice(_mutations(value)))
        rep = check_plan(bad)
        if not rep.ok:
            rejected += 1
        elif rep.lines == base:
            same += 1
        else:
            other += 1
    return rejected, same, other


def audited_plan_edits(plan: dict):
    fc2 = next(k for k in plan["choices"] if k.endswith("fc2"))
    gelu = next(k for k in plan["choices"] if k.endswith("/gelu"))
    ln = next(k for k, c in plan["choices"].items() if c.get("kind") == "layernorm")
    rows = plan["choices"][gelu]["output"]["rows"]
    edits = [(f"choices.{gelu}.output.row_align: 0", gelu, "output", "row_align", 0),
             (f"choices.{gelu}.output.col_align: 0", gelu, "output", "col_align", 0),
             (f"choices.{fc2}.output.row_align: 0", fc2, "output", "row_align", 0),
             (f"choices.{gelu}.output.replicas: 0", gelu, "output", "replicas", 0),
             (f"choices.{fc2}.kind: Matmul", fc2, None, "kind", "Matmul")]
    for name, op, sub, key, val in edits:
        bad = copy.deepcopy(plan)
        (bad["choices"][op][sub] if sub else bad["choices"][op])[key] = val
        yield name, check_plan(bad)
    bad = copy.deepcopy(plan)
    bad["choices"][gelu]["output"].update(row_groups=4, pr=rows - 2)
    yield f"choices.{gelu}.output: row_groups 4, pr {rows - 2} on {rows} rows", check_plan(bad)
    bad = copy.deepcopy(plan)
    bad["choices"][ln].pop("kind")
    rep = check_plan(bad)
    yield f"choices.{ln}: label removed (derived: must verify unchanged)", rep


def audited_certificate_edits(cert: dict):
    def fixed(c):
        c["digest"] = digest(c)
        return c
    for name, edit in (("layers 2 -> 3 (digest recomputed)", lambda c: c.update(layers=c["layers"] + 1)),
                       ("exchange table budget 0", lambda c: c["options"].update(exchange_table_budget=0)),
                       ("support reserve larger than SRAM", lambda c: c["options"].update(support_reserve=10 ** 7)),
                       ("edited capacity (digest recomputed)", lambda c: c["rows"][0].update(capacity=c["rows"][0]["capacity"] + 8)),
                       ("edited without a new digest", None)):
        c = copy.deepcopy(cert)
        if edit is None:
            c["batch"] += 1
        else:
            edit(c)
            fixed(c)
        yield name, check_certificate(c)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench/out/mutants")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)
    plans = {"vit-small b2 (64 tiles)": _solve(out / "small", "models/vit-small.yaml", "--batch", 2, "--target",
                                               "targets/small64.yaml"),
             "SigLIP b2 27 layers": _solve(out / "siglip", "models/siglip.yaml", "--batch", 2)}
    print(f"# {time.strftime('%Y-%m-%d')}; python bench/mutants.py --mutants {a.mutants} --seed {a.seed}\n")
    print("| plan | mutants | rejected | verified, figures unchanged | verified, other figures |")
    print("|---|---:|---:|---:|---:|")
    for name, plan in plans.items():
        n = a.mutants if "small" in name else max(1, a.mutants // 20)
        t = time.perf_counter()
        r, s, o = mutation_run(plan, n, rng)
        print(f"| {name} | {n:,} | {r:,} | {s:,} | {o} | ({time.perf_counter() - t:.0f} s)", flush=True)
    print("\naudited plan edits (SigLIP b2):")
    for name, rep in audited_plan_edits(plans["SigLIP b2 27 layers"]):
        print(f"- {name}: {'verified' if rep.ok else 'rejected: ' + rep.violations[0]}")
    d = out / "cert"
    t = target_with_tiles(out, 16)
    cert = _solve(d, "models/vit-small.yaml", "--batch", 4, "--target", t, "--headroom", 520000, "--layers", 2)
    print("\naudited certificate edits (vit-small b4 on 16 tiles, 520,000 B headroom):")
    for name, rep in audited_certificate_edits(cert):
        print(f"- {name}: {'ACCEPTED' if rep.ok else 'rejected: ' + rep.violations[0]}")


if __name__ == "__main__":
    main()
