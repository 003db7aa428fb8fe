"""Exchange phases as ipu-stack's `ExchangeScheduleSnapshot` (schema version 4): per phase, every physical
transfer with its source tile, its source address in every Repeat iteration, its destinations as
[tile, address] pairs, its words and width (32-bit items), so an IPU owner can schedule, encode and validate
our exchanges with that toolchain's `ipu-exchange-schedule-bench`."""

from __future__ import annotations

import numpy as np

SCHEMA_VERSION = 4


def snapshot(prog) -> dict:
    phases = []
    for s in prog.steps:
        if s.kind != "exchange":
            continue
        iters = prog.count if s.section.value == "body" else 1
        transfers = []
        k = np.arange(iters)
        for i in range(len(s.src)):
            addrs = (s.src_addr[i] + k * s.src_stride[i]).tolist() if s.src_stride[i] else [int(s.src_addr[i])]
            dst = [[int(t), int(a)] for t, a in zip(s.dst[i], s.dst_addr[i]) if t >= 0]
            transfers.append({"source": int(s.src[i]), "source_addresses": addrs, "destinations": dst,
                              "words": int(s.nbytes[i]) // 4, "width": "Word32"})
        phases.append({"phase": len(phases), "transfers": transfers})
    return {"schema_version": SCHEMA_VERSION, "tile_count": prog.tiles, "phases": phases}
