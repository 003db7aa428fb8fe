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
    mpath, tpath = plan["inputs"]["model"]["path"], plan["inputs"]["target"]["path"]
    for what, p in (("model", mpath), ("target", tpath)):
        if not Path(p).exists():
            raise InputError(p, None, f"the plan's {what} file is missing", "run check where solve ran")
        if sha256(p) != plan["inputs"][what]["sha256"]:
            rep.fail(f"{what} file {p} differs from the one planned (sha256 mismatch)")
            return rep
    spec = load_model(mpath).with_options(layers=plan["layers"], precision=plan["precision"],
                                          fuse_qkv=plan["fuse_qkv"])
    target = load_target(tpath)
    batch = plan["batch"]
    g = build_graph(spec, batch)
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
    D, lit, first, last, is_il, X, F, xl = sp.matrices()
    std = np.zeros((nsteps, T), np.int64)
    il = np.zeros((nsteps, T), np.int64)
    for k in np.flatnonzero(sel[lit]):
        (il if is_il[k] else std)[first[k]:last[k] + 1] += D[k]
    tables = X[sel[xl]].sum(0) if len(xl) else np.zeros(T, np.int64)
    frags = F[sel[xl]].sum(0) if len(xl) else np.zeros(T, np.int64)

    acc = plan["accounting"]
    usable, support = acc["usable_bytes"], acc["support_bytes"]
    seeds = acc["mode"] == "seeds"
    want = (target.seeds_planned_data_bytes, plan["options"]["support_reserve"]) if seeds else (
        target.usable_bytes, target.code_bytes + target.superstep_bytes * len(ops))
    if (usable, support) != want:
        rep.fail(f"accounting {acc['mode']} does not follow from the target (usable {usable}, support {support})")
    budget = plan["options"].get("exchange_table_budget")
    budget = target.exchange_table_bytes_max if budget is None else budget
    r0cap, r1cap = target.region0_bytes, target.region1_usable_bytes
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

