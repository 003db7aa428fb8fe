"""The catalogue-independent machine bound: parameters plus the activations live at the fullest program
point, against what all tiles can hold whatever the plan. When it exceeds, no layout of any compiler fits
this op order on this target; it needs no catalogue and no solver, so it is evaluated first."""

from __future__ import annotations

import numpy as np

from .catalogue.schedule import build_schedule
from .ir.graph import Graph
from .target import Target


def capacity_bytes(target: Target, support_reserve: int | None) -> int:
    """All tiles' usable SRAM minus the memory map's fixed reservations and code window (or the seeds'
    planned-data budget minus its reserve)."""
    if support_reserve is not None:
        return target.tiles * (target.seeds_planned_data_bytes - support_reserve)
    return target.tiles * (target.usable_bytes - target.fixed_region0_bytes)


def machine_bound(g: Graph, target: Target, support_reserve: int | None) -> dict:
    """Every parameter (all iterations) plus the logical bytes of the activations live at the fullest step of
    the schedule, against the capacity: `proves` when they exceed it."""
    sched = build_schedule(g)
    params = sum(info.value.nbytes * info.count for info in sched.params.values())
    live = np.zeros(len(sched.steps), np.int64)
    for buf in sched.buffers.values():
        if buf.producer:
            live[buf.first:buf.last + 1] += buf.value.nbytes
    step = int(np.argmax(live))
    need = int(params) + int(live[step])
    have = capacity_bytes(target, support_reserve)
    return {"parameter_bytes": int(params), "live_activation_bytes": int(live[step]), "at": sched.steps[step],
            "needs_bytes": need, "capacity_bytes": have, "proves": need > have}
