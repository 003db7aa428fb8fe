"""What each price is worth to a catalogue's ceiling: the fastest plan, memory aside, at each batch with every cost
as the codelets and the target give it, then with one price at a time halved (a rate doubled).

The ceiling is `ipuplan/solver/ceiling.free_optimum`: CP-SAT on the choice family and the objective alone, no
memory, table or fragment family, so no plan of the catalogue at those prices models faster (CP-SAT's proof, not
re-checked). Each hypothesis replaces one figure in this process only — a `VectorCost` of `codelets/vector.py`,
`codelets/attention.py` or `codelets/gemm.py`, or a field of the loaded target — and rebuilds the problem, so the
catalogue's screens see the hypothetical price as a measurement would make them see it. No file changes, and
nothing this script prints is a plan: the checker and the package price every codelet as the files do.

What it answers: which figure, if a measurement on a C600 showed it at half, would lift the ceiling past a
throughput goal, and which would not. The ceiling is not a FIT: memory costs the plans that fit more (bench/
RESULTS.md, `ipuplan explain DIR --what-if speed`). With `--solve` each cell also gives the memory-constrained
solve at that price (`ipuplan.solver.solve.solve_problem` on the same problem: exact per-tile rows, no placement, no explanation): its modeled
images/s and the search's bound on it. Each row says where today's figure comes from (docs/COSTS.md).

Usage: python bench/prices.py MODEL [--batches 3,4] [--catalogue compact] [--effort 120] [--only NAME,...]
       [--workers 1] [--solve] [--solve-effort 400] [--time-limit 2400] [--solve-workers 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


@dataclasses.dataclass(frozen=True)
class Knob:
    """One figure of the cost model: `apply(target)` sets its hypothetical value and returns the target to price
    with and a function that restores the figure."""

    name: str
    source: str
    today: str
    hypothesis: str
    apply: object


def _half(module, attr: str):
    """A module-level VectorCost at half its bundles."""
    def apply(target):
        old = getattr(module, attr)
        setattr(module, attr, dataclasses.replace(old, bundles=old.bundles / 2))
        return target, lambda: setattr(module, attr, old)
    return apply


def _half_kinds(kinds: tuple[str, ...]):
    """Entries of codelets.vector.COST at half their bundles."""
    def apply(target):
        from ipuplan.codelets import vector
        old = {k: vector.COST[k] for k in kinds}
        for k in kinds:
            vector.COST[k] = dataclasses.replace(old[k], bundles=old[k].bundles / 2)
        return target, lambda: vector.COST.update(old)
    return apply


def _field(name: str, scale: float):
    def apply(target):
        return dataclasses.replace(target, **{name: max(1, round(getattr(target, name) * scale))}), lambda: None
    return apply


def _together(*applies):
    def apply(target):
        undo = []
        for f in applies:
            target, u = f(target)
            undo.append(u)
        return target, lambda: [u() for u in reversed(undo)]
    return apply


def knobs() -> list[Knob]:
    from ipuplan.codelets import attention, gemm
    isa = (_half(attention, "SOFTMAX"), _half_kinds(("layernorm", "add", "cast", "rope")), _half(gemm, "EPILOGUE"))
    return [
        Knob("attention softmax", "ISA count", "6 bundles / 2 F32 scores", "3", _half(attention, "SOFTMAX")),
        Knob("attention panel packing", "seeds 003 (measured packer)", "7.45 bundles / vector", "3.725",
             _half(attention, "PACK")),
        Knob("GELU", "ipu-stack cost.rs", "40 bundles / vector", "20", _half_kinds(("gelu",))),
        Knob("layernorm", "ISA count", "21 bundles / vector", "10.5", _half_kinds(("layernorm",))),
        Knob("GEMM epilogue", "ISA count", "4 bundles / F16 vector", "2", _half(gemm, "EPILOGUE")),
        Knob("add / cast / RoPE", "ISA counts", "3, 2, 4 bundles / vector", "1.5, 1, 2",
             _half_kinds(("add", "cast", "rope"))),
        Knob("F32 partial-sum add", "ipu-stack cost.rs (profiles)", "1 B / cycle", "2",
             _field("reduction_bytes_per_cycle", 2)),
        Knob("six-worker call", "ipu-stack cost.rs", "288 cycles", "144", _field("worker_call_cycles", 0.5)),
        Knob("exchange piece", "ipu-stack cost.rs", "160 cycles", "80", _field("exchange_fragment_cycles", 0.5)),
        Knob("exchange superstep sync", "ipu-stack cost.rs", "600 cycles", "300", _field("exchange_sync_cycles", 0.5)),
        Knob("compute-set sync", "seeds 003 (measured)", "78 cycles", "39", _field("compute_set_cycles", 0.5)),
        Knob("every ISA count above", "ISA counts", "as above", "each halved", _together(*isa)),
        Knob("exchange rate (machine fact; for scale)", "IPU21: one word per tile per cycle", "4 B / cycle", "8",
             _field("exchange_bytes_per_cycle", 2)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batches", default="3,4")
    ap.add_argument("--catalogue", default="compact")
    ap.add_argument("--effort", type=float, default=120.0, help="deterministic seconds per free optimum")
    ap.add_argument("--workers", type=int, default=1, help="CP-SAT workers per free optimum")
    ap.add_argument("--goal", type=float, default=300.0, help="images/s the table marks")
    ap.add_argument("--only", default="", help="comma-separated knob names (default: every one)")
    ap.add_argument("--solve", action="store_true", help="also solve with memory at each price")
    ap.add_argument("--solve-effort", type=float, default=400.0, help="deterministic seconds per solve (as --effort)")
    ap.add_argument("--time-limit", type=float, default=2400.0, help="wall seconds per solve (as --time-limit)")
    ap.add_argument("--solve-workers", type=int, default=2,
                    help="CP-SAT workers per solve (solve's default: with one, SigLIP b3 ends far from its optimum)")
    a = ap.parse_args()
    from _grid import machine_line
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.ceiling import free_optimum
    from ipuplan.solver.budget import WallClockExpired
    from ipuplan.solver.solve import SolveOptions, SolveResult, Verdict, solve_problem
    from ipuplan.target import load_target
    base = load_target(ROOT / "targets" / "c600.yaml")
    spec = load_model(a.model)
    clock = base.clock_hz
    batches = [int(x) for x in a.batches.split(",")]
    chosen = knobs()
    if a.only:
        names = {k.name for k in chosen}
        want = [s.strip() for s in a.only.split(",")]
        bad = [w for w in want if w not in names]
        if bad:
            sys.exit(f"--only: {', '.join(bad)} not a knob; valid: {', '.join(sorted(names))}")
        chosen = [k for k in chosen if k.name in want]
    graphs = {b: build_graph(spec, b) for b in batches}

    def ceiling(target, b) -> tuple[str, float, str]:
        """The free optimum and, with --solve, the solve, both on one problem built as the solve builds it."""
        opts = SolveOptions(batch=b, catalogue=Catalogue(a.catalogue), effort=a.solve_effort,
                            time_limit=a.time_limit, slack_effort=0, explain=False, workers=a.solve_workers)
        p = opts.problem(graphs[b], target)
        c = free_optimum(p, a.effort, a.workers)
        ips = b * clock / c.cycles
        txt, fit_txt = f"{ips:.1f}" + ("" if c.optimal else " (bound)") + (" ✓" if ips >= a.goal else ""), ""
        if a.solve:
            try:
                r = solve_problem(p, opts)
            except WallClockExpired:
                r = SolveResult(Verdict.UNKNOWN, p)
            if r.plan is None:
                fit_txt = f"; {r.verdict.value}"
            else:
                cyc = r.plan["cycles"]
                fit = b * clock / cyc["modeled"]
                fit_txt = f"; {r.verdict.value} {fit:.1f}" + (" ✓" if fit >= a.goal else "") + \
                    f" (≤ {b * clock / (cyc.get('best_bound') or cyc['modeled']):.1f})"
        return txt, ips, fit_txt

    print(f"{machine_line()}; {Path(a.model).stem}, {a.catalogue} catalogue, ceiling images/s at {clock / 1e9:g} GHz "
          f"(free optimum, effort {a.effort:g})" + (f"; the solve with memory (effort {a.solve_effort:g}, time limit "
                                                    f"{a.time_limit:g} s): verdict, images/s (≤ its bound)"
                                                    if a.solve else "") + f"; ✓: at least {a.goal:g}")
    print("| price | source | today | hypothesis | " + " | ".join(f"b{b}" for b in batches) + " | s |")
    print("|---|---|---|---|" + "---:|" * len(batches) + "---:|")
    t0 = time.perf_counter()
    today = {b: ceiling(base, b) for b in batches}
    print("| every price as today | | | | " + " | ".join(today[b][0] + today[b][2] for b in batches) +
          f" | {time.perf_counter() - t0:.0f} |", flush=True)
    for k in chosen:
        t0 = time.perf_counter()
        cells = []
        for b in batches:
            target, undo = k.apply(base)
            try:
                txt, ips, fit_txt = ceiling(target, b)
            finally:
                undo()
            cells.append(f"{txt} ({ips / today[b][1] - 1:+.1%}){fit_txt}")
        print(f"| {k.name} | {k.source} | {k.today} | {k.hypothesis} | " + " | ".join(cells) +
              f" | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
