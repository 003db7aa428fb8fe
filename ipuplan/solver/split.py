"""Case-split search for INFEASIBLE certificates: when no Farkas weights exist over a set of rows (a fractional
selection satisfies them all), fix one op's implementation at a time and prove each case on its own, splitting
on a second op where a case still has no proof. Every plan chooses exactly one implementation of each op, so the
cases of a split cover every plan; the proof of a case is whatever `prove` returns (Farkas weights in
solver/certificate.py), and `ipuplan check` re-proves every case with its own code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, Union

MAX_DEPTH = 2  # ops fixed along one path of the split
MAX_PROOFS = 600  # deterministic cap on the proof attempts of one search


@dataclass(frozen=True)
class Split:
    """Op `op` split over its implementations: `cases[i]` proves the plans choosing implementation i, by a
    proof of `prove` or by a further split."""

    op: str
    cases: tuple[Union[object, "Split"], ...]


def search(ops: list[tuple[str, int]], prove: Callable[[frozenset], object | None],
           stop: Callable[[], bool], order: Callable[[frozenset, str, int], Sequence[int]] | None = None
           ) -> Split | None:
    """A split whose every case is proven, or None. `ops`: (op, implementation count), in the order to try them;
    `prove(fixed)`: a proof that no plan choosing every (op, implementation) of `fixed` fits, or None; `stop()`:
    the wall clock ran out; `order(fixed, op, n)`: the implementations of `op` in the order to try them below
    `fixed` (default 0..n-1). An op is given up at its first case too many without a proof, so trying the cases
    likeliest to escape a proof first gives a failing op up after few attempts (an op kept has every case
    attempted, whatever the order). At most MAX_PROOFS calls of `prove`, so the result does not depend on the
    machine."""
    calls = [0]
    order = order or (lambda fixed, op, n: range(n))

    def attempt(fixed: frozenset):
        if calls[0] >= MAX_PROOFS or stop():
            raise _Exhausted
        calls[0] += 1
        return prove(fixed)

    def node(fixed: frozenset, depth: int) -> Split | None:
        used = {op for op, _ in fixed}
        for op, n in (o for o in ops if o[0] not in used):
            # split again only where most cases are proven already: give the op up once that cannot be
            allowed = n // 2 if depth + 1 < MAX_DEPTH else 0
            tries = list(order(fixed, op, n))
            if sorted(tries) != list(range(n)):
                raise ValueError(f"order({op}) is not a permutation of its {n} implementations")
            cases, open_ = [None] * n, []
            for i in tries:
                cases[i] = attempt(fixed | {(op, i)})
                if cases[i] is None:
                    open_.append(i)
                    if len(open_) > allowed:
                        break
            if len(open_) > allowed:
                continue
            for i in open_:
                cases[i] = node(fixed | {(op, i)}, depth + 1)
                if cases[i] is None:
                    break
            if all(c is not None for c in cases):
                return Split(op, tuple(cases))
        return None

    try:
        return node(frozenset(), 0)
    except _Exhausted:
        return None


class _Exhausted(Exception):
    """The proof attempts or the wall clock ran out."""


def leaves(s: Split, path: tuple = ()):
    """(the (op, implementation) pairs fixed on the way, the proof) of every case, depth first."""
    for i, c in enumerate(s.cases):
        here = path + ((s.op, i),)
        if isinstance(c, Split):
            yield from leaves(c, here)
        else:
            yield here, c


def to_doc(s: Split, label: Callable[[str, int], str], proof_doc: Callable[[object], dict]) -> dict:
    """The split as certificate.json writes it: {"op", "cases": [{"implementation", "label", and "farkas" (the
    proof's document) or "split"}]}."""
    cases = []
    for i, c in enumerate(s.cases):
        case = {"implementation": i, "label": label(s.op, i)}
        if isinstance(c, Split):
            case["split"] = to_doc(c, label, proof_doc)
        else:
            case["farkas"] = proof_doc(c)
        cases.append(case)
    return {"op": s.op, "cases": cases}
