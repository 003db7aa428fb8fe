"""Turn an INFEASIBLE core into a certificate: the core's constraints as exact rows (one tile, one program
point), then the first proof that holds of: a counting bound on one row, LP Farkas weights (scipy HiGHS,
re-checked here with exact fractions), a z3 re-proof, a case split with Farkas weights for every case
(split.py). `ipuplan check` re-derives and re-proves it with the checker's own code (ipuplan/checker/
certificate.py); the naming of rows and selection rules is the format."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..bounds import machine_bound
from ..catalogue.records import catalogue_records, choice_record  # noqa: F401 (choice_record: the plan's records)
from ..formats import catalogue_digest  # the format's hash; no constraint code is shared
from .budget import Budget
from .model import Guard
from . import split
from .problem import Problem
from .rows import MemoryBounds, Row, Rows, edge_name, groups
from .shrink import cpsat_conflicts, shrink

Z3_RLIMIT_PER_SECOND = 2_000_000  # z3 resource units granted per deterministic second of effort


def cheapest(p: Problem, row: Row, gs=None) -> tuple[int, list[dict]]:
    """The counting bound of a row and the group minima it is made of (largest first): every group's cheapest
    data bytes, plus the table elements of every group's cheapest tables (the allocation grows with the tables,
    so it is at least that of their smallest sum). A staged parameter's home is part of its implementation."""
    parts, tables = [], 0
    for name, g in (gs or groups(p)).items():
        vals = [row.coef.get(k, 0) for k in g]
        if not vals:  # an op without candidates: no selection at all (z3 proves it from the rules alone)
            continue
        tables += min(row.tcoef.get(k, 0) for k in g)
        j = int(np.argmin(vals))
        if vals[j]:
            label = _label(p, g[j])
            parts.append({"group": name, "cheapest": label, "bytes": int(vals[j])})
    if tables:
        parts.append({"group": "exchange tables", "cheapest": f"{tables:,} B in whole elements",
                      "bytes": int(p.acct.table_alloc(tables))})
    parts.sort(key=lambda d: -d["bytes"])
    return sum(d["bytes"] for d in parts), parts


def _label(p: Problem, lit: tuple) -> str:
    if lit[0] == "impl":
        return p.impls[lit[1]][lit[2]].label
    return f"{lit[4]} transfer" if lit[4] != "none" else "no transfer"


def rows_from_core(p: Problem, classes, core: list[Guard], rows: Rows) -> list[Row]:
    """Drill each core constraint down to exact rows: a tile class's row becomes its tiles' rows (their data
    bytes are identical, their exchange tables may differ)."""
    by = {c.index: c for c in classes}
    out: dict[tuple, Row] = {}

    def add(kind, tile, step=None):
        k = (kind, int(tile), step)
        if k not in out:
            out[k] = rows.row(kind, int(tile), step)

    for gd in core:
        info = gd.info
        if not info:
            continue
        tag = info[0]
        if gd.family == "liveness" and tag == "total":
            for t in by[info[2]].tiles:
                add("memory", t, info[1])
        elif gd.family == "liveness" and tag == "tile":
            add("memory", info[2], info[1])
        elif gd.family == "regions" and tag == "il":
            add("region1", info[2], info[1])
        elif gd.family == "regions" and tag == "tables":
            for t in by[info[1]].tiles:
                add("region0", t)
        elif gd.family == "regions" and tag in ("tile-tables", "region0"):
            add("region0", info[1] if len(info) > 1 else 0)
        elif gd.family == "exchange" and tag == "tables":
            for t in by[info[1]].tiles:
                add("tables", t)
        elif gd.family == "exchange" and tag == "budget":
            add("tables", info[1])
        elif gd.family == "exchange" and tag == "frags":
            add("fragments", info[1])
    return list(out.values())


def _clauses(p: Problem):
    """The selection rules as clauses for the exact re-proofs: ("one", lits) exactly one is true;
    ("any", lit, lits) lit implies one of lits; ("not both", a, b)."""
    for g in groups(p).values():
        yield "one", g
    for e in p.edges:
        for pr in e.pairs:
            for op, of, end in ((e.producer, e.src_of_impl, pr.src), (e.consumer, e.dst_of_impl, pr.dst)):
                yield "any", pr.lit, [("impl", op, i) for i, a in of.items() if a == end]
    for outer, res in p.ties:
        po, pr_ = p.sched.buffers[outer].producer, p.sched.buffers[res].producer
        for i, u in enumerate(p.impls[po]):
            for j, v in enumerate(p.impls[pr_]):
                if u.out != v.out:
                    yield "not both", ("impl", po, i), ("impl", pr_, j)


