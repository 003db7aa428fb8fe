"""Wall time and peak memory of the solve whose certificate scans rows without a core: SigLIP So400m/14 b7's last
6 layers and head with 16 KiB of headroom (the max_lp precheck case of tests/solver/test_probe.py, effort 20).
Run it once per checkout (`PYTHONPATH=<worktree> python bench/scan_speed.py` for the other side). One JSON line.

Usage: python bench/scan_speed.py
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import ipuplan
from ipuplan.model import build_graph, load_model
from ipuplan.model.stage import Stage
from ipuplan.solver.solve import SolveOptions, solve
from ipuplan.target import load_target

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    try:
        from ipuplan import heap
        heap.apply() if hasattr(heap, "apply") else heap.retain_freed_memory()
    except ImportError:
        pass
    t = time.time()
    g = build_graph(load_model(ROOT / "models" / "siglip.yaml"), 7, Stage.of(21, 6, 27))
    r = solve(g, load_target(ROOT / "targets" / "c600.yaml"),
              SolveOptions(batch=7, headroom=16384, slack_effort=0, effort=20, explain=False))
    print(json.dumps({"code": ipuplan.__file__, "verdict": r.verdict.value, "probe": r.stats.get("probe"),
                      "wall_s": round(time.time() - t, 1),
                      "peak_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))


if __name__ == "__main__":
    main()
