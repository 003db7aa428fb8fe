"""A pipeline stage of a model: a contiguous range of encoder layers, with or without the stem and the head."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError


@dataclass(frozen=True)
class Stage:
    """Layers [first, first + count) of the Repeat; `stem` (patch embedding, positions, pre-norm) runs before them
    on the first stage, `head` (post-norm, pooling head, projection) after them on the last."""

    first: int
    count: int
    stem: bool
    head: bool

    @property
    def end(self) -> int:
        return self.first + self.count

    @property
    def problem(self) -> tuple[int, bool, bool]:
        """What the single-chip problem depends on: the weights differ per layer, the plan does not."""
        return (self.count, self.stem, self.head)

    def label(self) -> str:
        ends = "+".join(p for p, on in (("stem", self.stem), ("head", self.head)) if on)
        return f"layers {self.first}..{self.end - 1}" + (f" + {ends}" if ends else "")

    def record(self) -> dict:
        return {"first": self.first, "count": self.count, "stem": self.stem, "head": self.head}

    def check(self, layers: int, where: str = "--stage") -> "Stage":
        """This stage, if it is one of a `layers`-deep model's (the stem goes with layer 0, the head with the last)."""
        if not (0 <= self.first and self.count >= 1 and self.end <= layers):
            raise ModelError(where, None, f"layers {self.first}..{self.end - 1} are not within the model's {layers}",
                             f"valid: first >= 0, count >= 1, first + count <= {layers}")
        if self.stem != (self.first == 0) or self.head != (self.end == layers):
            raise ModelError(where, None, f"{self.label()}: the stem runs with layer 0 and the head with layer "
                             f"{layers - 1}", "stem = (first == 0), head = (first + count == layers)")
        return self

    @staticmethod
    def whole(layers: int) -> "Stage":
        return Stage(0, layers, True, True)

    @staticmethod
    def of(first: int, count: int, layers: int) -> "Stage":
        return Stage(first, count, first == 0, first + count == layers).check(layers)

    @staticmethod
    def in_doc(doc: dict, layers: int, where: str) -> "Stage | None":
        """The stage an artefact (plan, manifest) records, None for a whole model."""
        return Stage.from_record(doc["stage"], layers, f"{where}.stage") if "stage" in doc else None

    @staticmethod
    def from_record(rec, layers: int, where: str) -> "Stage":
        keys = {"first": int, "count": int, "stem": bool, "head": bool}
        if not isinstance(rec, dict) or set(rec) != set(keys) or not all(
                isinstance(rec[k], t) and (t is bool or not isinstance(rec[k], bool)) for k, t in keys.items()):
            raise ModelError(where, None, f"{rec!r} is not a stage", "valid: {first: int, count: int, stem: bool, "
                             "head: bool}")
        return Stage(rec["first"], rec["count"], rec["stem"], rec["head"]).check(layers, where)
