"""Verify an INFEASIBLE certificate from model + target alone: rebuild every candidate's bytes with the
checker's rules, recompute each row the certificate names, then re-prove it (counting bound, Farkas
weights checked with exact fractions, or z3). Nothing numeric in the certificate is trusted."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

import numpy as np

from .plan import CheckReport, Limits, load_inputs
from .space import Space, build_space

FORMAT = "ipuplan-certificate/1"
KINDS = ("counting", "farkas", "z3")
ROW_KINDS = ("memory", "region1", "region0", "tables", "fragments")


def digest(cert: dict) -> str:
    """sha256 of the certificate's canonical JSON without its own digest field."""
    body = {k: v for k, v in cert.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def catalogue_digest(candidates: dict) -> str:
    return hashlib.sha256(json.dumps(candidates, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def row_terms(sp: Space, lim: Limits, kind: str, tile: int, step: int | None) -> tuple[np.ndarray, int]:
    """(bytes or fragments each literal puts into the row, the row's capacity) for one tile and step."""
    D, lit, first, last, is_il, X, F, xl = sp.arrays
    coef = np.zeros(len(sp.lits), np.int64)
    if kind in ("memory", "region1"):
        live = (first <= step) & (step <= last)
        if kind == "region1":
            live &= is_il
        np.add.at(coef, lit[live], D[live, tile])
        if kind == "memory" and lim.tables_in_memory:
            np.add.at(coef, xl, X[:, tile])
        return coef, (lim.usable - lim.support if kind == "memory" else lim.region1)
    if kind == "region0":
        if lim.tables_in_memory:
            np.add.at(coef, xl, X[:, tile])
        return coef, lim.region0 - lim.support
    if kind == "tables":
        np.add.at(coef, xl, X[:, tile])
        return coef, lim.table_budget
    np.add.at(coef, xl, F[:, tile])
    return coef, lim.fragment_limit


def cheapest(sp: Space, coef: np.ndarray) -> int:
    """The counting bound: every group's cheapest literal, a parameter's home added to the candidates of the
    first op that may stage it (any of them chosen brings the home, live throughout)."""
    idx = sp.index
    first: dict[tuple, str] = {}
    extra: dict[tuple, int] = {}
    for u, h in sp.implies:
        first.setdefault(h, u[1])
        if first[h] == u[1]:
            extra[u] = extra.get(u, 0) + int(coef[idx[h]])
    return int(sum(min(int(coef[idx[k]]) + extra.get(k, 0) for k in g) for g in sp.groups.values() if g))


def structure(sp: Space) -> dict[str, tuple[dict[int, int], int, bool]]:
    """The selection rules as named linear constraints: name -> (coefficients, rhs, is_equality).
    one:<group>: one literal per group; src:<edge>:<a> / dst:<edge>:<b>: an edge's pairs follow its producer's
    and consumer's choices; home:<param>:<op>: the op's candidates that stage the parameter imply its home."""
    idx = sp.index
    out: dict[str, tuple[dict[int, int], int, bool]] = {}
    for name, g in sp.groups.items():
        out[f"one:{name}"] = ({idx[k]: 1 for k in g}, 1, True)
    for name, (prod, cons, _, src_of, dst_of) in sp.ends.items():
        pairs = sp.groups[name]
        for side, op, of, pos in (("src", prod, src_of, 3), ("dst", cons, dst_of, 4)):
            for a in sorted(set(of)):
                c = {idx[k]: 1 for k in pairs if k[pos] == a}
                for i, s in enumerate(of):
                    if s == a:
                        c[idx[("impl", op, i)]] = c.get(idx[("impl", op, i)], 0) - 1
                out[f"{side}:{name}:{a}"] = (c, 0, True)
    for u, h in sp.implies:  # an op's staging candidates are exclusive, so together they imply the home
        c = out.setdefault(f"home:{h[1]}:{u[1]}", ({idx[h]: -1}, 0, False))[0]
        c[idx[u]] = 1
    return out


def _frac(s) -> Fraction:
    return Fraction(str(s))


def check_certificate(cert: dict, catalogue: dict | None = None, z3_seconds: float = 120.0) -> CheckReport:
    """Re-prove `cert`. `catalogue`, when given, is the implementation catalogue regenerated for the same
    inputs; the certificate's candidates must equal it for its scope statement to hold."""
    rep = CheckReport()
    if cert.get("format") != FORMAT or cert.get("verdict") != "INFEASIBLE":
        rep.fail(f"not an INFEASIBLE certificate of format {FORMAT}")
        return rep
    if cert.get("digest") != digest(cert):
        rep.fail("certificate edited after it was written (digest mismatch)")
    loaded = load_inputs(cert, rep, "certificate")
    if loaded is None:
        return rep
    g, target = loaded
    cands = cert["candidates"]
    scope = cert["scope"]
    n = sum(len(v) for v in cands.values())
    if catalogue_digest(cands) != scope["catalogue_sha256"] or n != scope["implementations"]:
        rep.fail(f"candidates ({n}) do not match the stated scope ({scope['implementations']} implementations)")
        return rep
    if catalogue is not None and catalogue_digest(catalogue) != scope["catalogue_sha256"]:
        rep.fail("the certificate's candidates are not this version's catalogue for these inputs")
        return rep
    try:
        sp = build_space(g, target, cert["batch"], cands, relays=cert["options"]["relays"])
    except ValueError as e:
        rep.fail(f"candidates: {e}")
        return rep
    lim = Limits.derive(target, cert["options"], len(sp.prog.ops))
    steps = {s: i for i, s in enumerate(sp.prog.steps)}
    rows = []
    for r in cert["rows"]:
        if r["kind"] not in ROW_KINDS or not 0 <= r["tile"] < target.tiles:
            rep.fail(f"row {r.get('name')}: unknown kind or tile")
            return rep
        step = None
        if r["kind"] in ("memory", "region1"):
            if r.get("step") not in steps:
                rep.fail(f"row {r['name']}: unknown program point {r.get('step')!r}")
                return rep
            step = steps[r["step"]]
        coef, cap = row_terms(sp, lim, r["kind"], r["tile"], step)
        low = cheapest(sp, coef)
        if (cap, low) != (r["capacity"], r["cheapest_bytes"]):
            rep.fail(f"row {r['name']}: certificate says capacity {r['capacity']:,}, cheapest {r['cheapest_bytes']:,}; "
                     f"recomputed {cap:,}, {low:,}")
        rows.append((r, coef, cap, low))
    if not rows and cert["kind"] != "z3":
        rep.fail("the certificate names no rows (only a z3 proof may rest on the selection rules alone)")
    if not rep.ok:
        return rep
    kind = cert["kind"]
    if kind == "counting":
        r, coef, cap, low = rows[0]
        if len(rows) != 1 or low <= cap:
            rep.fail(f"counting bound does not hold: cheapest {low:,} <= capacity {cap:,} on {r['name']}")
        else:
            rep.lines.append(f"counting: {r['name']}: the cheapest choice of every op, with the parameter homes it "
                             f"brings, needs {low:,} > {cap:,}")
    elif kind == "farkas":
        _check_farkas(rep, sp, rows, cert["farkas"])
    elif kind == "z3":
        _check_z3(rep, sp, rows, z3_seconds)
    else:
        rep.fail(f"unknown certificate kind {kind!r}; valid: {', '.join(KINDS)}")
    m = machine_bound(sp, g, target, lim)
    if m != cert.get("machine"):
        rep.fail(f"machine statement differs from the recomputed one ({m})")
    if rep.ok:
        o = cert["options"]
        rep.lines.append(f"scope: {scope['statement']}; relays {'on' if o['relays'] else 'off'}, table budget "
                         f"{lim.table_budget:,} B, {'seeds' if o.get('support_reserve') is not None else 'modeled'} "
                         f"accounting, usable {lim.usable:,} B per tile")
        rep.lines.append(f"verified {len(rows)} rows over {len(sp.lits)} literals on all {target.tiles} tiles")
    return rep


def _check_farkas(rep: CheckReport, sp: Space, rows, f: dict) -> None:
    """sum(w_r * row_r) + sum(m_s * rule_s) gives c.x <= d for every plan; min over 0 <= x <= 1 of c.x > d."""
    c = [Fraction(0)] * len(sp.lits)
    d = Fraction(0)
    for r, coef, cap, _ in rows:
        w = _frac(r["weight"])
        if w < 0:
            rep.fail(f"row {r['name']}: negative weight {w}")
            return
        for i in np.flatnonzero(coef):
            c[i] += w * int(coef[i])
        d += w * cap
    rules = structure(sp)
    for name, m in f["rules"].items():
        if name not in rules:
            rep.fail(f"farkas: no selection rule named {name!r}")
            return
        coefs, rhs, eq = rules[name]
        m = _frac(m)
        if m < 0 and not eq:
            rep.fail(f"farkas: negative multiplier on inequality {name}")
            return
        for i, v in coefs.items():
            c[i] += m * v
        d += m * rhs
    low = sum((x for x in c if x < 0), Fraction(0))
    if low <= d:
        rep.fail(f"farkas: the weighted rows admit a fractional selection (min {float(low):.6g} <= {float(d):.6g})")
        return
    rep.lines.append(f"farkas: {len(rows)} weighted rows and {len(f['rules'])} selection rules: every selection, even "
                     f"fractional, exceeds the weighted capacity by at least {float(low - d):,.3f} (exact fractions)")


def _check_z3(rep: CheckReport, sp: Space, rows, seconds: float) -> None:
    import z3

    x = [z3.Bool(f"l{i}") for i in range(len(sp.lits))]
    idx = sp.index
    s = z3.Solver()
    s.set("timeout", int(seconds * 1000))
    for g in sp.groups.values():
        s.add(z3.PbEq([(x[idx[k]], 1) for k in g], 1))
    for name, (prod, cons, _, src_of, dst_of) in sp.ends.items():
        for k in sp.groups[name]:
            s.add(z3.Implies(x[idx[k]], z3.Or([x[idx[("impl", prod, i)]] for i, a in enumerate(src_of) if a == k[3]])))
            s.add(z3.Implies(x[idx[k]], z3.Or([x[idx[("impl", cons, j)]] for j, b in enumerate(dst_of) if b == k[4]])))
    for u, h in sp.implies:
        s.add(z3.Implies(x[idx[u]], x[idx[h]]))
    for a, b in sp.conflicts:
        s.add(z3.Not(z3.And(x[idx[a]], x[idx[b]])))
    for r, coef, cap, _ in rows:
        nz = np.flatnonzero(coef)
        s.add(z3.PbLe([(x[i], int(coef[i])) for i in nz], cap) if len(nz) else z3.BoolVal(cap >= 0))
    res = s.check()
    if res != z3.unsat:
        rep.fail(f"z3: the rows are {res} (a certificate needs unsat)")
        return
    rep.lines.append(f"z3: no selection satisfies the {len(rows)} rows (unsat)")


def machine_bound(sp: Space, g, target, lim: Limits) -> dict:
    """Catalogue-independent: parameters plus the logical bytes live at the fullest program point, against
    all tiles' usable bytes minus support. A statement about the machine and this op order, not about layouts."""
    params = sum(v.nbytes * count for v, count in sp.prog.params.values())
    live = np.zeros(sp.prog.nsteps, np.int64)
    for o in sp.prog.ops:
        live[o.c:sp.prog.last[o.key] + 1] += o.graph.value(o.op.outputs[0]).nbytes
    step = int(np.argmax(live))
    need = params + int(live[step])
    have = target.tiles * (lim.usable - lim.support)
    return {"parameter_bytes": int(params), "live_activation_bytes": int(live[step]),
            "at": sp.prog.steps[step], "needs_bytes": need, "capacity_bytes": have, "proves": need > have}