def _structure(p: Problem):
    """The selection rules in the certificate's naming: (name, {literal: coef}, rhs, is_equality)."""
    out = []
    for name, g in groups(p).items():
        out.append((f"one:{name}", {k: 1 for k in g}, 1, True))
    for e in p.edges:
        name = edge_name(e)
        for side, op, of, attr in (("src", e.producer, e.src_of_impl, "src"), ("dst", e.consumer, e.dst_of_impl, "dst")):
            for a in sorted(set(of.values())):
                c = {pr.lit: 1 for pr in e.pairs if getattr(pr, attr) == a}
                for i, s in of.items():
                    if s == a:
                        c[("impl", op, i)] = c.get(("impl", op, i), 0) - 1
                out.append((f"{side}:{name}:{a}", c, 0, True))
    return out


class _RuleSystem:
    """The selection rules as LP rows, built once for the many small Farkas attempts over the same problem: the
    LP's columns (the rules' literals and `extra` ones, in repr order, then the elastic variable) and the rules'
    inequality and equality matrices."""

    def __init__(self, p: Problem, extra=frozenset()):
        self.rules = _structure(p)
        self.lits = {k for _, c, _, _ in self.rules for k in c} | set(extra)
        self.col = {k: i for i, k in enumerate(sorted(self.lits, key=repr))}
        self.n = len(self.col) + 1
        ineq = [(c, b) for _, c, b, eq in self.rules if not eq]
        eqs = [(c, b) for _, c, b, eq in self.rules if eq]
        self.A = _csr([c for c, _ in ineq], self.col, self.n)
        self.E = _csr([c for c, _ in eqs], self.col, self.n)
        self.b_ub, self.b_eq = [b for _, b in ineq], [b for _, b in eqs]


def _csr(coefs: list[dict], col: dict, n: int, last: float | None = None):
    """Rows {literal: coefficient} as a CSR matrix over `col`'s columns (indices sorted); `last`, when given, is
    every row's coefficient in column n-1 (the elastic variable)."""
    from scipy.sparse import csr_matrix

    ri, ci, vs = [], [], []
    for i, c in enumerate(coefs):
        ri += [i] * len(c)
        ci += [col[k] for k in c]
        vs += list(c.values())
        if last is not None:
            ri.append(i)
            ci.append(n - 1)
            vs.append(last)
    m = csr_matrix((np.array(vs, np.float64), (np.array(ri, np.intp), np.array(ci, np.intp))), shape=(len(coefs), n))
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    return m


