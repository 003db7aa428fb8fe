"""The case-split search of INFEASIBLE certificates (solver/split.py) against a stand-in prover: which cases it
proves alone, where it splits again, when it gives an op up, and its cap on proof attempts."""

from __future__ import annotations

from ipuplan.solver import split


def _prover(refuted):
    """A prover that refutes exactly the fixings `refuted(fixed)` accepts, counting its calls."""
    calls = []

    def prove(fixed):
        calls.append(fixed)
        return ("proof", tuple(sorted(fixed))) if refuted(fixed) else None
    return prove, calls


def test_every_case_proven_alone_is_a_split_of_depth_one():
    prove, calls = _prover(lambda f: True)
    s = split.search([("a", 3), ("b", 2)], prove, lambda: False)
    assert s.op == "a" and [c[1] for c in s.cases] == [(("a", 0),), (("a", 1),), (("a", 2),)]
    assert len(calls) == 3


def test_a_case_without_a_proof_is_split_again_on_the_next_op():
    prove, _ = _prover(lambda f: f != frozenset({("a", 1)}))
    s = split.search([("a", 3), ("b", 2)], prove, lambda: False)
    assert s.op == "a" and isinstance(s.cases[1], split.Split) and s.cases[1].op == "b"
    assert [path for path, _ in split.leaves(s)] == [
        (("a", 0),), (("a", 1), ("b", 0)), (("a", 1), ("b", 1)), (("a", 2),)]


def test_an_op_with_most_cases_open_is_given_up_for_the_next():
    """"a" proves one of five cases alone: at its third open case it is given up, unsplit; "b" proves both of
    its own."""
    prove, calls = _prover(lambda f: any(op == "b" for op, _ in f) or f == frozenset({("a", 0)}))
    s = split.search([("a", 5), ("b", 2)], prove, lambda: False)
    assert s.op == "b" and all(not isinstance(c, split.Split) for c in s.cases)
    assert calls[:4] == [frozenset({("a", i)}) for i in range(4)] and calls[4:] == [frozenset({("b", 0)}),
                                                                                     frozenset({("b", 1)})]


def test_no_proof_and_the_caps_give_none():
    never, _ = _prover(lambda f: False)
    assert split.search([("a", 3), ("b", 2)], never, lambda: False) is None
    always, calls = _prover(lambda f: True)
    assert split.search([("a", 3)], always, lambda: True) is None and not calls
    wide, calls = _prover(lambda f: True)
    assert split.search([("a", split.MAX_PROOFS + 1)], wide, lambda: False) is None
    assert len(calls) == split.MAX_PROOFS


def test_the_case_likeliest_to_escape_tried_first_gives_a_failing_op_up_sooner():
    """Below "a"=1 no case of "b"=2 has a proof: tried in index order "b" costs three attempts before it is given
    up for "c"; with b's case 2 ordered first, one. The split found is the same."""
    def refuted(f):
        return not ({("a", 1)} <= f and ("b", 2) in f) and f != frozenset({("a", 1)})
    ops = [("a", 3), ("b", 3), ("c", 2)]
    plain, plain_calls = _prover(refuted)
    first, first_calls = _prover(refuted)
    asked = []

    def order(fixed, op, n):
        asked.append((fixed, op))
        return [2, 0, 1] if op == "b" else range(n)
    a = split.search(ops, plain, lambda: False)
    b = split.search(ops, first, lambda: False, order)
    assert a == b and b.op == "a" and b.cases[1].op == "c"
    assert len(plain_calls) == 3 + 3 + 2 and len(first_calls) == 3 + 1 + 2
    assert (frozenset({("a", 1)}), "b") in asked


def test_an_order_that_is_not_a_permutation_is_a_bug_not_a_proof():
    import pytest
    prove, _ = _prover(lambda f: True)
    with pytest.raises(ValueError, match="not a permutation"):
        split.search([("a", 3)], prove, lambda: False, lambda fixed, op, n: [0, 0, 1])
