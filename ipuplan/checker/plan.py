"""Re-derive a plan's buffers from model + target + recorded choices, and verify every memory limit.

Written apart from ipuplan.solver on purpose: its own schedule walk, its own per-kind buffer rules
(ipuplan/checker/rules.py), its own byte and exchange counts (ipuplan/checker/geometry.py, exchange.py). Only the
IR, the loaders and the codelets' declared figures are shared. Nothing numeric in plan.json is trusted:
every recorded figure is recomputed and compared, every recorded value is type- and range-checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import ipuplan.codelets as codelets
from ..errors import InputError, ModelError
from ..formats import PLAN
from ..model import build_graph, load_model
from ..model.stage import Stage
from ..artefacts import resolve_input
from ..plan import region_usage
from ..target import load_target
from .placement import check_placement
from .space import build_space
from .validate import Invalid, boolean, get, integer, one_of


@dataclass
class CheckReport:
    ok: bool = True
    violations: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    # what a package check compares against: the checker's own per-tile exchange table bytes of the chosen
    # plan, and the kind of every scheduled op (the supervisor program the plan reserved bytes for)
    tables: np.ndarray | None = None
    op_kinds: dict | None = None

    def fail(self, msg: str) -> None:
        self.ok = False
        self.violations.append(msg)
        self.lines.append("VIOLATION " + msg)


@dataclass(frozen=True)
class Limits:
    """Per-tile capacities as the checker derives them from the target, the model's ops and the options."""

    usable: int
    support: int
    headroom: int
    region0: int
    region1: int
    table_budget: int
    fragment_limit: int
    tables_in_memory: bool
    table_element: int
    table_guard: int

    @property
    def capacity(self) -> int:
        return self.usable - self.support - self.headroom

    def table_alloc(self, tables: np.ndarray) -> np.ndarray:
        t = np.asarray(tables, np.int64)
        if not self.tables_in_memory:
            return np.zeros_like(t)
        return np.where(t > 0, -(-(t + self.table_guard) // self.table_element) * self.table_element, 0)

    @classmethod
    def derive(cls, target, options: dict, kinds, where: str) -> "Limits":
        """Capacities for the recorded options (range-checked: raises Invalid)."""
        o = options
        reserve = o.get("support_reserve")
        if reserve is not None:
            reserve = integer(o, "support_reserve", f"{where}.options", 0, target.seeds_planned_data_bytes - 1)
        budget = o.get("exchange_table_budget")
        if budget is not None:
            budget = integer(o, "exchange_table_budget", f"{where}.options", 1, target.exchange_table_bytes_max)
        else:
            budget = target.exchange_table_bytes_max
        boolean(o, "relays", f"{where}.options")
        cat = catalogue_of(o, where)
        steps = steps_of(cat)
        rotating, compact = steps.slices > 0, cat == "compact"
        usable = target.seeds_planned_data_bytes if reserve is not None else target.usable_bytes
        if reserve is not None:
            support = reserve
        else:
            mm = target.memory_map
            support = (mm.fixed_bytes + mm.code_window_bytes + max(0, codelets.code_bytes(target, rotating, compact) - mm.code_window_bytes)
                       + codelets.program_bytes(target, kinds, steps))
        headroom = integer(o, "headroom", f"{where}.options", 0, usable - 1)  # as `solve` accepts it
        return cls(usable, support, headroom, target.region0_bytes, target.region1_usable_bytes, budget,
                   target.exchange_fragments_max, reserve is None, target.region0_element_bytes,
                   target.memory_map.table_guard_bytes)


def steps_of(catalogue: str):
    """The most rotation steps a recorded catalogue reserves every matmul's and attention's program for."""
    return {"rotating": codelets.ROTATING_STEPS, "compact": codelets.COMPACT_STEPS}.get(catalogue, codelets.NO_STEPS)


def catalogue_of(options: dict, where: str) -> str:
    """The recorded implementation space ("compact", "rotating", "shaped" or "grid"; absent: "grid", which
    artefacts older than the option were made with)."""
    if "catalogue" not in options:
        return "grid"
    return one_of(options, "catalogue", f"{where}.options", ("compact", "rotating", "shaped", "grid"))


def load_inputs(doc: dict, rep: CheckReport, what: str, base: Path | None = None):
    """The graph and target an artefact (`what`) was made for, or None (and a violation) when neither the copy
    the artefact's directory (`base`) keeps nor the original file holds the recorded digest, or the instance
    fields are malformed."""
    try:
        files = {}
        for kind in ("model", "target"):
            rec = get(get(doc, "inputs", what), kind, f"{what}.inputs")
            get(rec, "path", f"{what}.inputs.{kind}")
            files[kind], why = resolve_input(rec, base)
            if files[kind] is None:
                rep.fail(f"{what}.inputs.{kind}: {why}")
                return None
        layers = integer(doc, "layers", what, 1, 1024)
        precision = one_of(doc, "precision", what, ("f16", "fp8"))
        fuse = boolean(doc, "fuse_qkv", what)
        batch = integer(doc, "batch", what, 1, 4096)
        scales = doc.get("fp8_scales", {})
        if not isinstance(scales, dict) or not all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(s, int) and not isinstance(s, bool) for s in v)
                for v in scales.values()):
            raise Invalid(f"{what}.fp8_scales: is not a mapping of GEMM to [x scale, w scale]")
        spec = load_model(files["model"]).with_options(layers=layers, precision=precision, fuse_qkv=fuse,
                                                       fp8_scales=scales or None)
        stage = Stage.in_doc(doc, layers, what)
        return build_graph(spec, batch, stage), load_target(files["target"])
    except Invalid as e:
        rep.fail(str(e))
        return None
    except ModelError as e:  # scales naming no GEMM of the model
        rep.fail(f"{what}.fp8_scales: {e}")
        return None


