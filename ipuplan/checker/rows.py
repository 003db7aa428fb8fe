"""Re-prove a catalogue certificate's rows (counting bound, Farkas weights with exact fractions, a split whose cases
each have Farkas weights, or z3) on an instance's graph with the checker's own catalogue, rules and byte counts: as
written, or lifted to another instance (a pipeline stage with more layers). Shared by the single-chip and the
pipeline certificate checks."""

from __future__ import annotations

import numpy as np

from ..catalogue.records import regenerate_catalogue
from ..formats import CERTIFICATE as FORMAT
from ..formats import catalogue_digest, digest
from .farkas import farkas_bound
from .machine import machine_statement
from .plan import CheckReport, Limits, catalogue_of, load_inputs, steps_of
from .space import Space, build_space
from .split import check_split
from .validate import Invalid, get, one_of

ROW_KINDS = ("memory", "region1", "region0", "tables", "fragments")
PROOFS = ("counting", "farkas", "z3", "split")  # proofs over named rows: re-provable on a lifted instance too


def least_room(sp: Space, lim: Limits) -> np.ndarray | None:
    """[tiles] region 0 less the support and the allocation of each tile's least exchange tables (the sum of every
    group's cheapest): no selection leaves a standard buffer more of region 0 than this, and standard data never
    straddles the region boundary, so a larger one is in region 1. None without regions (the seeds' flat space)."""
    if not lim.tables_in_memory:
        return None
    X, xl = sp.arrays[5], sp.arrays[7]
    least = np.zeros(sp.tiles, np.int64)
    if len(xl):
        has, at = np.unique(xl, return_inverse=True)
        per = np.zeros((len(has), X.shape[1]), np.int64)
        np.add.at(per, at.ravel(), X)
        row = {int(k): i for i, k in enumerate(has)}
        for g in sp.groups.values():
            ids = [row.get(sp.index[k]) for k in g]
            if ids and None not in ids:
                least += per[ids].min(0)
    return lim.region0 - lim.support - lim.table_alloc(least)


def row_terms(sp: Space, lim: Limits, kind: str, tile: int, step: int | None, room: np.ndarray | None = None):
    """(data coefficients, table coefficients, capacity) of one tile's row: the row holds when
    data . x + alloc(tables . x) <= capacity, alloc the whole region-0 elements the tables occupy (with the
    fetch guard; nothing for no tables). Only memory and region-0 rows hold tables in memory. A region-1 row holds
    the interleaved data and every standard buffer larger than the tile's `room` (`least_room`)."""
    D, lit, first, last, is_il, X, F, xl = sp.arrays
    coef = np.zeros(len(sp.lits), np.int64)
    tcoef = np.zeros(len(sp.lits), np.int64)
    if kind in ("memory", "region0") and lim.tables_in_memory:
        np.add.at(tcoef if lim.table_element else coef, xl, X[:, tile])
    if kind in ("memory", "region1"):
        live = (first <= step) & (step <= last)
        if kind == "region1":
            live &= is_il if room is None else is_il | (D[:, tile] > room[tile])
        np.add.at(coef, lit[live], D[live, tile])
        return coef, tcoef, (lim.capacity if kind == "memory" else lim.region1)
    if kind == "region0":
        return coef, tcoef, lim.region0 - lim.support
    if kind == "tables":
        np.add.at(coef, xl, X[:, tile])
        return coef, tcoef, lim.table_budget
    np.add.at(coef, xl, F[:, tile])
    return coef, tcoef, lim.fragment_limit


def cheapest(sp: Space, lim: Limits, coef: np.ndarray, tcoef: np.ndarray) -> int:
    """The counting bound: every group's cheapest data bytes, plus the allocation of every group's cheapest
    tables (the allocation grows with the tables)."""
    idx = sp.index
    gs = [g for g in sp.groups.values() if g]
    data = sum(min(int(coef[idx[k]]) for k in g) for g in gs)
    tables = sum(min(int(tcoef[idx[k]]) for k in g) for g in gs)
    return int(data + lim.table_alloc(np.array([tables]))[0])


