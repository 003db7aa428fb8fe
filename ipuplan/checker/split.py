"""Re-prove a split certificate: an op's implementations each taken as a case (every plan chooses exactly one, so
the cases cover every plan), each case refuted by Farkas weights over the certificate's rows with the
implementations chosen on its way held at 1, or split again on another op."""

from __future__ import annotations

from .farkas import farkas_bound
from .plan import CheckReport
from .space import Space
from .validate import Invalid


def check_split(rep: CheckReport, sp: Space, rows, split: dict) -> None:
    """Every case of `split` refuted, or the first violation on `rep`."""
    try:
        leaves, ops, least = _node(sp, rows, split, (), "split")
    except Invalid as e:
        rep.fail(str(e))
        return
    rep.lines.append(f"split: {leaves} cases over {', '.join(ops)}, each refuted by Farkas weights with its "
                     f"implementations fixed; every selection, even fractional, exceeds the weighted capacity by "
                     f"at least {float(least):,.3f} (exact fractions)")


def _node(sp: Space, rows, node, path: tuple, where: str):
    """(cases refuted, ops split on, the least margin) of one split node; raises Invalid naming the case."""
    if not isinstance(node, dict) or not isinstance(node.get("cases"), list):
        raise Invalid(f"{where}: not a split (op and cases)")
    op = node.get("op")
    group = sp.groups.get(op) if isinstance(op, str) else None
    if group is None or any(k[:2] != ("impl", op) for k in group):
        raise Invalid(f"{where}: {op!r} is not an op of this instance's catalogue")
    if op in [o for o, _ in path]:
        raise Invalid(f"{where}: {op} is split twice on one path")
    if [c.get("implementation") if isinstance(c, dict) else None for c in node["cases"]] != list(range(len(group))):
        raise Invalid(f"{where}: the cases of {op} must be its implementations 0..{len(group) - 1}, each once, "
                      f"in order")
    leaves, ops, least = 0, [op], None
    for i, case in enumerate(node["cases"]):
        here = path + ((op, i),)
        at = f"{where} {op}={i}"
        if "split" in case:
            n, sub_ops, m = _node(sp, rows, case["split"], here, at)
        else:
            n, sub_ops, m = 1, [], _leaf(sp, rows, case.get("farkas"), here, at)
        leaves += n
        ops += [o for o in sub_ops if o not in ops]
        least = m if least is None else min(least, m)
    return leaves, ops, least


def _leaf(sp: Space, rows, f, path: tuple, where: str):
    if not isinstance(f, dict) or not isinstance(f.get("rows"), list) or not isinstance(f.get("weights"), list):
        raise Invalid(f"{where}: no Farkas weights (rows, weights, rules)")
    if not all(isinstance(j, int) and 0 <= j < len(rows) for j in f["rows"]) or not f["rows"]:
        raise Invalid(f"{where}: its rows must be indices of the certificate's rows")
    fixed = frozenset(sp.index[("impl", op, i)] for op, i in path)
    low, d = farkas_bound(sp, [rows[j] for j in f["rows"]], f["weights"], f.get("rules"), fixed)
    if low <= d:
        raise Invalid(f"{where}: the weighted rows admit a fractional selection (min {float(low):.6g} <= "
                      f"{float(d):.6g})")
    return low - d
