"""Turn an INFEASIBLE core into a certificate: the core's constraints as exact rows (one tile, one program
point), then the first proof that holds of: a counting bound on one row, LP Farkas weights (scipy HiGHS,
re-checked here with exact fractions), a z3 re-proof. `ipuplan check` re-derives and re-proves it with the
checker's own code (ipuplan/check/certificate.py); the naming of rows and selection rules is the format."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..check.certificate import catalogue_digest  # the format's hash; no constraint code is shared
from ..plan import layout_record
from .catalogue import Impl
from .model import Guard
from .problem import Problem
from .shrink import cpsat_conflicts, shrink


def choice_record(im: Impl, i: int) -> dict:
    """An implementation as plan.json records a choice (and a certificate lists a candidate)."""
    rec = {"impl": i, "label": im.label, **{k: v for k, v in im.fields.items() if k != "layout"}}
    rec["output"] = layout_record(im.out)
    return rec


def catalogue_records(impls: dict[str, list[Impl]]) -> dict[str, list[dict]]:
    return {op: [choice_record(im, i) for i, im in enumerate(v)] for op, v in impls.items()}


@dataclass
class Row:
    kind: str  # memory, region1, region0, tables, fragments
    tile: int
    step: int | None
    coef: dict  # solver literal -> bytes (or fragments)
    cap: int

    def name(self, p: Problem) -> str:
        at = f", {p.steps[self.step]}" if self.step is not None else ""
        return f"{self.kind}[tile {self.tile}{at}]"


class Rows:
    """Exact per-tile rows of the solver's problem, computed from its contribution vectors."""

    def __init__(self, p: Problem):
        self.p = p
        a = p.acct
        self.D = np.stack([p.vectors[c.vec] for c in p.contribs])
        self.first = np.array([c.first for c in p.contribs])
        self.last = np.array([c.last for c in p.contribs])
        self.il = np.array([c.mem.value == "il" for c in p.contribs])
        self.X = np.stack([p.vectors[x.tables] for x in p.xcontribs]) if p.xcontribs else None
        self.F = np.stack([p.vectors[x.frags] for x in p.xcontribs]) if p.xcontribs else None
        self.xl = [x.lit for x in p.xcontribs]
        self.caps = {"memory": a.usable - a.support, "region1": a.region1, "region0": a.region0 - a.support,
                     "tables": a.table_budget, "fragments": a.fragment_limit}

    def _add(self, out: dict, lits, vals) -> None:
        for lit, v in zip(lits, vals):
            if v:
                out[lit] = out.get(lit, 0) + int(v)

    def row(self, kind: str, tile: int, step: int | None = None) -> Row:
        p, coef, xl = self.p, {}, self.xl
        if kind in ("memory", "region1"):
            live = (self.first <= step) & (step <= self.last) & (self.il if kind == "region1" else True)
            self._add(coef, [p.contribs[i].lit for i in np.flatnonzero(live)], self.D[live, tile])
        if self.X is not None and (kind == "tables" or (kind in ("memory", "region0") and p.acct.tables_in_memory)):
            self._add(coef, xl, self.X[:, tile])
        if kind == "fragments" and self.F is not None:
            self._add(coef, xl, self.F[:, tile])
        return Row(kind, tile, step, coef, self.caps[kind])


def groups(p: Problem) -> dict[str, list[tuple]]:
    """Exactly one literal of each: an op's implementations, an edge's (producer, consumer, mode) pairs."""
    out = {op: [("impl", op, i) for i in range(len(impls))] for op, impls in p.impls.items()}
    for e in p.edges:
        out[edge_name(e)] = [pr.lit for pr in e.pairs]
    return out


def edge_name(e) -> str:
    return f"{e.buf} -> {e.consumer}[{e.index}]"


def cheapest(p: Problem, row: Row, gs=None) -> tuple[int, list[dict]]:
    """The counting bound of a row and the group minima it is made of (largest first). A parameter's home
    is charged to the first op that may stage it: whichever of that op's candidates stages the parameter
    brings the home with it (it is live for the whole program), so the bound stays a lower bound."""
    homes: dict[tuple, list[str]] = {}
    for key, users in p.homes.items():
        first = users[0][0]
        for op, i in users:
            if op == first and row.coef.get(("home", key), 0):
                homes.setdefault(("impl", op, i), []).append(key)
    parts = []
    for name, g in (gs or groups(p)).items():
        vals = [row.coef.get(k, 0) + sum(row.coef[("home", h)] for h in homes.get(k, ())) for k in g]
        if not vals:  # an op without candidates: no selection at all (z3 proves it from the rules alone)
            continue
        j = int(np.argmin(vals))
        if vals[j]:
            label = _label(p, g[j]) + "".join(f" + home of {h}" for h in homes.get(g[j], ()))
            parts.append({"group": name, "cheapest": label, "bytes": int(vals[j])})
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
            add("region1", by[info[2]].rep, info[1])
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
    for key, users in p.homes.items():
        for op, i in users:
            yield "any", ("impl", op, i), [("home", key)]
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
    for key, users in p.homes.items():  # one op's staging implementations are exclusive: their sum <= home
        for op in dict.fromkeys(op for op, _ in users):
            c = {("impl", o, i): 1 for o, i in users if o == op}
            out.append((f"home:{key}:{op}", {**c, ("home", key): -1}, 0, False))
    return out