def _read(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(path), None, f"not valid JSON ({e})", f"re-run ipuplan solve to write {what}") from None


def check_dir(d: Path) -> CheckReport:
    """Check DIR/plan.json and, when the plan has one, DIR/placement.json."""
    path = d / "plan.json"
    if not path.exists():
        raise InputError(str(d), None, "no plan.json here", "pass the directory `ipuplan solve -o` wrote for a FIT")
    plan = _read(path, "plan.json")
    placed = d / "placement.json"
    if isinstance(plan, dict) and "placement" in plan and not placed.exists():
        rep = CheckReport()
        rep.fail(f"{placed}: missing (plan.json says the plan was placed)")
        return rep
    return check_plan(plan, _read(placed, "placement.json") if placed.exists() else None, base=d)


def check_plan(plan, placement=None, base: Path | None = None) -> CheckReport:
    """Verify a FIT plan (and its placement, if given); every failure (a violated limit, a figure that does not
    recompute, a malformed value, an address out of place) is a violation in the report, never an exception."""
    rep = CheckReport()
    try:
        _check(plan, rep, placement, base)
    except Invalid as e:
        rep.fail(str(e))
    return rep


def _check(plan, rep: CheckReport, placement=None, base: Path | None = None) -> None:
    W = "plan.json"
    if not isinstance(plan, dict) or plan.get("format") != PLAN or plan.get("verdict") != "FIT":
        rep.fail(f"{W}: not a FIT plan of format {PLAN}")
        return
    loaded = load_inputs(plan, rep, W, base)
    if loaded is None:
        return
    g, target = loaded
    batch, T = plan["batch"], target.tiles
    choices = get(plan, "choices", W)
    if not isinstance(choices, dict):
        raise Invalid(f"{W}.choices: is not a mapping")
    options = get(plan, "options", W)
    if not isinstance(options, dict):
        raise Invalid(f"{W}.options: is not a mapping")
    sp = build_space(g, target, batch, {k: [v] for k, v in choices.items()}, relays=True, where=f"{W}: choices",
                     whole_rows=catalogue_of(options, W) != "grid", compact=catalogue_of(options, W) == "compact",
                     steps=steps_of(catalogue_of(options, W)))
    ops, nsteps, steps = sp.prog.ops, sp.prog.nsteps, sp.prog.steps
    lim = Limits.derive(target, get(plan, "options", W), [o.op.kind for o in ops], W)
    relays = _relays(plan, W)
    chosen = {("impl", o.key, 0) for o in ops}
    for name, (prod, cons, idx, _, _) in sp.ends.items():
        group = sp.groups[name]
        mode = "relay" if (prod, cons, idx) in relays else "direct"
        relays.discard((prod, cons, idx))
        pick = [k for k in group if k[5] in ("none", mode)]
        if not pick:
            raise Invalid(f"{W}.exchange.relays: {prod} -> {cons}[{idx}] has no relay (its destination is not replicated)")
        chosen.add(pick[0])
    if relays:
        raise Invalid(f"{W}.exchange.relays: {sorted(relays)[0]} is not an edge of this plan")
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
    _verify(plan, rep, lim, std, il, tables, frags, steps, target)
    rep.tables, rep.op_kinds = tables, {o.key: o.op.kind for o in ops}
    rep.lines.append(f"verified {len(ops)} ops x 2 steps on all {T} tiles; usable {lim.usable:,} B, support "
                     f"{lim.support:,} B, headroom {lim.headroom:,} B (modeled cycles are not re-derived)")
    if placement is not None:
        check_placement(placement, sp, chosen, lim, target, rep)
    else:
        rep.lines.append("no placement.json: the plan's buffers have no addresses (not placed)")


