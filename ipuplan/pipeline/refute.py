"""The within-catalogue proof that N chips cannot hold a model: per stage kind (stem, middle, head), the stage
problem refuted by rows with the fewest layers; when no partition keeps every stage below its kind's refuted count,
those certificates together are one (the checker re-proves each at every larger count a stage can hold)."""

from __future__ import annotations

from dataclasses import dataclass

from ..job.solve import certificate_doc
from ..solver.solve import Verdict

ROWS = ("counting", "farkas", "z3", "split")  # re-provable at other layer counts (not the machine bound)


def kind(stem: bool, head: bool) -> str:
    return "stem" if stem else "head" if head else "middle"


@dataclass(frozen=True)
class Refuted:
    """The stage problem of one kind refuted with the fewest layers: its stage and certificate body."""

    stage: object
    body: dict

    @property
    def count(self) -> int:
        return self.stage.count


def refuted(solved: dict) -> dict[str, Refuted]:
    """Per stage kind, the solved stage problem with the fewest layers whose INFEASIBLE carries rows."""
    out: dict[str, Refuted] = {}
    for s in solved.values():
        r, st = s.result, s.job.stage
        if r.verdict is Verdict.INFEASIBLE and isinstance(r.certificate, dict) and r.certificate.get("kind") in ROWS:
            k = kind(st.stem, st.head)
            if k not in out or st.count < out[k].count:
                out[k] = Refuted(st, r.certificate)
    return {k: out[k] for k in ("stem", "middle", "head") if k in out}


def caps(layers: int, ipus: int, ref: dict[str, Refuted]) -> list[int]:
    """The most layers stage i may hold below its kind's refuted count (every other stage holds one or more)."""
    most = layers - (ipus - 1)
    return [min(most, ref[k].count - 1) if k in ref else most
            for k in (kind(i == 0, i == ipus - 1) for i in range(ipus))]


def proves(layers: int, ipus: int, ref: dict[str, Refuted]) -> bool:
    """Whether no partition keeps every stage below its kind's refuted count."""
    c = caps(layers, ipus, ref)
    return min(c) < 1 or sum(c) < layers


def certificate(inst: dict, layers: int, ipus: int, ref: dict[str, Refuted]) -> dict:
    """The pipeline-stages certificate body: each kind's stage certificate written in full for the pipeline's
    instance (the copies of model and target beside it)."""
    kinds = {kind(i == 0, i == ipus - 1) for i in range(ipus)}
    most = layers - (ipus - 1)
    return {"kind": "pipeline-stages", "ipus": ipus, "layers": layers,
            "caps": caps(layers, ipus, ref),
            "stages": {k: certificate_doc({**inst, "stage": r.stage.record()}, r.body)
                       for k, r in ref.items() if k in kinds and r.count <= most}}
