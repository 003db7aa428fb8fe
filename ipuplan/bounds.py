"""The catalogue-independent machine bound: parameters plus the activations live at the fullest program
point, against what all tiles can hold whatever the plan. When it exceeds, no layout of any compiler fits
this op order on this target; it needs no catalogue and no solver, so it is evaluated first."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class MachineBound:
    """What every plan of any compiler must hold at once: every parameter (all iterations) and the activations
    live at the fullest step `at`, against what all tiles can hold."""

    parameter_bytes: int
    live_activation_bytes: int
    at: str
    capacity_bytes: int

    @property
    def needs_bytes(self) -> int:
        return self.parameter_bytes + self.live_activation_bytes

    @property
    def proves(self) -> bool:
        """Whether no plan fits: the bytes needed exceed the capacity."""
        return self.needs_bytes > self.capacity_bytes

    def record(self) -> dict:
        """The statement as certificates and verdicts carry it (and checkers recompute it)."""
        return {"parameter_bytes": self.parameter_bytes, "live_activation_bytes": self.live_activation_bytes,
                "at": self.at, "needs_bytes": self.needs_bytes, "capacity_bytes": self.capacity_bytes,
                "proves": self.proves}


def machine_bound(g: Graph, target: Target, support_reserve: int | None) -> MachineBound:
    """Every parameter (all iterations) plus the logical bytes of the activations live at the fullest step of
    the schedule, against the capacity."""
    sched = build_schedule(g)
    params = sum(info.value.nbytes * info.count for info in sched.params.values())
    live = np.zeros(len(sched.steps), np.int64)
    for buf in sched.buffers.values():
        if buf.producer:
            live[buf.first:buf.last + 1] += buf.value.nbytes
    step = int(np.argmax(live))
    return MachineBound(int(params), int(live[step]), sched.steps[step], capacity_bytes(target, support_reserve))
