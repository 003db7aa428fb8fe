"""The machine: a frozen Target loaded from targets/*.yaml, the only home of machine numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .errors import Loc, TargetError
from .source import Field, load_yaml, read_fields

_TOP = (
    Field("target", str, "the target's name"),
    Field("tiles", int, "number of tiles", lo=1, hi=1 << 16),
    Field("memory", dict, "per-tile SRAM facts"),
    Field("exchange", dict, "exchange limits and bandwidth"),
    Field("compute", dict, "worker and GEMM throughput facts"),
)
_MEMORY = (
    Field("sram_bytes", int, "SRAM bytes per tile", lo=1024, hi=1 << 26),
    Field("unloadable_tail_bytes", int, "bytes at the end of SRAM that cannot be loaded", lo=0, hi=1 << 20),
    Field("region0_bytes", int, "bytes of region 0 (code-executable)", lo=0, hi=1 << 26),
    Field("region0_element_bytes", int, "memory-element size of region 0", lo=1, hi=1 << 20),
    Field("region1_element_bytes", int, "effective memory-element size of region 1", lo=1, hi=1 << 20),
    Field("seeds_planned_data_bytes", int, "the seeds' planned-data budget per tile", lo=0, hi=1 << 26),
    Field("seeds_support_reserve_bytes", int, "the seeds' fixed support reserve per tile", lo=0, hi=1 << 26),
    Field("code_bytes", int, "code, runtime and host descriptors in region 0 per tile", lo=0, hi=1 << 26),
)
_EXCHANGE = (
    Field("table_bytes_max", int, "encoded exchange bytes per tile", lo=0, hi=1 << 26),
    Field("fragments_max", int, "transfer fragments per tile", lo=0, hi=1 << 24),
    Field("bytes_per_cycle", int, "exchange bytes per cycle per tile", lo=1, hi=1024),
    Field("fragment_cycles", int, "cycles per transfer fragment", lo=0, hi=1 << 16),
    Field("sync_cycles", int, "cycles per exchange superstep", lo=0, hi=1 << 24),
    Field("send_fragment_bytes", int, "encoded bytes per sent run", lo=0, hi=1024),
    Field("recv_fragment_bytes", int, "encoded bytes per received run", lo=0, hi=1024),
    Field("superstep_bytes", int, "encoded bytes per tile per exchange superstep", lo=0, hi=1 << 16),
    Field("patch_word_bytes", int, "bytes per Repeat address patch word", lo=0, hi=1024),
)
_COMPUTE = (
    Field("workers", int, "worker threads per tile", lo=1, hi=64),
    Field("clock_hz", int, "clock frequency in Hz", lo=1_000_000, hi=10_000_000_000),
    Field("amp_macs_per_cycle", dict, "GEMM MACs per cycle per tile, by operand precision (f16, f8)"),
    Field("accumulation", dict, "GEMM accumulator precision by operand precision (f16, f8)"),
    Field("accumulation_chunk", int, "products summed exactly before each accumulator rounding", lo=1, hi=4096),
    Field("vector_bytes_per_cycle", int, "bytes a worker loads or stores per cycle", lo=1, hi=1024),
    Field("compute_set_cycles", int, "cycles per compute superstep (launch + sync)", lo=0, hi=1 << 24),
)
_BY_PRECISION_INT = (Field("f16", int, "value for F16 operands", lo=1, hi=1 << 16),
                     Field("f8", int, "value for F8 operands", lo=1, hi=1 << 16))
_BY_PRECISION_ACC = (Field("f16", str, "accumulator for F16 operands", choices=("f16", "f32")),
                     Field("f8", str, "accumulator for F8 operands", choices=("f16", "f32")))


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
    code_bytes: int
    exchange_table_bytes_max: int
    exchange_fragments_max: int
    exchange_bytes_per_cycle: int
    exchange_fragment_cycles: int
    exchange_sync_cycles: int
    send_fragment_bytes: int
    recv_fragment_bytes: int
    superstep_bytes: int
    patch_word_bytes: int
    workers: int
    clock_hz: int
    amp_macs_per_cycle: dict[str, int]
    accumulation: dict[str, str]
    accumulation_chunk: int
    vector_bytes_per_cycle: int
    compute_set_cycles: int
    path: str = ""
    locs: dict[str, Loc] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @property
    def usable_bytes(self) -> int:
        return self.sram_bytes - self.unloadable_tail_bytes

    @property
    def region1_usable_bytes(self) -> int:
        return self.usable_bytes - self.region0_bytes

    def __hash__(self) -> int:
        return hash((self.name, self.tiles, self.sram_bytes, self.region0_bytes, self.path))


def load_target(path: str | Path) -> Target:
    """Load and validate a target YAML file."""
    root = load_yaml(path, "target")
    top, tl = read_fields(root, _TOP, TargetError)
    mem, ml = read_fields(top["memory"], _MEMORY, TargetError, "memory.")
    exc, el = read_fields(top["exchange"], _EXCHANGE, TargetError, "exchange.")
    cmp_, cl = read_fields(top["compute"], _COMPUTE, TargetError, "compute.")
    macs, _ = read_fields(cmp_["amp_macs_per_cycle"], _BY_PRECISION_INT, TargetError, "compute.amp_macs_per_cycle.")
    acc, _ = read_fields(cmp_["accumulation"], _BY_PRECISION_ACC, TargetError, "compute.accumulation.")
    locs = {k: v for k, v in tl.items()}
    locs.update({f"memory.{k}": v for k, v in ml.items()})
    locs.update({f"exchange.{k}": v for k, v in el.items()})
    locs.update({f"compute.{k}": v for k, v in cl.items()})
    if mem["unloadable_tail_bytes"] >= mem["sram_bytes"]:
        raise TargetError(ml["unloadable_tail_bytes"], "memory.unloadable_tail_bytes",
                          "is not smaller than sram_bytes", "the unloadable tail is a small suffix of SRAM")
    if mem["region0_bytes"] >= mem["sram_bytes"] - mem["unloadable_tail_bytes"]:
        raise TargetError(ml["region0_bytes"], "memory.region0_bytes", "leaves no room for region 1",
                          "region 0 must be smaller than the usable SRAM")
    if mem["seeds_support_reserve_bytes"] > mem["seeds_planned_data_bytes"]:
        raise TargetError(ml["seeds_support_reserve_bytes"], "memory.seeds_support_reserve_bytes",
                          "exceeds seeds_planned_data_bytes", "the reserve is part of the planned-data budget")
    return Target(
        name=top["target"], tiles=top["tiles"], path=str(path), locs=locs,
        sram_bytes=mem["sram_bytes"], unloadable_tail_bytes=mem["unloadable_tail_bytes"],
        region0_bytes=mem["region0_bytes"], region0_element_bytes=mem["region0_element_bytes"],
        region1_element_bytes=mem["region1_element_bytes"],
        seeds_planned_data_bytes=mem["seeds_planned_data_bytes"],
        seeds_support_reserve_bytes=mem["seeds_support_reserve_bytes"], code_bytes=mem["code_bytes"],
        exchange_table_bytes_max=exc["table_bytes_max"], exchange_fragments_max=exc["fragments_max"],
        exchange_bytes_per_cycle=exc["bytes_per_cycle"], exchange_fragment_cycles=exc["fragment_cycles"],
        exchange_sync_cycles=exc["sync_cycles"], send_fragment_bytes=exc["send_fragment_bytes"],
        recv_fragment_bytes=exc["recv_fragment_bytes"], superstep_bytes=exc["superstep_bytes"],
        patch_word_bytes=exc["patch_word_bytes"], vector_bytes_per_cycle=cmp_["vector_bytes_per_cycle"],
        compute_set_cycles=cmp_["compute_set_cycles"], workers=cmp_["workers"], clock_hz=cmp_["clock_hz"],
        amp_macs_per_cycle=dict(macs), accumulation=dict(acc), accumulation_chunk=cmp_["accumulation_chunk"],
    )


