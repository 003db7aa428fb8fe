"""Program <-> package: the manifest (target, memory map, model and plan digests, the step list, bindings,
the codelet catalogue) and one array member per column."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ipuplan.codelets as cl
from ..backend.lower.program import (Binding, BufferTable, ComputeSet, Exchange, Program, Section, Slabs,
                                     Vertices)
from .archive import Archive, PackageError, write_archive

VERTEX_COLS = ("tile", "addr", "rows", "row_bytes", "pitch", "stride", "params")
EXCHANGE_COLS = ("src", "src_addr", "nbytes", "src_stride", "dst", "dst_addr")
SLAB_COLS = ("e0", "n", "rows", "estride", "pitch", "tile", "addr", "stride")
BUFFER_COLS = ("group_of_tile", "name", "group", "addr", "size", "first", "last")


def target_record(t) -> dict:
    mm = t.memory_map
    return {"name": t.name, "tiles": t.tiles, "base": mm.base, "region0_end": mm.executable_limit,
            "loadable_end": mm.base + t.usable_bytes, "region0_element_bytes": t.region0_element_bytes,
            "region1_element_bytes": t.region1_element_bytes, "transfer_max_words": t.encoding.transfer_max_words,
            "instruction_bytes": t.instruction_bytes,
            "encoding": {k: getattr(t.encoding, k) for k in ("transfer_max_words", "send_max_words",
                                                               "sendoff_max_words", "recv_piece_words",
                                                               "send_delay_words", "row_words")},
            "reservations": [[r.name, r.start, r.end] for r in mm.reservations],
            "code_window": list(mm.code_window)}


def write_package(path: Path, prog: Program, target, header: dict, extra: dict[str, np.ndarray] | None = None) -> int:
    """Write `prog` as a package; `header` holds the model and plan identity, `extra` further members (the
    sources). Returns bytes on disk."""
    arrays: dict[str, np.ndarray] = dict(extra or {})
    steps = []

    def cs_record(k: str, s: ComputeSet) -> dict:
        verts = []
        for j, v in enumerate(s.vertices):
            for c in VERTEX_COLS:
                arrays[f"{k}/{j}/{c}"] = getattr(v, c)
            verts.append({"codelet": v.codelet, "count": len(v)})
        return {"kind": "compute", "step": s.step, "section": s.section.value, "op": s.op, "name": s.name,
                "vertices": verts, "key": k}

    for i, s in enumerate(prog.steps):
        k = f"steps/{i:05d}"
        if isinstance(s, ComputeSet):
            steps.append(cs_record(k, s))
        else:
            for c in EXCHANGE_COLS:
                arrays[f"{k}/{c}"] = getattr(s, c)
            steps.append({"kind": "exchange", "step": s.step, "section": s.section.value, "op": s.op,
                          "name": s.name, "runs": len(s), "key": k})
    carry = cs_record("carry", prog.carry) if prog.carry else None
    binds = []
    for i, b in enumerate(prog.bindings):
        k = f"bindings/{i:03d}"
        for c in SLAB_COLS:
            arrays[f"{k}/{c}"] = getattr(b.slabs, c)
        binds.append({"name": b.name, "role": b.role, "dtype": b.dtype, "scale": b.scale, "shape": list(b.shape),
                      "count": b.count, "key": k})
    bt = prog.buffers
    for c in BUFFER_COLS:
        arrays[f"buffers/{c}"] = getattr(bt, c)
    arrays["tables/lowered"] = prog.tables
    arrays["tables/accounted"] = prog.info["accounted_tables"]
    used = sorted({v.codelet for s in prog.steps if isinstance(s, ComputeSet) for v in s.vertices}
                  | ({v.codelet for v in prog.carry.vertices} if prog.carry else set()))
    manifest = dict(header, target=target_record(target), tiles=prog.tiles, count=prog.count,
                    step_names=list(prog.step_names), steps=steps, carry=carry, bindings=binds,
                    buffer_names=list(bt.names),
                    codelets=[{"name": n, "fields": list(cl.BY_NAME[n].fields), "params": cl.BY_NAME[n].params,
                               "code_bytes": cl.BY_NAME[n].code_bytes,
                               "interleaved": list(cl.BY_NAME[n].interleaved)} for n in used])
    return write_archive(path, manifest, arrays)


def read_package(path: str | Path) -> tuple[Program, dict]:
    """The program and the manifest of a package (digests checked; structure checked, not yet semantics)."""
    ar = Archive(path)
    m = ar.manifest
    try:
        def cs(rec: dict) -> ComputeSet:
            vs = tuple(Vertices(v["codelet"], *(ar.array(f"{rec['key']}/{j}/{c}") for c in VERTEX_COLS))
                       for j, v in enumerate(rec["vertices"]))
            return ComputeSet(int(rec["step"]), Section(rec["section"]), rec["op"], rec["name"], vs)

        steps = []
        for rec in m["steps"]:
            if rec["kind"] == "compute":
                steps.append(cs(rec))
            else:
                steps.append(Exchange(int(rec["step"]), Section(rec["section"]), rec["op"], rec["name"],
                                      *(ar.array(f"{rec['key']}/{c}") for c in EXCHANGE_COLS)))
        binds = tuple(Binding(b["name"], b["role"], b["dtype"], int(b["scale"]), tuple(b["shape"]), int(b["count"]),
                              Slabs(*(ar.array(f"{b['key']}/{c}") for c in SLAB_COLS))) for b in m["bindings"])
        bt = BufferTable(tuple(m["buffer_names"]), *(ar.array(f"buffers/{c}") for c in BUFFER_COLS))
        prog = Program(int(m["tiles"]), tuple(steps), tuple(m["step_names"]), int(m["count"]),
                       cs(m["carry"]) if m["carry"] else None, bt, binds, ar.array("tables/lowered"),
                       {"accounted_tables": ar.array("tables/accounted")})
    except (KeyError, TypeError, ValueError) as e:
        raise PackageError(path, f"manifest is malformed ({type(e).__name__}: {e})") from None
    return prog, m
