"""The machine: a frozen Target loaded from targets/*.yaml, the only home of machine numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .errors import Loc, TargetError
from .layout.transfer import Encoding
from .source import Field, Node, load_yaml, read_fields

_TOP = (
    Field("target", str, "the target's name"),
    Field("tiles", int, "number of tiles", lo=1, hi=1 << 16),
    Field("memory", dict, "per-tile SRAM facts"),
    Field("memory_map", dict, "tile memory map: base, limits, code window, fixed reservations"),
    Field("exchange", dict, "exchange limits, bandwidth and instruction encoding"),
    Field("program", dict, "supervisor program and vertex descriptor sizes"),
    Field("compute", dict, "worker and GEMM throughput facts"),
    Field("link", dict, "the path between two chips of a pipeline (optional: single-chip targets omit it)",
          default=None),
)
_LINK = (
    Field("bytes_per_second", int, "payload bytes per second one crossing carries", lo=1, hi=1 << 50),
    Field("crossings", int, "times a boundary activation crosses that path (through host memory: 2)", lo=1, hi=16),
    Field("sync_cycles", int, "chip cycles per transfer beyond its bytes (handshake, host polling)", lo=0,
          hi=1 << 40),
    Field("source", str, "where the figures come from"),
)
_MEMORY = (
    Field("sram_bytes", int, "SRAM bytes per tile", lo=1024, hi=1 << 26),
    Field("unloadable_tail_bytes", int, "bytes at the end of SRAM that cannot be loaded", lo=0, hi=1 << 20),
    Field("region0_bytes", int, "bytes of region 0 (code-executable)", lo=0, hi=1 << 26),
    Field("region0_element_bytes", int, "memory-element size of region 0", lo=1, hi=1 << 20),
    Field("region1_element_bytes", int, "effective memory-element size of region 1", lo=1, hi=1 << 20),
    Field("seeds_planned_data_bytes", int, "the seeds' planned-data budget per tile", lo=0, hi=1 << 26),
    Field("seeds_support_reserve_bytes", int, "the seeds' fixed support reserve per tile", lo=0, hi=1 << 26),
)
_MAP = (
    Field("base", int, "first tile-local address", lo=0, hi=1 << 32),
    Field("executable_limit", int, "end of region 0 (instructions execute below it)", lo=0, hi=1 << 32),
    Field("loadable_limit", int, "end of the loadable SRAM", lo=0, hi=1 << 32),
    Field("code_window", list, "[start, end) reserved for linked code"),
    Field("table_guard_bytes", int, "fetch lookahead past the exchange tables", lo=0, hi=1 << 16),
    Field("reservations", list, "fixed runtime reservations: {name, start, end, source}"),
)
_RESERVATION = (
    Field("name", str, "what the range holds"),
    Field("start", int, "first address", lo=0, hi=1 << 32),
    Field("end", int, "address after the last byte", lo=0, hi=1 << 32),
    Field("source", str, "where the fact comes from"),
)
_EXCHANGE = (
    Field("table_bytes_max", int, "encoded exchange bytes per tile", lo=0, hi=1 << 26),
    Field("fragments_max", int, "transfer pieces per tile", lo=0, hi=1 << 24),
    Field("bytes_per_cycle", int, "exchange bytes per cycle per tile", lo=1, hi=1024),
    Field("fragment_cycles", int, "cycles per transfer piece", lo=0, hi=1 << 16),
    Field("sync_cycles", int, "cycles per exchange superstep", lo=0, hi=1 << 24),
    Field("instruction_bytes", int, "bytes per exchange instruction word", lo=1, hi=64),
    Field("transfer_max_words", int, "words one physical transfer carries", lo=1, hi=1 << 20),
    Field("send_max_words", int, "words of one `send` instruction", lo=1, hi=1 << 20),
    Field("sendoff_max_words", int, "words of one `sendoff` continuation", lo=1, hi=1 << 20),
    Field("send_delay_words", int, "delay words before each piece sent", lo=0, hi=64),
    Field("recv_piece_words", int, "instruction words per piece received", lo=0, hi=64),
    Field("row_words", int, "instruction words per tile per exchange row", lo=0, hi=1024),
)
_PROGRAM = (
    Field("compute_set_words", int, "supervisor words per compute set per tile", lo=0, hi=1 << 16),
    Field("exchange_words", int, "supervisor words per exchange superstep per tile", lo=0, hi=1 << 16),
    Field("vertex_words", int, "descriptor words per vertex besides its fields", lo=0, hi=1 << 16),
    Field("runtime_code_bytes", int, "supervisor runtime code per tile", lo=0, hi=1 << 24),
)
_COMPUTE = (
    Field("workers", int, "worker threads per tile", lo=1, hi=64),
    Field("clock_hz", int, "clock frequency in Hz", lo=1_000_000, hi=10_000_000_000),
    Field("amp_macs_per_cycle", dict, "GEMM MACs per cycle per tile, by operand precision (f16, f8)"),
    Field("accumulation", dict, "GEMM accumulator precision by operand precision (f16, f8)"),
    Field("accumulation_chunk", int, "products summed exactly before each accumulator rounding", lo=1, hi=4096),
    Field("vector_bytes_per_cycle", int, "bytes the six workers together load or store per cycle", lo=1, hi=1024),
    Field("interleaved_load_bytes_per_cycle", int, "bytes per cycle the workers load from interleaved memory",
          lo=1, hi=1024),
    Field("compute_set_cycles", int, "cycles per compute superstep beyond its slowest tile (supervisor sync)",
          lo=0, hi=1 << 24),
    Field("kernel_launch_cycles", int, "supervisor cycles to launch one vertex", lo=0, hi=1 << 16),
    Field("worker_call_cycles", int, "fixed cycles of a six-worker codelet call (start, rendezvous)", lo=0,
          hi=1 << 20),
    Field("amp_call_cycles", int, "AMP GEMM cycles per 64 x 64 coefficient block call", lo=0, hi=1 << 20),
    Field("amp_coefficient_cycles", int, "AMP cycles to deliver 2,048 coefficient bytes (64 K x 16 columns F16)",
          lo=0, hi=1 << 20),
    Field("reduction_bytes_per_cycle", int, "F32 partial-sum bytes a reduction round writes per cycle", lo=1,
          hi=1024),
    Field("patch", dict, "Repeat word patching: call and per-word cycles, scalar loop and six workers"),
)
_PATCH = (Field("scalar_call", int, "scalar loop: fixed cycles", lo=0, hi=1 << 20),
          Field("scalar_word", int, "scalar loop: cycles per word", lo=0, hi=1 << 16),
          Field("workers_call", int, "six workers: fixed cycles", lo=0, hi=1 << 20),
          Field("workers_word", int, "six workers: cycles per word", lo=0, hi=1 << 16))
_BY_PRECISION_INT = (Field("f16", int, "value for F16 operands", lo=1, hi=1 << 16),
                     Field("f8", int, "value for F8 operands", lo=1, hi=1 << 16))
_BY_PRECISION_ACC = (Field("f16", str, "accumulator for F16 operands", choices=("f16", "f32")),
                     Field("f8", str, "accumulator for F8 operands", choices=("f16", "f32")))


@dataclass(frozen=True)
class Reservation:
    """A fixed range of every tile's memory that the runtime owns."""

    name: str
    start: int
    end: int
    source: str

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Link:
    """How a boundary activation moves from one chip of a pipeline to the next."""

    bytes_per_second: int
    crossings: int
    sync_cycles: int
    source: str

    def cycles(self, nbytes: int, clock_hz: int) -> int:
        """Chip cycles to hand `nbytes` to the next chip: every crossing at the link's rate, plus the sync."""
        return self.sync_cycles + -(-self.crossings * nbytes * clock_hz // self.bytes_per_second)


@dataclass(frozen=True)
class MemoryMap:
    """Tile-local addresses: SRAM [base, base + sram), region 0 [base, executable_limit), the code window,
    the runtime's fixed reservations."""

    base: int
    executable_limit: int
    loadable_limit: int
    code_window: tuple[int, int]
    table_guard_bytes: int
    reservations: tuple[Reservation, ...]

    @property
    def fixed_bytes(self) -> int:
        return sum(r.size for r in self.reservations)

    @property
    def code_window_bytes(self) -> int:
        return self.code_window[1] - self.code_window[0]


@dataclass(frozen=True)
class Target:
    """Machine facts for one accelerator; `locs` maps dotted keys to their place in the YAML."""

    name: str
    tiles: int
    sram_bytes: int
    unloadable_tail_bytes: int
    region0_bytes: int
    region0_element_bytes: int
    region1_element_bytes: int
    seeds_planned_data_bytes: int
    seeds_support_reserve_bytes: int
    memory_map: MemoryMap
    exchange_table_bytes_max: int
    exchange_fragments_max: int
    exchange_bytes_per_cycle: int
    exchange_fragment_cycles: int
    exchange_sync_cycles: int
    instruction_bytes: int
    encoding: Encoding
    compute_set_words: int
    exchange_words: int
    vertex_words: int
    runtime_code_bytes: int
    workers: int
    clock_hz: int
    amp_macs_per_cycle: dict[str, int]
    accumulation: dict[str, str]
    accumulation_chunk: int
    vector_bytes_per_cycle: int
    interleaved_load_bytes_per_cycle: int
    compute_set_cycles: int
    kernel_launch_cycles: int
    worker_call_cycles: int
    amp_call_cycles: int
    amp_coefficient_cycles: int
    reduction_bytes_per_cycle: int
    patch: dict[str, int]
    link: Link | None = None
    path: str = ""
    locs: dict[str, Loc] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @property
    def usable_bytes(self) -> int:
        return self.sram_bytes - self.unloadable_tail_bytes

    @property
    def region1_usable_bytes(self) -> int:
        return self.usable_bytes - self.region0_bytes

    @property
    def fixed_region0_bytes(self) -> int:
        """Region-0 bytes no plan can use for data: the runtime's reservations and the code window."""
        return self.memory_map.fixed_bytes + self.memory_map.code_window_bytes

    def __hash__(self) -> int:
        return hash((self.name, self.tiles, self.sram_bytes, self.region0_bytes, self.path))

    def require_link(self, ipus: int, where: str = "--ipus") -> None:
        """Raise unless `ipus` of these chips make a pipeline: 1..64 of them, more than one over the `link`."""
        if not 1 <= ipus <= 64:
            raise TargetError(where, None, f"{ipus} is out of range", "valid: 1..64")
        if ipus > 1 and self.link is None:
            raise TargetError(self.path, "link", f"{self.name} declares no link between chips, so it has no "
                              f"pipeline of {ipus}", "add a `link:` section (bytes_per_second, crossings, "
                              "sync_cycles, source) or use --ipus 1")


def _memory_map(node: Node, base_locs: dict) -> MemoryMap:
    v, loc = read_fields(node, _MAP, TargetError, "memory_map.")
    cw = v["code_window"]
    vals = [x.value for x in cw.value]
    if len(vals) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in vals) or vals[0] >= vals[1]:
        raise TargetError(cw.loc, "memory_map.code_window", "is not [start, end) with start < end",
                          "write [0x4c018, 0x50000]")
    res = []
    for i, item in enumerate(v["reservations"].value):
        r, rl = read_fields(item, _RESERVATION, TargetError, f"memory_map.reservations[{i}].")
        if r["end"] <= r["start"]:
            raise TargetError(rl["end"], f"memory_map.reservations[{i}].end", "is not after start",
                              "each reservation is [start, end) with start < end")
        res.append(Reservation(r["name"], r["start"], r["end"], r["source"]))
    spans = sorted([(r.start, r.end, r.name) for r in res] + [(vals[0], vals[1], "code window")])
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        if b0 < a1:
            raise TargetError(v["reservations"].loc, "memory_map.reservations", f"{an} and {bn} overlap",
                              "fixed ranges must be disjoint")
    if spans[0][0] < v["base"] or spans[-1][1] > v["executable_limit"]:
        raise TargetError(v["reservations"].loc, "memory_map.reservations", "a fixed range lies outside region 0",
                          "reservations and the code window lie in [base, executable_limit)")
    base_locs.update({f"memory_map.{k}": x for k, x in loc.items()})
    return MemoryMap(v["base"], v["executable_limit"], v["loadable_limit"], (vals[0], vals[1]),
                     v["table_guard_bytes"], tuple(res))


