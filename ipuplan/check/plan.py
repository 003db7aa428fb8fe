"""Re-derive a plan's buffers from model + target + recorded choices, and verify every memory limit.

Written apart from ipuplan.solver on purpose: its own schedule walk, its own per-kind buffer rules
(ipuplan/check/rules.py) and its own byte counts (ipuplan/check/tiles.py). Only the IR, the loaders
and the codelets' scratch figures are shared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..model import build_graph, load_model
from ..plan import FORMAT, region_usage, sha256
from ..target import load_target
from .space import build_space


@dataclass
class CheckReport:
    ok: bool = True
    violations: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def fail(self, msg: str) -> None:
        self.ok = False
        self.violations.append(msg)
        self.lines.append("VIOLATION " + msg)


@dataclass(frozen=True)
class Limits:
    """Per-tile capacities as the checker derives them from the target and the recorded options."""

    usable: int
    support: int
    region0: int
    region1: int
    table_budget: int
    fragment_limit: int
    tables_in_memory: bool

    @classmethod
    def derive(cls, target, options: dict, nops: int) -> "Limits":
        reserve = options.get("support_reserve")
        budget = options.get("exchange_table_budget")
        budget = target.exchange_table_bytes_max if budget is None else budget
        if reserve is not None:
            return cls(target.seeds_planned_data_bytes, reserve, target.region0_bytes, target.region1_usable_bytes,
                       budget, target.exchange_fragments_max, False)
        return cls(target.usable_bytes, target.code_bytes + target.superstep_bytes * nops, target.region0_bytes,
                   target.region1_usable_bytes, budget, target.exchange_fragments_max, True)


def load_inputs(doc: dict, rep: CheckReport, what: str):
    """The graph and target a plan or certificate (`what`) was made for, or None (and a violation) when either
    file changed since; a missing file is bad input."""
    for kind in ("model", "target"):
        p = doc["inputs"][kind]["path"]
        if not Path(p).exists():
            raise InputError(p, None, f"the {what}'s {kind} file is missing", "run check where solve ran")
        if sha256(p) != doc["inputs"][kind]["sha256"]:
            rep.fail(f"{kind} file {p} differs from the one the {what} was made for (sha256 mismatch)")
    if not rep.ok:
        return None
    spec = load_model(doc["inputs"]["model"]["path"]).with_options(
        layers=doc["layers"], precision=doc["precision"], fuse_qkv=doc["fuse_qkv"])
    return build_graph(spec, doc["batch"]), load_target(doc["inputs"]["target"]["path"])


def check_dir(d: Path) -> CheckReport:
    path = d / "plan.json"
    if not path.exists():
        raise InputError(str(d), None, "no plan.json here", "pass the directory `ipuplan solve -o` wrote for a FIT")
    try:
        plan = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(path), None, f"not valid JSON ({e})", "re-run ipuplan solve") from None
    return check_plan(plan)


def check_plan(plan: dict) -> CheckReport:
    rep = CheckReport()
    if plan.get("format") != FORMAT or plan.get("verdict") != "FIT":
        rep.fail(f"not a FIT plan of format {FORMAT}")
        return rep
    loaded = load_inputs(plan, rep, "plan")
    if loaded is None:
        return rep
    g, target = loaded
    batch = plan["batch"]
    T = target.tiles
    try:
        sp = build_space(g, target, batch, {k: [v] for k, v in plan["choices"].items()}, relays=True)
    except ValueError as e:
        rep.fail(str(e))
        return rep
    ops, nsteps = sp.prog.ops, sp.prog.nsteps
    relays = {(r["buffer"], r["consumer"], r["input"]) for r in plan.get("exchange", {}).get("relays", [])}
    chosen = {("impl", o.key, 0) for o in ops}
    for name, (prod, cons, idx, _, _) in sp.ends.items():
        group = sp.groups[name]
        if ("pair", cons, idx, 0, 0, "none") in group:
            chosen.add(("pair", cons, idx, 0, 0, "none"))
            continue
        mode = "relay" if (prod, cons, idx) in relays else "direct"
        if ("pair", cons, idx, 0, 0, mode) not in group:
            rep.fail(f"relay for {prod} -> {cons} but its destination is not replicated")
            return rep
        chosen.add(("pair", cons, idx, 0, 0, mode))
    chosen |= {h for u, h in sp.implies if u in chosen}
    for a, b in sp.conflicts:
        rep.fail(f"carried value {a[1]} and body result {b[1]} have different layouts")
    sel = np.array([k in chosen for k in sp.lits], bool)
    D, lit, first, last, is_il, X, F, xl = sp.arrays
    std = np.zeros((nsteps, T), np.int64)
    il = np.zeros((nsteps, T), np.int64)
    for k in np.flatnonzero(sel[lit]):
        (il if is_il[k] else std)[first[k]:last[k] + 1] += D[k]
    tables = X[sel[xl]].sum(0) if len(xl) else np.zeros(T, np.int64)
    frags = F[sel[xl]].sum(0) if len(xl) else np.zeros(T, np.int64)

    acc = plan["accounting"]
    usable, support = acc["usable_bytes"], acc["support_bytes"]
    lim = Limits.derive(target, plan["options"], len(ops))
    seeds = not lim.tables_in_memory
    if (usable, support, acc["mode"]) != (lim.usable, lim.support, "seeds" if seeds else "modeled"):
        rep.fail(f"accounting {acc['mode']} does not follow from the target (usable {usable}, support {support})")
    budget = lim.table_budget
    r0cap, r1cap = lim.region0, lim.region1
    steps = sp.prog.steps
    resident = 0 if seeds else tables[None, :]
    total = std + il + support + resident
    for name, arr, cap in (("exchange[tables]", tables, budget), ("exchange[fragments]", frags,
                                                                  target.exchange_fragments_max)):
        if arr.max() > cap:
            t = int(np.argmax(arr))
            rep.fail(f"{name}[tile {t}]: {int(arr[t]):,} > {cap:,}")
    x = plan.get("exchange", {})
    if x.get("tables", {}).get("bytes") != int(tables.max()) or x.get("fragments", {}).get("count") != int(frags.max()):
        rep.fail(f"exchange: plan says {x.get('tables', {}).get('bytes')} B / {x.get('fragments', {}).get('count')} "
                 f"fragments, recomputed {int(tables.max()):,} B / {int(frags.max()):,}")
    else:
        rep.lines.append(f"exchange tables {int(tables.max()):>9,} B  tile {int(np.argmax(tables)):>4}  (limit {budget:,}); "
                         f"fragments {int(frags.max()):,} tile {int(np.argmax(frags))} (limit "
                         f"{target.exchange_fragments_max:,})")
    region0_fixed = support + (0 if seeds else int(tables.max()))
    if region0_fixed > r0cap:
        rep.fail(f"region0: code + tables {region0_fixed:,} B exceed region 0 ({r0cap:,} B)")
    for name, arr, cap in (("memory", total, usable), ("region1[interleaved]", il, r1cap)):
        over = np.argwhere(arr > cap)
        if len(over):
            t, tile = over[np.argmax(arr[tuple(over.T)])]
            rep.fail(f"{name}[point={steps[t]}, tile {tile}]: {int(arr[t, tile]):,} B > {cap:,} B "
                     f"({len(over)} tile-steps over)")
    r0, r1 = region_usage(std, il, support + resident, r0cap)
    for k, arr in (("total", total), ("interleaved", il), ("standard", std), ("region0", r0), ("region1", r1)):
        t, tile = np.unravel_index(int(np.argmax(arr)), arr.shape)
        got = {"bytes": int(arr[t, tile]), "tile": int(tile), "step": steps[t]}
        rec = plan["peaks"].get(k)
        if rec is None or rec["bytes"] != got["bytes"]:
            rep.fail(f"peaks.{k}: plan says {rec and rec['bytes']:,} B, recomputed {got['bytes']:,} B "
                     f"(tile {got['tile']}, {got['step']})")
        else:
            rep.lines.append(f"peak {k:<11} {got['bytes']:>9,} B  tile {got['tile']:>4}  at {got['step']}")
    rep.lines.append(f"verified {len(ops)} ops x 2 steps on all {T} tiles; usable {usable:,} B, support {support:,} B")
    return rep