def farkas(p: Problem, rows: list[Row]):
    """LP relaxation with one elastic variable s on every row: min s. If s* > 0 its duals are Farkas weights.
    Returns (row weights, rule multipliers, exact margin) when the exact re-check holds, else None."""
    from scipy.optimize import linprog
    from scipy.sparse import lil_matrix

    rules = _structure(p)
    lits = sorted({k for r in rows for k in r.coef} | {k for _, c, _, _ in rules for k in c}, key=repr)
    col = {k: i for i, k in enumerate(lits)}
    n = len(lits) + 1
    ineq = [(r.coef, r.cap, True) for r in rows] + [(c, b, False) for _, c, b, eq in rules if not eq]
    eqs = [(c, b) for _, c, b, eq in rules if eq]
    A = lil_matrix((len(ineq), n))
    for i, (c, _, elastic) in enumerate(ineq):
        for k, v in c.items():
            A[i, col[k]] = v
        if elastic:
            A[i, n - 1] = -1
    E = lil_matrix((len(eqs), n))
    for i, (c, _) in enumerate(eqs):
        for k, v in c.items():
            E[i, col[k]] = v
    obj = np.zeros(n)
    obj[-1] = 1
    res = linprog(obj, A_ub=A.tocsr(), b_ub=[b for _, b, _ in ineq], A_eq=E.tocsr(), b_eq=[b for _, b in eqs],
                  bounds=[(0, 1)] * (n - 1) + [(0, None)], method="highs")
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
    margin = _exact_margin(rows, weights, rules, mult)
    return (weights, mult, margin) if margin > 0 else None


def _fewest_rows(p: Problem, rows: list[Row], keep: list[int], deadline: float):
    """Drop rows while the rest still has a Farkas certificate: at the end every row is needed (without any
    one of them the LP relaxation has a fractional solution, so no weights exist)."""
    def conflicts(trial: list[int]):
        if time.perf_counter() > deadline:
            return None
        return trial if farkas(p, [rows[j] for j in trial]) is not None else False

    keep, done = shrink(keep, conflicts, chunked=False)
    return keep, farkas(p, [rows[j] for j in keep]), done


def _exact_margin(rows: list[Row], weights, rules, mult) -> Fraction:
    c: dict = {}
    d = Fraction(0)
    for r, w in zip(rows, weights):
        for k, v in r.coef.items():
            c[k] = c.get(k, 0) + w * v
        d += w * r.cap
    for name, coefs, rhs, _ in rules:
        m = mult.get(name)
        if m:
            for k, v in coefs.items():
                c[k] = c.get(k, 0) + m * v
            d += m * rhs
    return sum((v for v in c.values() if v < 0), Fraction(0)) - d


def exact_core(p: Problem, rows: list[Row], seconds: float) -> tuple[list[int], bool] | None:
    """CP-SAT on the exact rows and the selection rules alone, one assumption literal per row: the rows it
    needs, shrunk by deletion until each is necessary (second value: the deletion finished). None: the rows
    do not conflict (or time ran out). A search aid; the certificate's proof is Farkas or z3."""
    deadline = time.perf_counter() + seconds
    keep = cpsat_conflicts(*_row_model(p, rows, range(len(rows))), deadline)(list(range(len(rows))))
    if keep is None or keep is False:
        return None
    # a smaller model for the deletion: only the rows still in question
    return shrink(keep, cpsat_conflicts(*_row_model(p, rows, keep), deadline))


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
        keys = [k for k, v in rows[i].coef.items() if v]
        m.Add(cp_model.LinearExpr.WeightedSum([b(k) for k in keys], [rows[i].coef[k] for k in keys])
              <= rows[i].cap).OnlyEnforceIf(guard[i])
    return m, guard


def z3_core(p: Problem, rows: list[Row], seconds: float, shrink_rows: bool = True) -> tuple[list[int], bool] | None:
    """Re-prove the rows with z3 over the full selection structure (ties included); each row behind an
    assumption, z3's unsat core is shrunk by deletion so that every remaining row is needed (second value:
    the deletion finished). None: not unsat."""
    import z3

    deadline = time.perf_counter() + seconds
    lits: dict = {}

    def b(k):
        if k not in lits:
            lits[k] = z3.Bool(repr(k))
        return lits[k]

    s = z3.Solver()
    for c in _clauses(p):
        if c[0] == "one":
            s.add(z3.PbEq([(b(k), 1) for k in c[1]], 1))
        elif c[0] == "any":
            s.add(z3.Implies(b(c[1]), z3.Or([b(k) for k in c[2]])))
        else:
            s.add(z3.Not(z3.And(b(c[1]), b(c[2]))))
    guard = [z3.Bool(f"row{i}") for i in range(len(rows))]
    for gi, r in zip(guard, rows):
        terms = [(b(k), v) for k, v in r.coef.items() if v]
        s.add(z3.Implies(gi, z3.PbLe(terms, r.cap) if terms else z3.BoolVal(r.cap >= 0)))

    def unsat(members: list[int]):
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        s.set("timeout", max(1, int(left * 1000)))
        res = s.check([guard[i] for i in members])
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


