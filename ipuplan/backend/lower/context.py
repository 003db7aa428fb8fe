"""What every lowering rule needs: the chosen implementation of each op, the placed buffer that holds each
operand (exchanged copy, producer's output, host input, resident or staged parameter), and a builder that
turns per-vertex block choices into a Vertices table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ipuplan.codelets as cl
from ...catalogue import Impl, ParamMode
from .buffers import Blocks, LoweringError, Placed
from .program import Vertices


@dataclass(frozen=True)
class Operand:
    """A placed buffer an op reads, and whether its address moves with the Repeat iteration."""

    buf: Placed
    moves: bool  # a resident per-layer sequence: fields advance by the buffer's stride

    def blocks(self, tiles: int) -> Blocks:
        b = self.buf.blocks(tiles)
        return b if self.moves else Blocks(b.tile, b.addr, b.rows, b.pitch, b.row_bytes, np.zeros_like(b.stride))


class Ctx:
    def __init__(self, p, chosen: set, placed: dict[str, Placed]):
        self.p, self.chosen, self.placed = p, chosen, placed
        self.T = p.target.tiles
        self.impl: dict[str, Impl] = {}
        for lit in chosen:
            if lit[0] == "impl":
                self.impl[lit[1]] = p.impls[lit[1]][lit[2]]
        self.pair = {}
        for e in p.edges:
            for pr in e.pairs:
                if pr.lit in chosen:
                    self.pair[(e.consumer, e.index)] = (e, pr)

    def buf(self, name: str) -> Placed:
        try:
            return self.placed[name]
        except KeyError:
            raise LoweringError(f"no placed buffer {name!r}") from None

    def operand(self, op: str, idx: int) -> Operand:
        """The buffer op `op` reads as input `idx`."""
        sop = self.p.sched.op(op)
        ref = dict(sop.reads)[idx]
        if ref.kind == "param":
            for pu in self.impl[op].params:
                if pu.key == ref.key:
                    count = self.p.sched.params[pu.key].count
                    if pu.mode is ParamMode.RESIDENT:
                        return Operand(self.buf(f"{pu.key} (resident x{count})"), count > 1)
                    return Operand(self.buf(f"{pu.key} (staged)"), False)
            raise LoweringError(f"{op}: parameter {ref.key} has no placed copy")
        if (op, idx) in self.pair:
            e, pr = self.pair[(op, idx)]
            if pr.mode == "none":
                return Operand(self.buf(f"{e.producer} (output)"), False)
            return Operand(self.buf(f"{e.buf} -> {op}[{idx}] (exchanged copy)"), False)
        if not self.p.sched.buffers[ref.key].producer:
            return Operand(self.buf(f"{ref.key} (host input)"), False)
        raise LoweringError(f"{op}: input {idx} has no chosen transport")

    def own(self, op: str, role: str) -> Operand:
        return Operand(self.buf(f"{op} ({role})"), False)


class VertexBuilder:
    """Fields bound block by block: `bind(field, blocks, index)` takes one block per vertex."""

    def __init__(self, codelet: cl.Codelet, n: int):
        self.codelet = codelet
        F = len(codelet.fields)
        self.tile = np.full(n, -1, np.int64)
        self.cols = {k: np.full((n, F), -1 if k == "addr" else 0, np.int64)
                     for k in ("addr", "rows", "row_bytes", "pitch", "stride")}
        self.params = np.zeros((n, codelet.params), np.int64)

    def bind(self, field: str, b: Blocks, index: tuple, rows=None, row_bytes=None, pitch=None, mask=None) -> None:
        f = self.codelet.fields.index(field)
        sel = np.ones(len(self.tile), bool) if mask is None else mask
        t = np.broadcast_to(b.tile[index], sel.shape)
        clash = sel & (self.tile >= 0) & (self.tile != t)
        if clash.any():
            bad = int(np.flatnonzero(clash)[0])
            raise LoweringError(f"{self.codelet.name}: field {field} of vertex {bad} is on tile {int(t[bad])}, "
                                f"the vertex on tile {int(self.tile[bad])}")
        self.tile[sel] = t[sel]
        vals = {"addr": b.addr[index], "rows": b.rows[index] if rows is None else rows,
                "row_bytes": b.row_bytes[index] if row_bytes is None else row_bytes,
                "pitch": b.pitch[index] if pitch is None else pitch,
                "stride": b.stride[index]}
        for k, v in vals.items():
            self.cols[k][sel, f] = np.broadcast_to(v, sel.shape)[sel]

    def build(self) -> Vertices:
        if (self.tile < 0).any():
            raise LoweringError(f"{self.codelet.name}: a vertex has no tile")
        return Vertices(self.codelet.name, self.tile, self.cols["addr"], self.cols["rows"], self.cols["row_bytes"],
                        self.cols["pitch"], self.cols["stride"], self.params)