def load_target(path: str | Path) -> Target:
    """Load and validate a target YAML file."""
    root = load_yaml(path, "target")
    top, tl = read_fields(root, _TOP, TargetError)
    mem, ml = read_fields(top["memory"], _MEMORY, TargetError, "memory.")
    exc, el = read_fields(top["exchange"], _EXCHANGE, TargetError, "exchange.")
    prog, pl = read_fields(top["program"], _PROGRAM, TargetError, "program.")
    cmp_, cl = read_fields(top["compute"], _COMPUTE, TargetError, "compute.")
    macs, _ = read_fields(cmp_["amp_macs_per_cycle"], _BY_PRECISION_INT, TargetError, "compute.amp_macs_per_cycle.")
    acc, _ = read_fields(cmp_["accumulation"], _BY_PRECISION_ACC, TargetError, "compute.accumulation.")
    patch, _ = read_fields(cmp_["patch"], _PATCH, TargetError, "compute.patch.")
    locs = {k: v for k, v in tl.items()}
    locs.update({f"memory.{k}": v for k, v in ml.items()})
    locs.update({f"exchange.{k}": v for k, v in el.items()})
    locs.update({f"program.{k}": v for k, v in pl.items()})
    locs.update({f"compute.{k}": v for k, v in cl.items()})
    mm = _memory_map(top["memory_map"], locs)
    link = None
    if top["link"] is not None:
        lk, ll = read_fields(top["link"], _LINK, TargetError, "link.")
        locs.update({f"link.{k}": v for k, v in ll.items()})
        link = Link(lk["bytes_per_second"], lk["crossings"], lk["sync_cycles"], lk["source"])
    if mem["unloadable_tail_bytes"] >= mem["sram_bytes"]:
        raise TargetError(ml["unloadable_tail_bytes"], "memory.unloadable_tail_bytes",
                          "is not smaller than sram_bytes", "the unloadable tail is a small suffix of SRAM")
    if mem["region0_bytes"] >= mem["sram_bytes"] - mem["unloadable_tail_bytes"]:
        raise TargetError(ml["region0_bytes"], "memory.region0_bytes", "leaves no room for region 1",
                          "region 0 must be smaller than the usable SRAM")
    for key, want, got in (("region0_bytes", mm.executable_limit - mm.base, mem["region0_bytes"]),
                           ("unloadable_tail_bytes", mm.base + mem["sram_bytes"] - mm.loadable_limit,
                            mem["unloadable_tail_bytes"])):
        if want != got:
            raise TargetError(ml[key], f"memory.{key}", f"{got:,} disagrees with memory_map ({want:,})",
                              "memory sizes and the memory map must describe the same tile")
    if mm.fixed_bytes + mm.code_window_bytes >= mem["region0_bytes"]:
        raise TargetError(locs["memory_map.reservations"], "memory_map.reservations", "leave no region-0 space",
                          "fixed reservations must be smaller than region 0")
    if mem["seeds_support_reserve_bytes"] > mem["seeds_planned_data_bytes"]:
        raise TargetError(ml["seeds_support_reserve_bytes"], "memory.seeds_support_reserve_bytes",
                          "exceeds seeds_planned_data_bytes", "the reserve is part of the planned-data budget")
    enc = Encoding(transfer_max_words=exc["transfer_max_words"], send_max_words=exc["send_max_words"],
                   sendoff_max_words=exc["sendoff_max_words"], recv_piece_words=exc["recv_piece_words"],
                   send_delay_words=exc["send_delay_words"], row_words=exc["row_words"])
    return Target(
        name=top["target"], tiles=top["tiles"], path=str(path), locs=locs,
        sram_bytes=mem["sram_bytes"], unloadable_tail_bytes=mem["unloadable_tail_bytes"],
        region0_bytes=mem["region0_bytes"], region0_element_bytes=mem["region0_element_bytes"],
        region1_element_bytes=mem["region1_element_bytes"],
        seeds_planned_data_bytes=mem["seeds_planned_data_bytes"],
        seeds_support_reserve_bytes=mem["seeds_support_reserve_bytes"], memory_map=mm,
        exchange_table_bytes_max=exc["table_bytes_max"], exchange_fragments_max=exc["fragments_max"],
        exchange_bytes_per_cycle=exc["bytes_per_cycle"], exchange_fragment_cycles=exc["fragment_cycles"],
        exchange_sync_cycles=exc["sync_cycles"], instruction_bytes=exc["instruction_bytes"], encoding=enc,
        compute_set_words=prog["compute_set_words"], exchange_words=prog["exchange_words"],
        vertex_words=prog["vertex_words"], runtime_code_bytes=prog["runtime_code_bytes"],
        vector_bytes_per_cycle=cmp_["vector_bytes_per_cycle"],
        interleaved_load_bytes_per_cycle=cmp_["interleaved_load_bytes_per_cycle"],
        compute_set_cycles=cmp_["compute_set_cycles"], kernel_launch_cycles=cmp_["kernel_launch_cycles"],
        worker_call_cycles=cmp_["worker_call_cycles"], amp_call_cycles=cmp_["amp_call_cycles"],
        amp_coefficient_cycles=cmp_["amp_coefficient_cycles"], reduction_bytes_per_cycle=cmp_["reduction_bytes_per_cycle"],
        patch=dict(patch), workers=cmp_["workers"], clock_hz=cmp_["clock_hz"],
        amp_macs_per_cycle=dict(macs), accumulation=dict(acc), accumulation_chunk=cmp_["accumulation_chunk"],
        link=link,
    )