def _relays(plan: dict, W: str) -> set:
    out = set()
    lst = get(get(plan, "exchange", W), "relays", f"{W}.exchange")
    if not isinstance(lst, list):
        raise Invalid(f"{W}.exchange.relays: is not a list")
    for i, r in enumerate(lst):
        p = f"{W}.exchange.relays[{i}]"
        b, c, n = get(r, "buffer", p), get(r, "consumer", p), integer(r, "input", p, 0, 64)
        if not isinstance(b, str) or not isinstance(c, str):
            raise Invalid(f"{p}: buffer and consumer are op names")
        out.add((b, c, n))
    return out


def _verify(plan: dict, rep: CheckReport, lim: Limits, std, il, tables, frags, steps, target) -> None:
    W = "plan.json"
    acc = get(plan, "accounting", W)
    for key, want in (("usable_bytes", lim.usable), ("support_bytes", lim.support), ("headroom_bytes", lim.headroom),
                      ("mode", "modeled" if lim.tables_in_memory else "seeds")):
        if get(acc, key, f"{W}.accounting") != want:
            rep.fail(f"{W}.accounting.{key}: {acc[key]!r} disagrees with the target and options ({want!r})")
    alloc = lim.table_alloc(tables)
    total = std + il + lim.support + alloc[None, :]
    for name, arr, cap in (("exchange[tables]", tables, lim.table_budget),
                           ("exchange[fragments]", frags, lim.fragment_limit)):
        if arr.max() > cap:
            t = int(np.argmax(arr))
            rep.fail(f"{name}[tile {t}]: {int(arr[t]):,} > {cap:,}")
    x = get(plan, "exchange", W)
    got_t, got_f = get(get(x, "tables", f"{W}.exchange"), "bytes", f"{W}.exchange.tables"), \
        get(get(x, "fragments", f"{W}.exchange"), "count", f"{W}.exchange.fragments")
    if (got_t, got_f) != (int(tables.max()), int(frags.max())):
        rep.fail(f"{W}.exchange: plan says {got_t} B / {got_f} fragments, recomputed {int(tables.max()):,} B / "
                 f"{int(frags.max()):,}")
    else:
        rep.lines.append(f"exchange tables {int(tables.max()):>9,} B  tile {int(np.argmax(tables)):>4}  (limit "
                         f"{lim.table_budget:,}; {int(alloc.max()):,} B of region 0 in whole elements); fragments "
                         f"{int(frags.max()):,} tile {int(np.argmax(frags))} (limit {lim.fragment_limit:,})")
    r0max = lim.support + int(alloc.max())
    if r0max > lim.region0:
        rep.fail(f"region0: support + tables {r0max:,} B exceed region 0 ({lim.region0:,} B)")
    for name, arr, cap in (("memory", total, lim.usable - lim.headroom), ("region1[interleaved]", il, lim.region1)):
        over = np.argwhere(arr > cap)
        if len(over):
            t, tile = over[np.argmax(arr[tuple(over.T)])]
            rep.fail(f"{name}[point={steps[t]}, tile {tile}]: {int(arr[t, tile]):,} B > {cap:,} B "
                     f"({len(over)} tile-steps over)")
    r0, r1 = region_usage(std, il, lim.support + alloc[None, :], lim.region0)
    peaks = get(plan, "peaks", W)
    for k, arr in (("total", total), ("interleaved", il), ("standard", std), ("region0", r0), ("region1", r1)):
        t, tile = np.unravel_index(int(np.argmax(arr)), arr.shape)
        got = {"bytes": int(arr[t, tile]), "tile": int(tile), "step": steps[t]}
        rec = peaks.get(k) if isinstance(peaks, dict) else None
        if not isinstance(rec, dict) or rec.get("bytes") != got["bytes"]:
            rep.fail(f"{W}.peaks.{k}: plan says {rec.get('bytes') if isinstance(rec, dict) else rec!r}, recomputed "
                     f"{got['bytes']:,} B (tile {got['tile']}, {got['step']})")
        else:
            rep.lines.append(f"peak {k:<11} {got['bytes']:>9,} B  tile {got['tile']:>4}  at {got['step']}")
    free = lim.usable - total.max(0)
    tile = int(np.argmin(free))
    slack = get(plan, "slack", W)
    if not isinstance(slack, dict) or (slack.get("bytes"), slack.get("tile")) != (int(free[tile]), tile):
        rep.fail(f"{W}.slack: plan says {slack!r}, recomputed {int(free[tile]):,} B free on tile {tile}")
    else:
        rep.lines.append(f"slack {int(free[tile]):>14,} B  tile {tile:>4}  (the fewest free bytes of any tile at any "
                         f"step; headroom {lim.headroom:,} B)")