def load_certificate(cert: dict, rep: CheckReport, base=None):
    """The graph and target a certificate names, or None (with the violation): its format, digest and inputs."""
    W = "certificate.json"
    if not isinstance(cert, dict) or cert.get("format") != FORMAT or cert.get("verdict") != "INFEASIBLE":
        rep.fail(f"{W}: not an INFEASIBLE certificate of format {FORMAT}")
        return None
    if cert.get("digest") != digest(cert):
        rep.fail("certificate edited after it was written (digest mismatch)")
    return load_inputs(cert, rep, W, base)


def check_rows_certificate(cert: dict, z3_rlimit: int, base=None) -> CheckReport:
    """A counting, Farkas, split or z3 certificate checked as written: format, digest, the instance it names, its
    rows."""
    rep = CheckReport()
    try:
        loaded = load_certificate(cert, rep, base)
        if loaded is not None:
            prove_rows(cert, loaded[0], loaded[1], rep, z3_rlimit)
    except Invalid as e:
        rep.fail(str(e))
    return rep


def prove_rows(cert: dict, g, target, rep: CheckReport, z3_rlimit: int, lifted: bool = False) -> None:
    """Re-prove a counting, Farkas, split or z3 certificate's rows on graph `g`. `lifted`: `g` is another instance than
    the one the certificate was written for (a stage with more layers); the candidates are then this instance's
    own catalogue and the rows' recorded numbers are not compared, only re-proved: the rows are named by tile and
    program point, the Farkas weights by row and selection rule."""
    W = "certificate.json"
    kind = one_of(cert, "kind", W, PROOFS)
    options = get(cert, "options", W)
    scope = get(cert, "scope", W)
    kind_of_catalogue = catalogue_of(options, W) if isinstance(options, dict) else "grid"
    regenerated = regenerate_catalogue(g, target, cert["batch"], kind_of_catalogue)
    cands = regenerated if lifted else get(cert, "candidates", W)
    if not lifted and (catalogue_digest(regenerated) != scope.get("catalogue_sha256") or catalogue_digest(cands) !=
                       scope.get("catalogue_sha256")):
        rep.fail("the certificate's candidates are not this version's catalogue for this instance")
        return
    sp = build_space(g, target, cert["batch"], cands, relays=get(options, "relays", f"{W}.options"),
                     where=f"{W}: candidates", whole_rows=kind_of_catalogue != "grid",
                     compact=kind_of_catalogue == "compact", steps=steps_of(kind_of_catalogue))
    lim = Limits.derive(target, options, [o.op.kind for o in sp.prog.ops], W)
    steps = {s_: i for i, s_ in enumerate(sp.prog.steps)}
    rows, room = [], least_room(sp, lim)
    for r in get(cert, "rows", W):
        if not isinstance(r, dict) or r.get("kind") not in ROW_KINDS or not isinstance(r.get("tile"), int) \
                or not 0 <= r["tile"] < target.tiles:
            rep.fail(f"row {r.get('name') if isinstance(r, dict) else r!r}: unknown kind or tile")
            return
        step = None
        if r["kind"] in ("memory", "region1"):
            if r.get("step") not in steps:
                rep.fail(f"row {r['name']}: unknown program point {r.get('step')!r}")
                return
            step = steps[r["step"]]
        coef, tcoef, cap = row_terms(sp, lim, r["kind"], r["tile"], step, room)
        low = cheapest(sp, lim, coef, tcoef)
        if not lifted and (cap, low) != (r.get("capacity"), r.get("cheapest_bytes")):
            rep.fail(f"row {r['name']}: certificate says capacity {r.get('capacity')}, cheapest "
                     f"{r.get('cheapest_bytes')}; recomputed {cap:,}, {low:,}")
        rows.append((r, coef, tcoef, cap, low))
    if not rows and kind != "z3":
        rep.fail("the certificate names no rows (only a z3 proof may rest on the selection rules alone)")
    if not rep.ok:
        return
    if kind == "counting":
        r, coef, tcoef, cap, low = rows[0]
        if len(rows) != 1 or low <= cap:
            rep.fail(f"counting bound does not hold: cheapest {low:,} <= capacity {cap:,} on {r['name']}")
        else:
            rep.lines.append(f"counting: {r['name']}: the cheapest choice of every op needs {low:,} > {cap:,}")
    elif kind == "farkas":
        _check_farkas(rep, sp, rows, get(cert, "farkas", W))
    elif kind == "split":
        check_split(rep, sp, rows, get(cert, "split", W))
    else:
        _check_z3(rep, sp, lim, rows, z3_rlimit)
    if lifted:
        return
    m = machine_statement(g, target, options.get("support_reserve"))
    if m != cert.get("machine"):
        rep.fail(f"machine statement differs from the recomputed one ({m})")
    if rep.ok:
        rep.lines.append(f"scope: {scope.get('statement')}; relays {'on' if options['relays'] else 'off'}, table "
                         f"budget {lim.table_budget:,} B, {'seeds' if options.get('support_reserve') is not None else 'modeled'} "
                         f"accounting, capacity {lim.capacity:,} B per tile")
        rep.lines.append(f"verified {len(rows)} rows over {len(sp.lits)} literals on all {target.tiles} tiles")


