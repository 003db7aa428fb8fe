"""The certificate scan's case split on one instance, alone: how many Farkas attempts it needs, how long it takes,
and whether it proves the instance, with the cases of an op tried in index order and likeliest-to-escape first.

The problem is built as `ipuplan solve MODEL --batch B --catalogue C` builds it (relays off, no headroom, the
modeled support); then `_split_proof` of `ipuplan/solver/certificate.py` runs with the wall clock unbounded, so
only its deterministic cap (`split.MAX_PROOFS` attempts) stops it. "index order" passes no order to the search,
which then tries every op's implementations 0..n-1. A found split is re-proved by the certificate checker's own
split code before it is reported.

Usage: python bench/split_search.py MODEL --batch B [--catalogue compact] [--orders fewest-bytes,index] [--rows 200]
[--depth 2]
`--rows` and `--depth` replace `certificate.SCAN_ROWS` (the tightest rows each case is proven over) and
`split.MAX_DEPTH` (ops fixed along one path) for this run: what a stronger case proof would find, and its cost.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--catalogue", default="compact")
    ap.add_argument("--orders", default="fewest-bytes,index")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--depth", type=int, default=None)
    a = ap.parse_args()
    import ipuplan.solver.certificate as C
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver import split
    from ipuplan.solver.budget import Budget
    from ipuplan.solver.classes import problem_classes
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target

    C.SCAN_ROWS = a.rows or C.SCAN_ROWS
    split.MAX_DEPTH = a.depth or split.MAX_DEPTH
    print(f"# split search: {a.model} batch {a.batch}, {a.catalogue} catalogue; "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"{os.cpu_count()} cores; cap {split.MAX_PROOFS} attempts, depth {split.MAX_DEPTH}, "
          f"{C.SCAN_ROWS} rows per case")
    t0 = time.perf_counter()
    p = build_problem(build_graph(load_model(a.model), a.batch), load_target("targets/c600.yaml"), a.batch, None,
                      False, None, 0, Catalogue(a.catalogue))
    classes = problem_classes(p)
    print(f"problem built in {time.perf_counter() - t0:.1f} s: {sum(len(v) for v in p.impls.values())} "
          f"implementations of {len(p.impls)} ops, {len(classes)} tile classes")
    search = split.search
    farkas = C.farkas
    for name in a.orders.split(","):
        calls = [0]

        def counted(*args, **kw):
            calls[0] += 1
            return farkas(*args, **kw)

        def searched(ops, prove, stop, order=None):
            return search(ops, prove, stop, order if name == "fewest-bytes" else None)

        C.farkas, split.search = counted, searched
        try:
            t = time.perf_counter()
            body = C._split_proof(p, classes, C.Rows(p), C.groups(p), Budget.start(1e9, 1e9))
            took = time.perf_counter() - t
        finally:
            C.farkas, split.search = farkas, search
        if body is None:
            print(f"{name:>12}: no split within {calls[0]} attempts, {took:.1f} s")
            continue
        cases = sum(1 for _ in _leaves(body["split"]))
        t = time.perf_counter()
        rechecked = _recheck(a, body)
        print(f"{name:>12}: split on {body['split']['op']}, {cases} cases over {len(body['rows'])} rows, "
              f"{calls[0]} attempts, {took:.1f} s; {rechecked} in {time.perf_counter() - t:.1f} s (its own "
              "instance rebuilt)")


def _leaves(node):
    for c in node["cases"]:
        yield from (_leaves(c["split"]) if "split" in c else [c])


def _recheck(a, body) -> str:
    """The split re-proved by the certificate checker's own code on the instance it rebuilds."""
    from ipuplan.catalogue.records import regenerate_catalogue
    from ipuplan.checker.plan import CheckReport, Limits, steps_of
    from ipuplan.checker.rows import cheapest, row_terms
    from ipuplan.checker.space import build_space
    from ipuplan.checker.split import check_split
    from ipuplan.model import build_graph, load_model
    from ipuplan.target import load_target
    g, target = build_graph(load_model(a.model), a.batch), load_target("targets/c600.yaml")
    cands = regenerate_catalogue(g, target, a.batch, a.catalogue)
    sp = build_space(g, target, a.batch, cands, relays=False, where="bench", whole_rows=a.catalogue != "grid",
                     compact=a.catalogue == "compact", steps=steps_of(a.catalogue))
    lim = Limits.derive(target, {"support_reserve": None, "relays": False, "exchange_table_budget": None,
                                 "headroom": 0, "catalogue": a.catalogue}, [o.op.kind for o in sp.prog.ops], "bench")
    steps = {s: i for i, s in enumerate(sp.prog.steps)}
    rows = []
    for r in body["rows"]:
        coef, tcoef, cap = row_terms(sp, lim, r["kind"], r["tile"], steps.get(r["step"]))
        rows.append((r, coef, tcoef, cap, cheapest(sp, lim, coef, tcoef)))
    rep = CheckReport()
    check_split(rep, sp, rows, body["split"])
    return "re-proved by the checker" if rep.ok else f"NOT re-proved: {rep.violations[0]}"


if __name__ == "__main__":
    main()