def farkas(p: Problem, rows: list[Row], system: _RuleSystem | None = None, fixed: frozenset = frozenset()):
    """LP relaxation with one elastic variable s on every row: min s. If s* > 0 its duals are Farkas weights.
    Returns (row weights, rule multipliers, exact margin) when the exact re-check holds, else None. `system`:
    the rules prebuilt (rebuilt here when the rows name a literal outside them). `fixed`: literals chosen (a
    case of a split certificate), held at 1 in the relaxation and in the exact margin."""
    from scipy.optimize import linprog
    from scipy.sparse import vstack

    lin = [r.linear for r in rows]
    extra = {k for c in lin for k in c}
    if system is None or not extra <= system.lits:
        system = _RuleSystem(p, extra)
    rules, col, n = system.rules, system.col, system.n
    A, E = vstack([_csr(lin, col, n, last=-1.0), system.A], format="csr"), system.E
    b_ub, b_eq = [r.cap for r in rows] + system.b_ub, system.b_eq
    obj = np.zeros(n)
    obj[-1] = 1
    bounds = [(0, 1)] * (n - 1) + [(0, None)]
    for k in fixed:
        bounds[col[k]] = (1, 1)
    res = linprog(obj, A_ub=A, b_ub=b_ub, A_eq=E, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0 or res.fun <= 1e-6:
        return None
    lam = [max(0.0, -v) for v in res.ineqlin.marginals]
    mu = [-v for v in res.eqlin.marginals]
    weights = [Fraction(v) for v in lam[:len(rows)]]
    mult = {}
    for (name, _, _, eq), v in zip([r for r in rules if not r[3]], lam[len(rows):]):
        if v:
            mult[name] = Fraction(v)
    for (name, _, _, eq), v in zip([r for r in rules if r[3]], mu):
        if v:
            mult[name] = Fraction(v)
    margin = _exact_margin(rows, weights, rules, mult, fixed)
    return (weights, mult, margin) if margin > 0 else None


MAX_LP_SOLVES = 400  # deterministic cap on the LP solves of one Farkas row deletion
SCAN_ROWS = 200  # without a core: the tightest rows by counting bound tried one at a time for Farkas weights


def _fewest_rows(p: Problem, rows: list[Row], keep: list[int], system: _RuleSystem, budget: Budget):
    """Drop rows while the rest still has a Farkas certificate: at the end every row is needed (without any
    one of them the LP relaxation has a fractional solution, so no weights exist). The deletion stops at
    MAX_LP_SOLVES or the wall clock, keeping the rows it has, whose weights still prove the verdict."""
    solves = [0]

    def conflicts(trial: list[int]):
        solves[0] += 1
        if solves[0] > MAX_LP_SOLVES or budget.wall_left() <= 0:
            return None
        return trial if farkas(p, [rows[j] for j in trial], system) is not None else False

    keep, done = shrink(keep, conflicts, chunked=False)
    return keep, farkas(p, [rows[j] for j in keep], system), done


def _exact_margin(rows: list[Row], weights, rules, mult, fixed=frozenset()) -> Fraction:
    """min over selections 0 <= x <= 1 (the `fixed` literals at 1) of the weighted rows and rules, less their
    weighted right-hand sides: positive, no selection satisfies them."""
    terms = [(r.linear, w, r.cap) for r, w in zip(rows, weights) if w]
    terms += [(coefs, m, rhs) for name, coefs, rhs, _ in rules if (m := mult.get(name))]
    # the weights are the LP's floats taken exactly, so scaled to one common denominator they are integers: the
    # sums run on Python integers, exact and without a gcd per operation
    den = math.lcm(*(w.denominator for _, w, _ in terms)) if terms else 1
    c: dict = {}
    d = 0
    for coefs, w, rhs in terms:
        s = w.numerator * (den // w.denominator)
        for k, v in coefs.items():
            c[k] = c.get(k, 0) + s * v
        d += s * int(rhs)
    return Fraction(sum(v for k, v in c.items() if v < 0 or k in fixed) - d, den)


def exact_core(p: Problem, rows: list[Row], budget: Budget) -> tuple[list[int], bool] | None:
    """CP-SAT on the exact rows and the selection rules alone, one assumption literal per row: the rows it
    needs, shrunk by deletion until each is necessary (second value: the deletion finished). None: the rows
    do not conflict (or the effort ran out). A search aid; the certificate's proof is Farkas or z3."""
    keep = cpsat_conflicts(*_row_model(p, rows, range(len(rows))), budget)(list(range(len(rows))))
    if keep is None or keep is False:
        return None
    # a smaller model for the deletion: only the rows still in question
    return shrink(keep, cpsat_conflicts(*_row_model(p, rows, keep), budget))


def _row_model(p: Problem, rows: list[Row], members):
    """A CP-SAT model of the selection rules and rows[members], each row behind an assumption literal."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x: dict = {}

    def b(k):
        if k not in x:
            x[k] = m.NewBoolVar(repr(k))
        return x[k]

    for c in _clauses(p):
        if c[0] == "one":
            m.AddExactlyOne([b(k) for k in c[1]])
        elif c[0] == "any":
            m.AddBoolOr([b(k) for k in c[2]]).OnlyEnforceIf(b(c[1]))
        else:
            m.AddBoolOr([b(c[1]).Not(), b(c[2]).Not()])
    guard = {}
    for i in members:
        guard[i] = m.NewBoolVar(f"row{i}")
        r = rows[i]
        keys = [k for k, v in r.coef.items() if v]
        lhs = cp_model.LinearExpr.WeightedSum([b(k) for k in keys], [r.coef[k] for k in keys])
        if r.tcoef:
            el, gd, big = p.acct.table_element, p.acct.table_guard, sum(r.tcoef.values())
            tk = [k for k, v in r.tcoef.items() if v]
            t = cp_model.LinearExpr.WeightedSum([b(k) for k in tk], [r.tcoef[k] for k in tk])
            e = m.NewIntVar(0, big // el + 2, f"elements{i}")
            used = m.NewBoolVar(f"used{i}")
            m.Add(t <= big * used)
            m.Add(el * e >= t + gd * used)
            lhs = lhs + el * e
        m.Add(lhs <= r.cap).OnlyEnforceIf(guard[i])
    return m, guard


def z3_core(p: Problem, rows: list[Row], budget: Budget, shrink_rows: bool = True) -> tuple[list[int], bool] | None:
    """Re-prove the rows with z3 over the full selection structure (ties included); each row behind an
    assumption, z3's unsat core is shrunk by deletion so that every remaining row is needed (second value:
    the deletion finished). None: not unsat. z3 runs on a resource limit, not a timeout (deterministic)."""
    import z3

    rlimit = [int(budget.left() * Z3_RLIMIT_PER_SECOND)]
    lits: dict = {}

    def b(k):
        if k not in lits:
            lits[k] = z3.Bool(repr(k))
        return lits[k]

    s = z3.SolverFor("QF_FD")  # finite-domain SAT + pseudo-Boolean engine: fast on these rows
    for c in _clauses(p):
        if c[0] == "one":
            s.add(z3.PbEq([(b(k), 1) for k in c[1]], 1))
        elif c[0] == "any":
            s.add(z3.Implies(b(c[1]), z3.Or([b(k) for k in c[2]])))
        else:
            s.add(z3.Not(z3.And(b(c[1]), b(c[2]))))
    guard = [z3.Bool(f"row{i}") for i in range(len(rows))]
    for gi, r in zip(guard, rows):
        s.add(z3.Implies(gi, _z3_row(z3, r, b, p.acct.table_element, p.acct.table_guard)))

    def unsat(members: list[int]):
        budget.check_wall()
        if rlimit[0] <= 0:
            return None
        s.set("rlimit", rlimit[0])
        res = s.check([guard[i] for i in members])
        used = int(s.statistics().get_key_value("rlimit count")) if "rlimit count" in s.statistics().keys() else 0
        rlimit[0] -= max(used, 1)
        if res == z3.unknown:
            return None
        if res == z3.sat:
            return False
        core = {str(c) for c in s.unsat_core()}
        return [i for i in members if f"row{i}" in core]

    keep = unsat(list(range(len(rows))))
    if keep is None or keep is False:
        return None
    return shrink(keep, unsat, chunked=False) if shrink_rows else (keep, False)


def _z3_row(z3, r: Row, b, element: int, guard: int):
    """One row for z3, all pseudo-Boolean: with tables in memory, their whole-element allocation counted by
    ordered element literals e_1 >= e_2 >= ... (tables + guard <= element * sum(e) whenever any table literal
    is chosen)."""
    terms = [(b(k), v) for k, v in r.coef.items() if v]
    if not r.tcoef:
        return z3.PbLe(terms, r.cap) if terms else z3.BoolVal(r.cap >= 0)
    tab = [(b(k), v) for k, v in r.tcoef.items() if v]
    tag = f"{r.kind}_{r.tile}_{r.step}"
    used = z3.Bool(f"tables_used_{tag}")
    e = [z3.Bool(f"element{n}_{tag}") for n in range(-(-(sum(v for _, v in tab) + guard) // element))]
    parts = [z3.Implies(x, used) for x, _ in tab]
    parts += [z3.Implies(e[n + 1], e[n]) for n in range(len(e) - 1)]
    parts.append(z3.PbLe(tab + [(used, guard)] + [(z3.Not(x), element) for x in e], element * len(e)))
    parts.append(z3.PbLe(terms + [(x, element) for x in e], r.cap))
    return z3.And(parts)


def build_certificate(p: Problem, classes, core: list[Guard], sub: Budget, parent: Budget | None = None) -> dict:
    """The certificate body (without inputs and digest): scope, rows, kind and proof data. `kind` is None
    when no proof was found within the effort (the verdict is then UNKNOWN, said so)."""
    try:
        return _certificate(p, classes, core, sub)
    finally:
        if parent is not None:
            parent.spend(sub.spent)


def _certificate(p: Problem, classes, core: list[Guard], budget: Budget) -> dict:
    cands = catalogue_records(p.impls)
    n = sum(len(v) for v in cands.values())
    body = {
        "scope": {"implementations": n, "per_op": {op: len(v) for op, v in cands.items()},
                  "catalogue_sha256": catalogue_digest(cands),
                  "catalogue": p.catalogue.value,
                  "statement": f"no combination of the {n} implementations of these {len(cands)} ops in the "
                               f"{p.catalogue.value} catalogue fits (a statement about this catalogue, not every "
                               f"layout)"},
        "candidates": cands, "core": [g.name for g in core],
        "machine": machine_bound(p.graph, p.target, p.acct.support if p.acct.mode == "seeds" else None).record()
        if p.graph is not None else None,
    }
    rows = Rows(p)
    gs = groups(p)
    if not core:  # no core to drill down: the tightest rows of the whole model, each tried alone
        return _scanned(p, classes, rows, gs, budget, body)
    cand = rows_from_core(p, classes, core, rows)
    low = [cheapest(p, r, gs) for r in cand]
    best = max(range(len(cand)), key=lambda i: low[i][0] - cand[i].cap, default=None)
    if best is not None and low[best][0] > cand[best].cap:
        body.update(kind="counting", rows=[_row_doc(p, cand[best], low[best], 1)], rows_minimal=True)
        return body
    # a core small enough to be quick to find may leave out the row that proves it by counting, the plainest proof
    ranked = _ranked(rows, gs, classes, budget)
    if (counted := _counting(p, rows, gs, ranked)) is not None:
        body.update(counted)
        return body

    half = budget.share(0.5)
    found = exact_core(p, cand, half)
    budget.spend(half.spent)
    need, minimal = found if found else (list(range(len(cand))), False)
    sub = [cand[i] for i in need]
    system = _RuleSystem(p) if sub else None
    if sub and farkas(p, sub, system) is not None:
        keep, (weights, mult, margin), done = _fewest_rows(p, cand, need, system, budget)
        body.update(kind="farkas", rows=[_row_doc(p, cand[i], low[i], w) for i, w in zip(keep, weights) if w > 0],
                    rows_minimal=done,
                    farkas=_farkas_fields(mult, margin))
    elif found and (proof := z3_core(p, sub, budget, shrink_rows=not minimal)):
        body.update(kind="z3", rows=[_row_doc(p, sub[i], low[need[i]], None) for i in proof[0]],
                    rows_minimal=minimal or proof[1])
    elif (cases := _split_proof(p, classes, rows, gs, budget, ranked=ranked)) is not None:
        body.update(cases)
    else:
        body.update(kind=None, rows=[_row_doc(p, r, lw, None) for r, lw in zip(cand, low)], rows_minimal=False)
    return body


def _scanned(p: Problem, classes, rows: Rows, gs, budget: Budget, body: dict) -> dict:
    """Without a core (the re-solve under assumptions did not finish within its share): every tile class's memory
    row at every step, on its representative tile, ranked by counting bound; the tightest proves it by counting, or
    one of the SCAN_ROWS tightest alone by Farkas weights (edges and selection rules do the rest); else no kind."""
    ranked = _ranked(rows, gs, classes, budget)
    body["core"] = []

    def exact(entry):
        r = rows.row("memory", entry[2], entry[3])
        return r, cheapest(p, r, gs)

    if (counted := _counting(p, rows, gs, ranked)) is not None:
        body.update(counted)
        return body
    system = _RuleSystem(p)
    for entry in ranked[:SCAN_ROWS]:
        budget.check_wall()
        r, low = exact(entry)
        f = farkas(p, [r], system)
        if f is not None:
            weights, mult, margin = f
            body.update(kind="farkas", rows=[_row_doc(p, r, low, weights[0])], rows_minimal=True,
                        farkas=_farkas_fields(mult, margin))
            return body
    cases = _split_proof(p, classes, rows, gs, budget, system, ranked)
    body.update(cases if cases is not None else dict(kind=None, rows=[], rows_minimal=False))
    return body


def _counting(p: Problem, rows: Rows, gs, ranked: list) -> dict | None:
    """Certificate fields proving by counting on the tightest of the `ranked` rows, when its bound exceeds the
    capacity; else None."""
    if not ranked or ranked[0][0] <= 0:
        return None
    r = rows.row("memory", ranked[0][2], ranked[0][3])
    return dict(kind="counting", rows=[_row_doc(p, r, cheapest(p, r, gs), 1)], rows_minimal=True)


def _ranked(rows: Rows, gs, classes, budget: Budget) -> list[tuple[int, int, int, int]]:
    """Every tile class's memory row at every step, on its representative tile, as (counting bound less capacity,
    rank, tile, step), tightest first (ties in class and step order)."""
    ranked = []
    cap = rows.caps["memory"]
    bounds = MemoryBounds(rows, gs)
    for c in classes:
        for step, low in enumerate(bounds(int(c.rep))):
            ranked.append((int(low) - cap, len(ranked), int(c.rep), step))
        budget.check_wall()
    ranked.sort(key=lambda x: (-x[0], x[1]))
    return ranked


def _farkas_fields(mult: dict, margin: Fraction) -> dict:
    return {"rules": {k: str(v) for k, v in sorted(mult.items())}, "margin": str(margin),
            "margin_float": float(margin)}


def _split_proof(p: Problem, classes, rows: Rows, gs, budget: Budget, system: _RuleSystem | None = None,
                 ranked: list | None = None) -> dict | None:
    """A case split (solver/split.py) whose every case has Farkas weights with its implementations fixed, over
    the SCAN_ROWS memory rows whose counting bound, those implementations fixed, comes closest to capacity; as
    certificate fields (kind "split"; its rows those with a positive weight in some case), or None. Ops are tried
    in order of their spread: the bytes by which their implementations differ, summed over the tightest rows.
    `ranked`: `_ranked` of the unfixed groups, when the caller has it already."""
    system = system or _RuleSystem(p)

    def tightest(fixed: frozenset) -> list[Row]:
        narrowed = dict(gs)
        for op, i in fixed:
            narrowed[op] = [("impl", op, i)]
        top = ranked if not fixed and ranked is not None else _ranked(rows, narrowed, classes, budget)
        return [rows.row("memory", t, s) for _, _, t, s in top[:SCAN_ROWS]]

    root = tightest(frozenset())
    lin = [r.linear for r in root]
    spread = []
    for op, impls in p.impls.items():
        if len(impls) > 1:
            vals = [[c.get(("impl", op, i), 0) for i in range(len(impls))] for c in lin]
            spread.append((-sum(max(v) - min(v) for v in vals), op, len(impls)))
    spread.sort()
    # per fixing tried, each implementation's bytes summed over that fixing's tightest rows: below it, the
    # implementations with the fewest are tried first (the likeliest to escape a proof, so a failing op is given
    # up after few attempts)
    weight: dict[frozenset, dict] = {frozenset(): _impl_bytes(root)}

    def prove(fixed):
        sel = tightest(fixed)
        weight[fixed] = _impl_bytes(sel)
        f = farkas(p, sel, system, frozenset(("impl", op, i) for op, i in fixed))
        return None if f is None else ([r for r, w in zip(sel, f[0]) if w > 0], [w for w in f[0] if w > 0], *f[1:])

    def order(fixed, op, n):
        w = weight.get(fixed, {})
        return sorted(range(n), key=lambda i: (w.get(("impl", op, i), 0), i))

    found = split.search([(op, n) for _, op, n in spread], prove, lambda: budget.wall_left() <= 0, order)
    if found is None:
        return None
    used: dict = {}
    for _, (rs, _, _, _) in split.leaves(found):
        for r in rs:
            used.setdefault((r.kind, r.tile, r.step), (len(used), r))

    def farkas_doc(proof) -> dict:
        rs, w, mult, margin = proof
        return {"rows": [used[(r.kind, r.tile, r.step)][0] for r in rs], "weights": [str(v) for v in w],
                **_farkas_fields(mult, margin)}

    return dict(kind="split", rows=[_row_doc(p, r, cheapest(p, r, gs), None) for _, r in used.values()],
                rows_minimal=False, split=split.to_doc(found, lambda op, i: p.impls[op][i].label, farkas_doc))


def _impl_bytes(rows: list[Row]) -> dict:
    """Each implementation literal's bytes summed over `rows` (tables at their bytes)."""
    out: dict = {}
    for r in rows:
        for k, v in r.linear.items():
            if k[0] == "impl":
                out[k] = out.get(k, 0) + v
    return out


def _row_doc(p: Problem, r: Row, low, weight) -> dict:
    d = {"name": r.name(p), "kind": r.kind, "tile": r.tile, "step": p.steps[r.step] if r.step is not None else None,
         "capacity": r.cap, "cheapest_bytes": low[0], "cheapest_by_group": low[1][:12]}
    if weight is not None:
        d["weight"] = str(weight)
    return d
