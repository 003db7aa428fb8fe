"""Stage partitions of a model over N chips: layer counts per stage, their stages, and the moves between them."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.stage import Stage


@dataclass(frozen=True)
class Partition:
    """Layer counts of stages 0..N-1, in order; every stage holds at least one layer."""

    counts: tuple[int, ...]

    @property
    def layers(self) -> int:
        return sum(self.counts)

    def stages(self) -> tuple[Stage, ...]:
        out, first = [], 0
        for c in self.counts:
            out.append(Stage.of(first, c, self.layers))
            first += c
        return tuple(out)

    def moves(self, stage: int) -> list["Partition"]:
        """The partitions that hand one layer of `stage` to another stage, nearest first (every boundary between
        them moves by one; the stages between keep their counts). Handing it only to a neighbour misses a
        neighbour that is full: PE-Core G/14's head stage on 4 chips can give a layer only to the stem, past two
        middle stages that fail with one more."""
        if self.counts[stage] <= 1:
            return []
        out = []
        for nb in sorted((i for i in range(len(self.counts)) if i != stage), key=lambda i: (abs(i - stage), i)):
            c = list(self.counts)
            c[stage] -= 1
            c[nb] += 1
            out.append(Partition(tuple(c)))
        return out

    def label(self) -> str:
        return "+".join(map(str, self.counts))


def balanced(layers: int, ipus: int) -> Partition:
    """Counts as even as possible; the layers left over go to the middle stages first (the ends also carry the
    stem and the head)."""
    base, extra = divmod(layers, ipus)
    counts = [base] * ipus
    order = sorted(range(ipus), key=lambda i: (i in (0, ipus - 1), abs(i - (ipus - 1) / 2)))
    for i in order[:extra]:
        counts[i] += 1
    return Partition(tuple(counts))


def under_caps(layers: int, caps: list[int]) -> Partition | None:
    """The most balanced partition whose stage i holds at most caps[i] layers (and at least one), or None when the
    caps hold fewer than `layers`. Below the level, the ends give up their layers first (they also carry the stem
    and the head)."""
    n = len(caps)
    if n > layers or sum(caps) < layers or min(caps) < 1:
        return None
    lo, hi = 1, layers
    while lo < hi:  # the lowest level t with sum(min(cap, t)) >= layers
        t = (lo + hi) // 2
        if sum(min(c, t) for c in caps) >= layers:
            hi = t
        else:
            lo = t + 1
    counts = [min(c, lo) for c in caps]
    order = sorted((i for i in range(n) if counts[i] == lo and lo > 1),
                   key=lambda i: (i not in (0, n - 1), -abs(i - (n - 1) / 2)))
    for i in order[:sum(counts) - layers]:
        counts[i] -= 1
    return Partition(tuple(counts))
