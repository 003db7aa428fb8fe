"""What an implementation is: its output layout, the layouts its inputs must arrive in, how it holds its
parameters, every other buffer it allocates (with its lifetime), the exchanges inside it, its codelets
and its modeled cycles. The planner counts these buffers, the backend places and lowers the same ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..codelets import COMPACT_STEPS, NO_STEPS, ROTATING_STEPS, Steps
from ..layout import Layout, Transfer
from ..target import Target
from .schedule import Schedule


class Life(Enum):
    """When a buffer of an implementation is live, relative to its op's two steps."""

    COMPUTE = "compute"  # the op's compute step (scratch, partials, received partials and statistics)
    OPERAND = "operand"  # the op's exchange step to its compute step (staged weights, exchanged inputs)
    PROGRAM = "program"  # the whole program (resident parameters, RoPE tables, vertex descriptors)


class Catalogue(Enum):
    """Which implementation space the planner ranges over (`solve --catalogue`)."""

    SHAPED = "shaped"  # homes and producer layouts shaped for their readers, grids screened by the objective's costs
    ROTATING = "rotating"  # the shaped space plus rotating (compute-shift) matmuls and ring attention
    COMPACT = "compact"  # rotating, plus FP8 rotating matmuls accumulating in their F16 output, rotating QKV with RoPE
    GRID = "grid"  # the earlier space: spread homes, producers' own layouts, grids screened by a byte proxy


class ParamMode(Enum):
    RESIDENT = "resident"  # every iteration's copy held in the compute layout for the whole program
    STAGED = "staged"  # held in a home; copied into the compute layout before each use


class HomeKind(Enum):
    """Where a staged parameter lives between uses (catalogue/transport.py)."""

    SPREAD = "spread"  # the staged blocks end to end, split evenly over every tile in 8-byte grains
    BLOCKS = "blocks"  # one replica of the staged blocks, each whole (or in column chunks) on a tile of its own


@dataclass(frozen=True)
class Home:
    kind: HomeKind = HomeKind.SPREAD
    chunks: int = 1  # BLOCKS: column chunks per block (one-row blocks only), each on its own tile

    @property
    def record(self) -> str:
        """As plan.json records it: "spread", "blocks" or "blocks/<chunks>"."""
        if self.kind is HomeKind.SPREAD:
            return "spread"
        return "blocks" if self.chunks == 1 else f"blocks/{self.chunks}"


SPREAD = Home()


@dataclass(frozen=True)
class ParamUse:
    key: str
    layout: Layout  # one iteration, as the op consumes it
    mode: ParamMode
    home: Home = SPREAD  # where a staged parameter lives (unused when resident)


@dataclass(frozen=True)
class Buf:
    """A buffer an implementation allocates besides its output and exchanged inputs."""

    role: str
    layout: Layout
    life: Life


@dataclass(frozen=True)
class RowsInto:
    """An input written by the exchange straight into rows of the op's output buffer (concatenation):
    `segments` are (output row, input row, rows) triples."""

    layout: Layout
    segments: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class Move:
    """One transfer of an internal exchange, between buffers named as the planner names them (`<op> (<role>)`
    for the op's own, an operand's exchanged copy, a staged parameter)."""

    transfer: Transfer
    src: str  # the buffer it sends from
    dst: str  # the buffer it receives into


@dataclass(frozen=True)
class Internal:
    """An exchange superstep inside the op's compute step (partial-sum reduction, cross-tile statistics, a
    rotation of operand shards): one or more transfers."""

    what: str
    moves: tuple[Move, ...]

    @classmethod
    def own(cls, what: str, transfer: Transfer, op: str, src: str, dst: str) -> "Internal":
        """One transfer between two of op `op`'s own buffers (roles)."""
        return cls(what, (Move(transfer, f"{op} ({src})", f"{op} ({dst})"),))

    @property
    def transfers(self) -> list[Transfer]:
        return [m.transfer for m in self.moves]


@dataclass(eq=False)
class Impl:
    """One way to run one op.

    fields: the identifying record plan.json keeps (the checker re-derives everything else from it);
    needs[i]: the layout input i must arrive in (a RowsInto: written into the output by the exchange);
    bufs: scratch, partials, received partials, statistics, RoPE tables, descriptors;
    codelets: names of the codelets it runs; compute_sets / exchanges: supersteps of its program.
    """

    op: str
    label: str
    fields: dict
    out: Layout
    needs: dict[int, Layout | RowsInto | None]
    params: tuple[ParamUse, ...]
    bufs: tuple[Buf, ...]
    cycles: int
    codelets: tuple[str, ...]
    compute_sets: int = 1
    internal: tuple[Internal, ...] = ()
    extra_exchange: int = 0  # cycles of the internal exchanges
    out_from_exchange: bool = False  # the output buffer is written by the op's exchange (concat)


@dataclass
class Ctx:
    target: Target
    sched: Schedule
    batch: int
    kind: Catalogue = Catalogue.SHAPED
    impls: dict[str, list[Impl]] = field(default_factory=dict)
    screened: dict[str, list[dict]] = field(default_factory=dict)  # per GEMM: the grids kept, with why

    @property
    def shaped(self) -> bool:
        return self.kind in (Catalogue.SHAPED, Catalogue.ROTATING, Catalogue.COMPACT)

    @property
    def rotating(self) -> bool:
        return self.kind in (Catalogue.ROTATING, Catalogue.COMPACT)

    @property
    def compact(self) -> bool:
        return self.kind is Catalogue.COMPACT

    @property
    def steps(self) -> Steps:
        """The most rotation steps this catalogue offers (every matmul's and attention's program reserves them)."""
        return {Catalogue.ROTATING: ROTATING_STEPS, Catalogue.COMPACT: COMPACT_STEPS}.get(self.kind, NO_STEPS)

    @property
    def in_place(self) -> bool:
        """FP8 rotating matmuls keep their running sum in the output, where the target accumulates FP8 in F16."""
        return self.compact and self.target.accumulation["f8"] == "f16"

    @property
    def tiles(self) -> int:
        return self.target.tiles
