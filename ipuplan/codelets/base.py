"""What every codelet declares: its name, code bytes, vertex fields, and the cost model's shared pieces."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ..target import Target


@dataclass(frozen=True)
class Codelet:
    """A per-tile kernel. `fields` are the vertex's pointer fields, `params` its shape/scalar words; both are
    descriptor words the supervisor reads. `code_bytes` is an estimate of the linked machine code. `apart`:
    pairs of fields the hardware requires in different memory elements (placement honours them)."""

    name: str
    code_bytes: int
    fields: tuple[str, ...]
    params: int = 0
    apart: tuple[tuple[str, str], ...] = ()

    def descriptor_bytes(self, target: Target) -> int:
        return 4 * (target.vertex_words + len(self.fields) + self.params)


@dataclass(frozen=True)
class VectorCost:
    """A worker-parallel vector kernel: `passes` sweeps over its bytes, `setup` cycles per call."""

    passes: float
    setup: int

    def cycles(self, target: Target, nbytes: int) -> int:
        per_worker = ceil(nbytes / target.workers)
        return self.setup + ceil(self.passes * per_worker / target.vector_bytes_per_cycle)


def exchange_cycles(target: Target, send_max: int, recv_max: int, pieces_max: int) -> int:
    """One exchange superstep's busiest tile: bytes at the exchange rate, pieces, sync."""
    words = ceil(max(send_max, recv_max) / target.exchange_bytes_per_cycle)
    return target.exchange_sync_cycles + words + pieces_max * target.exchange_fragment_cycles
