"""The probe's one-worker precheck at max_lp's linearization level alone and with max_lp's own parameters, in one run.

Usage: python bench/precheck.py [--cases siglip-base-256:116:compact,...]
Each case is a model, a batch and a catalogue; the model is the probe's (the plan objective cleared, hinted with
the leanest implementations). `level 2` is linearization level 2 with CP-SAT's default lazy LP constraints;
`max_lp` adds them all up front (`ipuplan/solver/budget.as_max_lp`), as the interleaved search's max_lp subsolver
loads the model. Both run one worker within the precheck's caps (`PRECHECK` deterministic seconds,
`PRECHECK_CONFLICTS`). Prints a markdown table: status, deterministic and wall seconds, conflicts.
"""

from __future__ import annotations

import argparse
import datetime
import platform
from pathlib import Path

from ortools.sat.python import cp_model

from ipuplan.catalogue import Catalogue
from ipuplan.model import build_graph, load_model
from ipuplan.solver.budget import MAX_LP_LINEARIZATION, Budget, as_max_lp
from ipuplan.solver.classes import problem_classes
from ipuplan.solver.probe import as_probe_model
from ipuplan.solver.rounds import PRECHECK, PRECHECK_CONFLICTS, build_model
from ipuplan.solver.solve import SolveOptions
from ipuplan.target import load_target

ROOT = Path(__file__).resolve().parent.parent
CASES = "siglip-base-256:116:compact,siglip-large-384:20:compact,siglip:2:shaped"


def probe_model(model: str, batch: int, catalogue: Catalogue):
    o = SolveOptions(batch=batch, catalogue=catalogue, slack_effort=0)
    p = o.problem(build_graph(load_model(ROOT / "models" / f"{model}.yaml"), batch),
                  load_target(ROOT / "targets" / "c600.yaml"))
    ctx = build_model(p, problem_classes(p), objective=True, free=o.slack)
    as_probe_model(ctx, ())
    return ctx


def precheck(ctx, up_front: bool) -> tuple[str, float, float, int]:
    s = cp_model.CpSolver()
    Budget.start(PRECHECK, 3600).cpsat(s, 1, 0)
    if up_front:
        as_max_lp(s)
    else:
        s.parameters.linearization_level = MAX_LP_LINEARIZATION
    s.parameters.max_number_of_conflicts = PRECHECK_CONFLICTS
    status = s.solve(ctx.m)
    return status.name, s.deterministic_time, s.wall_time, s.num_conflicts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES)
    a = ap.parse_args()
    print(f"# precheck: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}")
    print("| case | variant | status | deterministic s | wall s | conflicts |")
    print("|---|---|---|---|---|---|")
    for case in a.cases.split(","):
        model, batch, cat = case.split(":")
        ctx = probe_model(model, int(batch), Catalogue(cat))
        for name, up_front in (("level 2", False), ("max_lp", True)):
            st, dt, wall, conflicts = precheck(ctx, up_front)
            print(f"| {model} b{batch} {cat} | {name} | {st} | {dt:.2f} | {wall:.1f} | {conflicts:,} |", flush=True)


if __name__ == "__main__":
    main()
