"""Shared by the grid benchmarks: the command-line axes and the (model, batch, layers) cases they span."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

from ipuplan.model import load_model


def grid_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--models", default="siglip,pe")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--layers", default="1,2,full")
    ap.add_argument("--time-limit", type=float, default=600.0)


def cases(a: argparse.Namespace):
    """(model name, model path, batch, layers) for every point of the grid; "full" is the file's depth."""
    for m in a.models.split(","):
        path = f"models/{m}.yaml"
        full = load_model(path).layers
        for b in (int(x) for x in a.batches.split(",")):
            for ls in a.layers.split(","):
                yield m, path, b, full if ls == "full" else int(ls)


def heading(a: argparse.Namespace) -> str:
    return (f"# {datetime.date.today()} on {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}; time limit {a.time_limit:g} s\n")


def machine_line() -> str:
    """When and where a run was made, as the throughput benches head their output."""
    return (f"{time.strftime('%Y-%m-%d %H:%M')} {platform.machine()} {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")
