"""What every codelet declares: its name, code bytes, vertex fields, and the cost model's shared pieces."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ..target import Target


@dataclass(frozen=True)
class Codelet:
    """A per-tile kernel. `fields` are the vertex's pointer fields, `params` its shape/scalar words; both are
    descriptor words the supervisor reads. `code_bytes` is an estimate of the linked machine code. `apart`:
    pairs of fields the hardware requires in different memory elements (placement honours them);
    `interleaved`: fields the AMP streams, which must lie in region 1."""

    name: str
    code_bytes: int
    fields: tuple[str, ...]
    params: int = 0
    apart: tuple[tuple[str, str], ...] = ()
    interleaved: tuple[str, ...] = ()  # fields that must lie in interleaved memory (AMP operands and outputs)

    def descriptor_bytes(self, target: Target) -> int:
        return 4 * (target.vertex_words + len(self.fields) + self.params)


# dtype codes in vertex parameters
DTYPE_CODE = {"f32": 0, "f16": 1, "f143": 2, "f152": 3}
CODE_DTYPE = {v: k for k, v in DTYPE_CODE.items()}


@dataclass(frozen=True)
class VectorCost:
    """A worker-parallel vector kernel: `passes` sweeps over its bytes, `setup` cycles per call."""

    passes: float
    setup: int

    def cycles(self, target: Target, nbytes: int) -> int:
        per_worker = ceil(nbytes / target.workers)
        return self.setup + ceil(self.passes * per_worker / target.vector_bytes_per_cycle)


@dataclass(frozen=True)
class Cost:
    """Modeled cycles split by where they go: worker and AMP compute, exchange transfer, superstep sync."""

    compute: int = 0
    exchange: int = 0
    sync: int = 0

    @property
    def total(self) -> int:
        return self.compute + self.exchange + self.sync

    def __add__(self, o: "Cost") -> "Cost":
        return Cost(self.compute + o.compute, self.exchange + o.exchange, self.sync + o.sync)

    def __mul__(self, k: int) -> "Cost":
        return Cost(self.compute * k, self.exchange * k, self.sync * k)


def exchange_cost(target: Target, send_max: int, recv_max: int, pieces_max: int) -> Cost:
    """One exchange superstep's busiest tile: bytes at the exchange rate and pieces; its sync."""
    words = ceil(max(send_max, recv_max) / target.exchange_bytes_per_cycle)
    return Cost(0, words + pieces_max * target.exchange_fragment_cycles, target.exchange_sync_cycles)


def exchange_cycles(target: Target, send_max: int, recv_max: int, pieces_max: int) -> int:
    """exchange_cost as one number."""
    return exchange_cost(target, send_max, recv_max, pieces_max).total
