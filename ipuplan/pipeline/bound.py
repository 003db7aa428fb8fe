"""The machine bound over a pipeline: stages are contiguous layer ranges (the stem with layer 0, the head with the
last), each on its own chip, so each stage's parameters and fullest-step activations must fit one chip. Whether a
range fits only gets easier as it shrinks, so the greedy chain (each stage as long as it can be) uses the fewest
chips of any partition: when it needs more than N, no partition over N chips fits, whatever the compiler."""

from __future__ import annotations

from dataclasses import dataclass

from ..bounds import MachineBound, machine_bound
from ..model import build_graph
from ..model.stage import Stage
from ..target import Target


@dataclass(frozen=True)
class Reach:
    """One stage of the greedy chain: from `first`, layers up to `reach` fit one chip; one layer more does not
    (`over`: that range's machine statement), unless `reach` is the model's end."""

    first: int
    reach: int
    fits: MachineBound  # the machine statement of layers [first, reach)
    over: MachineBound | None  # of [first, reach + 1), which exceeds one chip

    def record(self) -> dict:
        return {"first": self.first, "reach": self.reach, "fits": self.fits.record(),
                "over": self.over.record() if self.over is not None else None}


@dataclass(frozen=True)
class Chain:
    """The greedy chain over a `layers`-deep model: `fewest` chips, or None when some layer alone (with its
    stem or head) exceeds one chip."""

    layers: int
    links: tuple[Reach, ...]
    stuck: MachineBound | None  # the machine statement of the one-layer range that does not fit

    @property
    def fewest(self) -> int | None:
        return None if self.stuck is not None else len(self.links)

    def proves_fewer_than(self, ipus: int) -> bool:
        """Whether this chain proves that no partition over `ipus` chips fits."""
        return self.fewest is None or self.fewest > ipus

    def certificate(self, ipus: int) -> dict:
        """The body of a certificate that `ipus` chips cannot hold the model: the first `ipus` links of the chain
        (each maximal), which end short of the last layer, or the layer that fits no chip."""
        assert self.proves_fewer_than(ipus)
        links = self.links[:ipus]
        return {"kind": "pipeline-machine", "ipus": ipus, "layers": self.layers,
                "links": [ln.record() for ln in links],
                "stuck": self.stuck.record() if self.stuck is not None else None,
                "covered": links[-1].reach if links else 0}


def stage_statement(spec, batch: int, stage: Stage, target: Target, support_reserve: int | None) -> MachineBound:
    return machine_bound(build_graph(spec, batch, stage), target, support_reserve)


def greedy_chain(spec, batch: int, target: Target, support_reserve: int | None = None,
                 max_ipus: int = 64) -> Chain:
    """Each stage from where the previous one ended, as many layers as fit one chip by the machine bound."""
    L = spec.layers
    links: list[Reach] = []
    first = 0
    while first < L and len(links) < max_ipus:
        fits = None
        reach = first
        over = None
        while reach < L:
            st = stage_statement(spec, batch, Stage.of(first, reach + 1 - first, L), target, support_reserve)
            if st.proves:
                over = st
                break
            fits, reach = st, reach + 1
        if reach == first:
            return Chain(L, tuple(links), over)
        links.append(Reach(first, reach, fits, over))
        first = reach
    return Chain(L, tuple(links), None)