def machine_bound(p: Problem) -> dict:
    """Parameters plus the logical activation bytes live at the fullest program point, against every tile's
    usable bytes minus support: independent of the catalogue (it holds for any layout)."""
    a, T = p.acct, p.target.tiles
    params = sum(info.value.nbytes * info.count for info in p.sched.params.values())
    live = np.zeros(len(p.steps), np.int64)
    for buf in p.sched.buffers.values():
        if buf.producer:
            live[buf.first:buf.last + 1] += buf.value.nbytes
    step = int(np.argmax(live))
    need = params + int(live[step])
    have = T * (a.usable - a.support)
    return {"parameter_bytes": int(params), "live_activation_bytes": int(live[step]), "at": p.steps[step],
            "needs_bytes": need, "capacity_bytes": have, "proves": need > have}


def build_certificate(p: Problem, classes, core: list[Guard], seconds: float) -> dict:
    """The certificate body (without inputs and digest): scope, rows, kind and proof data. `kind` is None
    when no proof was found within `seconds` (the verdict then rests on CP-SAT alone, said so)."""
    t0 = time.perf_counter()
    cands = catalogue_records(p.impls)
    n = sum(len(v) for v in cands.values())
    body = {
        "scope": {"implementations": n, "per_op": {op: len(v) for op, v in cands.items()},
                  "catalogue_sha256": catalogue_digest(cands),
                  "statement": f"no combination of the {n} catalogued implementations of these "
                               f"{len(cands)} ops fits (a statement about this catalogue, not every layout)"},
        "candidates": cands, "machine": machine_bound(p), "core": [g.name for g in core],
    }
    rows = Rows(p)
    cand = rows_from_core(p, classes, core, rows)
    gs = groups(p)
    low = [cheapest(p, r, gs) for r in cand]
    best = max(range(len(cand)), key=lambda i: low[i][0] - cand[i].cap, default=None)
    if best is not None and low[best][0] > cand[best].cap:
        body.update(kind="counting", rows=[_row_doc(p, cand[best], low[best], 1)], rows_minimal=True)
        body["seconds"] = round(time.perf_counter() - t0, 3)
        return body

    def left() -> float:
        return max(1.0, seconds - (time.perf_counter() - t0))

    found = exact_core(p, cand, left() / 2)
    need, minimal = found if found else (list(range(len(cand))), False)
    sub = [cand[i] for i in need]
    if sub and farkas(p, sub) is not None:
        keep, (weights, mult, margin), done = _fewest_rows(p, cand, need, time.perf_counter() + left() / 2)
        body.update(kind="farkas", rows=[_row_doc(p, cand[i], low[i], w) for i, w in zip(keep, weights) if w > 0],
                    rows_minimal=done,
                    farkas={"rules": {k: str(v) for k, v in sorted(mult.items())}, "margin": str(margin),
                            "margin_float": float(margin)})
    elif found and (proof := z3_core(p, sub, left(), shrink_rows=not minimal)):
        body.update(kind="z3", rows=[_row_doc(p, sub[i], low[need[i]], None) for i in proof[0]],
                    rows_minimal=minimal or proof[1])
    else:
        body.update(kind=None, rows=[_row_doc(p, r, lw, None) for r, lw in zip(cand, low)], rows_minimal=False)
    body["seconds"] = round(time.perf_counter() - t0, 3)
    return body


def _row_doc(p: Problem, r: Row, low, weight) -> dict:
    d = {"name": r.name(p), "kind": r.kind, "tile": r.tile, "step": p.steps[r.step] if r.step is not None else None,
         "capacity": r.cap, "cheapest_bytes": low[0], "cheapest_by_group": low[1][:12]}
    if weight is not None:
        d["weight"] = str(weight)
    return d


def regenerate_catalogue(cert: dict) -> dict[str, list[dict]]:
    """This version's catalogue for a certificate's inputs: what its scope statement must refer to."""
    from ..model import build_graph, load_model
    from ..target import load_target
    from .catalogue import Ctx, build_catalogue
    from .schedule import build_schedule

    spec = load_model(cert["inputs"]["model"]["path"]).with_options(
        layers=cert["layers"], precision=cert["precision"], fuse_qkv=cert["fuse_qkv"])
    g = build_graph(spec, cert["batch"])
    return catalogue_records(build_catalogue(Ctx(load_target(cert["inputs"]["target"]["path"]), build_schedule(g),
                                                 cert["batch"])))
