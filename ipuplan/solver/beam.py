"""The seeds' strategy, as a peer to compare against: beam search over ops in schedule order.

Same catalogue, cost model and memory accounting as the CP-SAT model. Each op extends every beam state
with each of its implementations; the layout conversions to already-decided producers follow, direct or
through relays (relays taken only when they do not add cycles and shrink the worst tile's tables, the
seeds' rule). A per-candidate memory screen drops states whose decided bytes already overflow a tile
(decided bytes only grow, so the screen never drops a state that could fit). States are pruned to the
Pareto front of cycles, peak bytes and peak exchange-table bytes, then to the beam width keeping the
extremes of each. Finalists are the complete states by cycles; each is re-verified by the independent
checker and the first that passes is accepted. If none survives the verdict is REJECTED: no proof.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..layout import MemClass
from .problem import Problem


@dataclass
class _State:
    picks: dict[str, int]
    lits: set
    cycles: int
    total: np.ndarray  # [steps, tiles] decided data bytes
    il: np.ndarray
    tables: np.ndarray  # [tiles]
    frags: np.ndarray
    peak: int = 0
    peak_tables: int = 0


def _index(p: Problem):
    by_lit: dict[tuple, list] = {}
    for cb in p.contribs:
        by_lit.setdefault(cb.lit, []).append(cb)
    x_by_lit: dict[tuple, list] = {}
    for x in p.xcontribs:
        x_by_lit.setdefault(x.lit, []).append(x)
    return by_lit, x_by_lit


def _apply(p: Problem, st: _State, lit: tuple, by_lit, x_by_lit) -> None:
    for cb in by_lit.get(lit, ()):
        v = p.vectors[cb.vec]
        st.total[cb.first:cb.last + 1] += v
        if cb.mem is MemClass.INTERLEAVED:
            st.il[cb.first:cb.last + 1] += v
    for x in x_by_lit.get(lit, ()):
        st.tables += p.vectors[x.tables]
        st.frags += p.vectors[x.frags]
    st.cycles += p.cycles.get(lit, 0)
    st.lits.add(lit)


def _fits(p: Problem, st: _State) -> bool:
    a = p.acct
    resident = a.table_alloc(st.tables) if a.tables_in_memory else 0
    st.peak = int((st.total + resident).max()) + a.support + a.headroom
    st.peak_tables = int(st.tables.max())
    if st.peak > a.usable or int(st.il.max()) > a.region1:
        return False
    if st.peak_tables > a.table_budget or int(st.frags.max()) > a.fragment_limit:
        return False
    return not (a.tables_in_memory and int(a.table_alloc(st.peak_tables)) + a.support > a.region0)


def _prune(states: list[_State], width: int) -> list[_State]:
    states.sort(key=lambda s: (s.cycles, s.peak, s.peak_tables))
    front: list[_State] = []
    for s in states:
        if not any(f.cycles <= s.cycles and f.peak <= s.peak and f.peak_tables <= s.peak_tables for f in front):
            front.append(s)
    if len(front) <= width:
        return front
    keep = {id(min(front, key=lambda s: (s.peak, s.cycles))), id(min(front, key=lambda s: (s.peak_tables, s.cycles)))}
    out = [s for s in front if id(s) in keep]
    out += [s for s in front if id(s) not in keep][:width - len(out)]
    return out


def beam_search(p: Problem, width: int = 64, finalists: int = 8) -> tuple[list[set], dict]:
    """Complete states' literal sets, best first (at most `finalists`), and search statistics."""
    by_lit, x_by_lit = _index(p)
    T, n = p.target.tiles, len(p.steps)
    start = _State({}, set(), p.constant_cycles, np.zeros((n, T), np.int64), np.zeros((n, T), np.int64),
                   np.zeros(T, np.int64), np.zeros(T, np.int64))
    beam = [start]
    edges_in = {}
    for ei, e in enumerate(p.edges):
        edges_in.setdefault(e.consumer, []).append(ei)
    ties = {p.sched.buffers[res].producer: p.sched.buffers[outer].producer for outer, res in p.ties}
    screened = expanded = 0
    for sop in p.sched.ops:
        op = sop.key
        nxt = []
        for st in beam:
            for i, im in enumerate(p.impls[op]):
                if op in ties and p.impls[ties[op]][st.picks[ties[op]]].out != im.out:
                    continue
                expanded += 1
                s = _State(dict(st.picks), set(st.lits), st.cycles, st.total.copy(), st.il.copy(),
                           st.tables.copy(), st.frags.copy())
                s.picks[op] = i
                _apply(p, s, ("impl", op, i), by_lit, x_by_lit)
                for ei in edges_in.get(op, ()):
                    e = p.edges[ei]
                    a, b = e.src_of_impl[s.picks[e.producer]], e.dst_of_impl[i]
                    modes = {pr.mode: pr for pr in e.pairs if (pr.src, pr.dst) == (a, b)}
                    pick = modes.get("none") or modes["direct"]
                    relay = modes.get("relay")
                    if relay and relay.cycles <= pick.cycles and _worst_tables(p, relay, x_by_lit) < _worst_tables(
                            p, pick, x_by_lit):
                        pick = relay
                    _apply(p, s, pick.lit, by_lit, x_by_lit)
                if _fits(p, s):
                    nxt.append(s)
                else:
                    screened += 1
        beam = _prune(nxt, width)
        if not beam:
            break
    done = sorted(beam, key=lambda s: s.cycles)[:finalists] if beam and len(beam[0].picks) == len(p.sched.ops) else []
    return [s.lits for s in done], {"expanded": expanded, "screened_out": screened, "width": width,
                                    "finalists": len(done)}


def _worst_tables(p: Problem, pair, x_by_lit) -> int:
    xs = x_by_lit.get(pair.lit, ())
    return int(max((p.vectors[x.tables].max() for x in xs), default=0))
