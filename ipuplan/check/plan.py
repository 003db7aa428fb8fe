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
from ..ir.graph import OpKind, Role
from ..model import build_graph, load_model
from ..plan import FORMAT, region_usage, sha256
from ..target import load_target
from .exchange import fragments
from .rules import Derived, derive, matrix_of
from .tiles import block_owners, tile_bytes


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


@dataclass
class _Op:
    key: str
    op: object
    graph: object
    trips: int
    x: int
    c: int
    reads: list = field(default_factory=list)  # (index, kind, key, window)


def _walk(g):
    """Steps, ops, buffer last-use, params with iteration counts, carried ties: from the IR alone."""
    ops: list[_Op] = []
    params = {v.name: (v, 1) for v in g.values if v.role in (Role.PARAM, Role.CONST)}
    inputs = {v.name for v in g.values if v.role is Role.INPUT}
    env = {n: ("param", n, None) for n in params} | {n: ("input", n, None) for n in inputs}
    ties = []
    body = [None]

    def go(graph, scope, trips, env):
        for op in graph.ops:
            if op.kind is OpKind.REPEAT:
                a = op.attrs
                nc, ns = len(a.carried), len(a.sequences)
                benv = {bi: env[o] for (bi, _), o in zip(a.carried, op.inputs[:nc])}
                for bi, o in zip(a.sequences, op.inputs[nc:nc + ns]):
                    params[o] = (a.body.value(bi), a.count)
                    benv[bi] = ("param", o, None)
                benv |= {bi: env[o] for bi, o in zip(a.invariants, op.inputs[nc + ns:])}
                start = 2 * len(ops)
                go(a.body, scope + op.name + "/", trips * a.count, benv)
                body[0] = (start, 2 * len(ops) - 1)
                for (bi, bo), o in zip(a.carried, op.outputs):
                    env[o] = benv[bo]
                    ties.append((benv[bi][1], benv[bo][1]))
            elif op.kind is OpKind.SLICE:
                k, key, w = env[op.inputs[0]]
                base = w[0] if w else 0
                env[op.outputs[0]] = (k, key, (base + op.attrs.start, base + op.attrs.stop))
            elif op.kind is OpKind.RESHAPE:
                env[op.outputs[0]] = env[op.inputs[0]]
            else:
                o = _Op(scope + op.name, op, graph, trips, 2 * len(ops), 2 * len(ops) + 1)
                o.reads = [(i, *env[n]) for i, n in enumerate(op.inputs)]
                env[op.outputs[0]] = ("act", o.key, None)
                ops.append(o)

    go(g, "", 1, env)
    return ops, params, ties, body[0]


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
    ops, params, ties, body = _walk(g)
    nsteps = 2 * len(ops)
    index = {o.key: o for o in ops}
    choices = plan["choices"]
    missing = [o.key for o in ops if o.key not in choices]
    extra = sorted(set(choices) - set(index))
    if missing or extra:
        rep.fail(f"choices do not match the graph's ops (missing {missing[:3]}, unknown {extra[:3]})")
        return rep

    # last use of every activation
    last = {o.key: o.c for o in ops}
    consumers: dict[str, list[_Op]] = {o.key: [] for o in ops}
    for o in ops:
        for _, kind, key, _ in o.reads:
            if kind == "act":
                last[key] = max(last[key], o.c)
                consumers[key].append(o)
    for outer, res in ties:
        last[res] = max(last[res], body[1])
    for k, cs in consumers.items():
        if not cs:
            last[k] = nsteps - 1

    derived: dict[str, Derived] = {}
    for o in ops:
        try:
            derived[o.key] = derive(o, choices[o.key], g, params, consumers, index, target, batch)
        except ValueError as e:
            rep.fail(f"choice for {o.key}: {e}")
            return rep

    std = np.zeros((nsteps, T), np.int64)
    il = np.zeros((nsteps, T), np.int64)

    def add(lay: dict, first: int, lastv: int, times: int = 1):
        (il if lay["mem"] == "il" else std)[first:lastv + 1] += tile_bytes(lay, T) * times

    homes: set[str] = set()
    fs_all, fr_all = np.zeros(T, np.int64), np.zeros(T, np.int64)
    tables = np.zeros(T, np.int64)
    relays = {(r["buffer"], r["consumer"], r["input"]) for r in plan.get("exchange", {}).get("relays", [])}

    def moved(fs, fr, patched=False):
        nonlocal tables, fs_all, fr_all
        fs_all += fs
        fr_all += fr
        tables += target.send_fragment_bytes * fs + target.recv_fragment_bytes * fr
        if patched:
            tables += target.patch_word_bytes * (fs > 0)

    def home_of(key):
        v, count = params[key]
        r, c = matrix_of(v.shape)
        return {"rows": r, "cols": c, "elem": v.dtype.itemsize, "pr": T, "pc": 1, "replicas": 1,
                "start": sum(key.encode()) * 37 % T, "row_stride": 0, "col_stride": 1, "rep_stride": 0,
                "row_groups": 1, "flat": True, "mem": "std", "row_align": 1, "col_align": 1}

    for o in ops:
        d = derived[o.key]
        _internal(o, d, choices[o.key], T, moved)
        add(d.out, o.x if d.out_from_exchange else o.c, last[o.key])
        if d.scratch is not None:
            std[o.c] += d.scratch
        if d.rope is not None:
            add(d.rope, 0, nsteps - 1)
        for key, lay, mode in d.params:
            count = params[key][1]
            if mode == "resident":
                add(lay, 0, nsteps - 1, count)
            else:
                add(lay, o.x, o.c)
                homes.add(key)
                moved(*fragments(home_of(key), None, lay, T), patched=count > 1)
        for i, kind, key, window in o.reads:
            need = d.needs.get(i)
            if need is None or kind == "param":
                continue
            if kind == "input":
                add(need, 0, o.c)
                continue
            src = derived[key].out
            if window is not None or src != need:
                add(need, o.x, o.c)
                if (key, o.key, i) in relays:
                    if need["replicas"] < 2:
                        rep.fail(f"relay for {key} -> {o.key} but its destination is not replicated")
                    relay = dict(need, replicas=1, rep_stride=0, row_stride=0, col_stride=1,
                                 start=(need["start"] + T // 2) % T, mem="std")
                    add(relay, o.x, o.x)
                    moved(*fragments(src, window, relay, T))
                    moved(*fragments(relay, None, need, T))
                else:
                    moved(*fragments(src, window, need, T))
    for key in sorted(homes):
        add(home_of(key), 0, nsteps - 1, params[key][1])
    for outer, res in ties:
        if derived[outer].out != derived[res].out:
            rep.fail(f"carried value {outer} and body result {res} have different layouts")

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
    steps = [f"{o.key}:{s}" for o in ops for s in ("x", "c")]
    frags = fs_all + fr_all
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


def _internal(o, d, choice: dict, T: int, moved) -> None:
    """Exchanges inside one op: partial-sum reduction, cross-tile statistics, concat's direct writes."""
    if choice.get("kind") == "matmul" and choice["pk"] > 1:
        out, pk = d.out, choice["pk"]
        rs = out["row_stride"] or out["pc"]
        i = np.arange(out["pr"])[:, None] * rs
        j = np.arange(out["pc"])[None, :] * out["col_stride"]
        senders = np.zeros(T, np.int64)
        for r in range(1, pk):
            np.add.at(senders, ((out["start"] + r + i + j) % T).ravel(), 1)
        moved(senders, block_owners(out, T) * (pk - 1))
    elif choice.get("statistics") == "cross-tile":
        own = block_owners(d.out, T)
        moved(own, own * (d.out["pc"] - 1))
    elif choice.get("kind") == "concat":
        own = block_owners(d.out, T)
        moved(own, own * 2)
