"""Farkas weights re-checked with exact fractions: the selection rules as named linear constraints, and the bound
that weighted rows and rules put on every selection (with some literals fixed, for a case of a split)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .space import Space
from .validate import Invalid


def structure(sp: Space) -> dict[str, tuple[dict[int, int], int, bool]]:
    """The selection rules as named linear constraints: name -> (coefficients, rhs, is_equality).
    one:<group>: one literal per group; src:<edge>:<a> / dst:<edge>:<b>: an edge's pairs follow its producer's
    and consumer's choices."""
    idx = sp.index
    out: dict[str, tuple[dict[int, int], int, bool]] = {}
    for name, g in sp.groups.items():
        out[f"one:{name}"] = ({idx[k]: 1 for k in g}, 1, True)
    for name, (prod, cons, _, src_of, dst_of) in sp.ends.items():
        pairs = sp.groups[name]
        for side, op, of, pos in (("src", prod, src_of, 3), ("dst", cons, dst_of, 4)):
            for a in sorted(set(of)):
                c = {idx[k]: 1 for k in pairs if k[pos] == a}
                for i, s_ in enumerate(of):
                    if s_ == a:
                        c[idx[("impl", op, i)]] = c.get(idx[("impl", op, i)], 0) - 1
                out[f"{side}:{name}:{a}"] = (c, 0, True)
    return out


def frac(s) -> Fraction:
    return Fraction(str(s))


def farkas_bound(sp: Space, rows, weights, rule_mults: dict,
                 fixed: frozenset = frozenset()) -> tuple[Fraction, Fraction]:
    """(min over selections 0 <= x <= 1, the literals at indices `fixed` at 1, of c.x; d), where the weighted rows
    and selection rules give c.x <= d for every plan: the weights prove no such plan fits when min > d. Raises
    Invalid on a negative weight or multiplier of an inequality, or a rule that does not exist."""
    if not isinstance(rule_mults, dict) or len(weights) != len(rows):
        raise Invalid("farkas: the weights do not match the rows, or the rules are not a mapping")
    ws = [frac(w) for w in weights]
    for (r, *_), w in zip(rows, ws):
        if w < 0:
            raise Invalid(f"row {r['name']}: negative weight {w}")
    rules = structure(sp)
    ms = {}
    for name, m in rule_mults.items():
        if name not in rules:
            raise Invalid(f"farkas: no selection rule named {name!r}")
        ms[name] = frac(m)
        if ms[name] < 0 and not rules[name][2]:
            raise Invalid(f"farkas: negative multiplier on inequality {name}")
    # every weight on one common denominator: c and d are then sums of integers, exact without a gcd per addition
    den = math.lcm(*(f.denominator for f in (*ws, *ms.values())))
    c = [0] * len(sp.lits)
    d = 0
    for (_, coef, tcoef, cap, _), w in zip(rows, ws):  # tables at their bytes: a relaxation of their elements
        coef = coef + tcoef
        s = w.numerator * (den // w.denominator)
        if s:
            nz = np.flatnonzero(coef)
            for i, v in zip(nz.tolist(), coef[nz].tolist()):
                c[i] += s * v
            d += s * int(cap)
    for name, m in ms.items():
        coefs, rhs, _ = rules[name]
        s = m.numerator * (den // m.denominator)
        for i, v in coefs.items():
            c[i] += s * v
        d += s * rhs
    return Fraction(sum(x for i, x in enumerate(c) if x < 0 or i in fixed), den), Fraction(d, den)