def _check_farkas(rep: CheckReport, sp: Space, rows, f: dict) -> None:
    """sum(w_r * row_r) + sum(m_s * rule_s) gives c.x <= d for every plan; min over 0 <= x <= 1 of c.x > d."""
    try:
        low, d = farkas_bound(sp, rows, [r.get("weight") for r, *_ in rows], f["rules"])
    except Invalid as e:
        rep.fail(str(e))
        return
    if low <= d:
        rep.fail(f"farkas: the weighted rows admit a fractional selection (min {float(low):.6g} <= {float(d):.6g})")
        return
    rep.lines.append(f"farkas: {len(rows)} weighted rows and {len(f['rules'])} selection rules: every selection, even "
                     f"fractional, exceeds the weighted capacity by at least {float(low - d):,.3f} (exact fractions)")


def _check_z3(rep: CheckReport, sp: Space, lim: Limits, rows, rlimit: int) -> None:
    import z3

    x = [z3.Bool(f"l{i}") for i in range(len(sp.lits))]
    idx = sp.index
    s = z3.SolverFor("QF_FD")  # finite-domain SAT + pseudo-Boolean engine: fast on these rows
    s.set("rlimit", rlimit)
    for g in sp.groups.values():
        s.add(z3.PbEq([(x[idx[k]], 1) for k in g], 1))
    for name, (prod, cons, _, src_of, dst_of) in sp.ends.items():
        for k in sp.groups[name]:
            s.add(z3.Implies(x[idx[k]], z3.Or([x[idx[("impl", prod, i)]] for i, a in enumerate(src_of) if a == k[3]])))
            s.add(z3.Implies(x[idx[k]], z3.Or([x[idx[("impl", cons, j)]] for j, b in enumerate(dst_of) if b == k[4]])))
    for a, b in sp.conflicts:
        s.add(z3.Not(z3.And(x[idx[a]], x[idx[b]])))
    for n, (r, coef, tcoef, cap, _) in enumerate(rows):
        nz = np.flatnonzero(coef)
        if not tcoef.any():
            s.add(z3.PbLe([(x[i], int(coef[i])) for i in nz], cap) if len(nz) else z3.BoolVal(cap >= 0))
            continue
        # the tables' whole elements as ordered literals e_1 >= e_2 >= ...: tables + guard <= element * sum(e)
        # whenever any table literal is chosen, data + element * sum(e) <= capacity
        tz = np.flatnonzero(tcoef)
        el = lim.table_element
        used = z3.Bool(f"used{n}")
        e = [z3.Bool(f"e{n}_{j}") for j in range(-(-(int(tcoef[tz].sum()) + lim.table_guard) // el))]
        s.add(*[z3.Implies(x[i], used) for i in tz], *[z3.Implies(e[j + 1], e[j]) for j in range(len(e) - 1)])
        s.add(z3.PbLe([(x[i], int(tcoef[i])) for i in tz] + [(used, lim.table_guard)] + [(z3.Not(v), el) for v in e],
                      el * len(e)))
        s.add(z3.PbLe([(x[i], int(coef[i])) for i in nz] + [(v, el) for v in e], cap))
    res = s.check()
    if res != z3.unsat:
        rep.fail(f"z3: the rows are {res} (a certificate needs unsat)")
        return
    rep.lines.append(f"z3: no selection satisfies the {len(rows)} rows (unsat)")
