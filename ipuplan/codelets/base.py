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
    """A six-worker vector kernel on the barrel-scheduled tile: each worker issues one bundle (a memory access
    and an arithmetic op) every `workers` cycles, so the tile retires one bundle per cycle while all six are
    busy. `bundles` per 64-bit vector of the data it sweeps; `source` says where that count comes from."""

    bundles: float
    source: str

    def cycles(self, target: Target, nbytes: int) -> int:
        """Launch, the six-worker call, then the sweep."""
        return call_cycles(target) + self.work(target, nbytes)

    def work(self, target: Target, nbytes: int) -> int:
        """The sweep alone (a step inside a larger codelet): the busiest worker's share of the vectors, one
        bundle per turn of the barrel."""
        vectors = ceil(nbytes / target.vector_bytes_per_cycle)
        return ceil(ceil(vectors / target.workers) * self.bundles) * target.workers


def call_cycles(target: Target) -> int:
    """A six-worker codelet call: the supervisor's launch, the workers' start and rendezvous."""
    return target.kernel_launch_cycles + target.worker_call_cycles


@dataclass(frozen=True)
class Cost:
    """Modeled cycles split by where they go: worker and AMP compute, exchange transfer, superstep sync.
    `beyond` is the part of `exchange` that the pieces' cutovers add over what the bytes alone would take
    (already inside `exchange`, not added to the total)."""

    compute: int = 0
    exchange: int = 0
    sync: int = 0
    beyond: int = 0

    @property
    def total(self) -> int:
        return self.compute + self.exchange + self.sync

    def __add__(self, o: "Cost") -> "Cost":
        return Cost(self.compute + o.compute, self.exchange + o.exchange, self.sync + o.sync, self.beyond + o.beyond)

    def __mul__(self, k: int) -> "Cost":
        return Cost(self.compute * k, self.exchange * k, self.sync * k, self.beyond * k)


def exchange_cost(target: Target, send_max: int, recv_max: int, pieces_max: int) -> Cost:
    """Transfers inside one exchange superstep, on its busiest tile: the bytes at the exchange rate, or the
    pieces' endpoint and receive-pointer cutovers when those take longer (they overlap the payload). The
    superstep's sync is charged once per superstep by whoever owns it."""
    words = ceil(max(send_max, recv_max) / target.exchange_bytes_per_cycle)
    pieces = pieces_max * target.exchange_fragment_cycles
    return Cost(0, max(words, pieces), 0, max(0, pieces - words))


def patch_cycles(target: Target, words: int) -> int:
    """Rewriting `words` instruction or descriptor words between Repeat iterations: the supervisor's scalar
    loop or the six-worker patcher, whichever is faster for the list."""
    if words <= 0:
        return 0
    p = target.patch
    return min(p["scalar_call"] + p["scalar_word"] * words, p["workers_call"] + p["workers_word"] * words)

