"""The canonical search's inner loop, compiled (numba): an iterative depth-first search over one group of buffers
with explicit frames and undo logs. ipuplan/backend/placement/search.py states the rules; this is their
machine form. When a placement leaves no unplaced buffer crossing some point in time, the groups on either
side are searched separately (dynamic decomposition), each ranked afresh by what is left of its sections: a
failure on one side then never re-searches the other.

Returns 1 when every member is placed (offsets kept), 0 when the whole tree was searched without a placement
(a proof), -1 when the node limit was reached (the caller restores its state)."""

from __future__ import annotations

import numpy as np
from numba import njit

FOUND, EXHAUSTED, LIMIT = 1, 0, -1


@njit(cache=True)
def _lowest(i, minoff, lo, hi, align, size, fixed, barriers):
    o = max(minoff[i], lo[i])
    a, s = align[i], size[i]
    while True:
        o = ((o + a - 1) // a) * a
        moved = False
        for x in barriers:
            if o < x < o + s:
                o = x
                moved = True
        if not moved:
            break
    if fixed[i] >= 0:
        return fixed[i] if o <= fixed[i] else -1
    return o if o + s <= hi[i] else -1


@njit(cache=True)
def _element_end(o, s, el_start, el_end, el_size):
    for g in range(el_start.shape[0]):
        if el_start[g] <= o < el_end[g]:
            return el_start[g] + ((o + s - el_start[g] + el_size[g] - 1) // el_size[g]) * el_size[g]
    return o + s


@njit(cache=True)
def _push(log_i, log_v, top, idx, val):
    """Append (idx, val) to an undo log at `top`, doubling it when full; returns the (possibly new) arrays."""
    if top >= log_i.shape[0]:
        log_i = np.concatenate((log_i, np.zeros(log_i.shape[0], np.int64)))
        log_v = np.concatenate((log_v, np.zeros(log_v.shape[0], np.int64)))
    log_i[top] = idx
    log_v[top] = val
    return log_i, log_v


@njit(cache=True)
def _unplace(i, mfrom, ffrom, mtop, ftop, mlog_i, mlog_v, flog_i, flog_v, minoff, floor, total, cut, size, span_a,
             span_b, offset):
    """Undo placing buffer i: the lowest offsets and floors logged since (mfrom, ffrom), its bytes in its
    sections, its crossings."""
    for t in range(mtop - 1, mfrom - 1, -1):
        minoff[mlog_i[t]] = mlog_v[t]
    for t in range(ftop - 1, ffrom - 1, -1):
        floor[flog_i[t]] = flog_v[t]
    for sct in range(span_a[i], span_b[i]):
        total[sct] += size[i]
    for sct in range(span_a[i] + 1, span_b[i]):
        cut[sct] += 1
    offset[i] = -1


@njit(cache=True)
def _hatless(i, offset, ov_ptr, ov_idx):
    """No unplaced buffer overlaps i in time: i obstructs nothing still to be placed."""
    for t in range(ov_ptr[i], ov_ptr[i + 1]):
        if offset[ov_idx[t]] < 0:
            return False
    return True


@njit(cache=True)
def rerank(group, rank, hkey, room, size, width, span_a, span_b, total):
    """Rank `group` as a fresh partition (MiniMalloc's SubSolve): narrowest window first, then the heuristic's
    letters descending (0: the largest unplaced total of its sections, 1: area, 2: lifetime, 3: size), then
    index. Totals are the current ones, so a group split off mid-search is ordered by what is left."""
    m = group.shape[0]
    order = np.arange(m)
    keys = np.zeros((hkey.shape[0], m), np.int64)
    for u in range(m):
        j = group[u]
        for c in range(hkey.shape[0]):
            h = hkey[c]
            if h == 0:
                t = 0
                for s in range(span_a[j], span_b[j]):
                    if total[s] > t:
                        t = total[s]
                keys[c, u] = -t
            elif h == 1:
                keys[c, u] = -size[j] * width[j]
            elif h == 2:
                keys[c, u] = -width[j]
            else:
                keys[c, u] = -size[j]
    # least significant key first, stable sorts (the index is the final tie-break: order starts sorted by it)
    for c in range(hkey.shape[0] - 1, -1, -1):
        order = order[np.argsort(keys[c][order], kind="mergesort")]
    rm = np.zeros(m, np.int64)
    for u in range(m):
        rm[u] = room[group[u]]
    order = order[np.argsort(rm[order], kind="mergesort")]
    for k in range(m):
        rank[group[order[k]]] = k


@njit(cache=True)
def search(members, rank, s0, s1, capacity, size, align, lo, hi, fixed, span_a, span_b, ov_ptr, ov_idx, conf,
           sec_ptr, sec_idx, barriers, el_start, el_end, el_size, offset, minoff, floor, total, cut, node_limit,
           hkey, room, width):
    m = members.shape[0]
    n = size.shape[0]
    # per frame: candidates (offset, rank, buffer) sorted, their order by height, a cursor, the placed buffer
    c_off = np.zeros((m + 1, m), np.int64)
    c_buf = np.zeros((m + 1, m), np.int64)
    h_ord = np.zeros((m + 1, m), np.int64)
    ncand = np.zeros(m + 1, np.int64)
    cursor = np.zeros(m + 1, np.int64)
    placed = np.full(m + 1, -1, np.int64)
    last_off = np.full(m + 1, -1, np.int64)
    last_rank = np.full(m + 1, -1, np.int64)
    # undo logs: lowest offsets, floors; where each frame's entries start
    mlog_i = np.zeros(64, np.int64)
    mlog_v = np.zeros(64, np.int64)
    flog_i = np.zeros(64, np.int64)
    flog_v = np.zeros(64, np.int64)
    mtop = 0
    ftop = 0
    mstart = np.zeros(m + 1, np.int64)
    fstart = np.zeros(m + 1, np.int64)
    touched = np.zeros(sec_ptr.shape[0], np.bool_)
    nodes = 0
    depth = 0

    # --- the root frame
    k = 0
    for t in range(m):
        i = members[t]
        if offset[i] < 0:
            o = _lowest(i, minoff, lo, hi, align, size, fixed, barriers)
            if o < 0:
                return EXHAUSTED, nodes
            c_off[0, k] = o * 4096 + rank[i]  # sort key: offset, then rank (rank < 4096)
            c_buf[0, k] = i
            k += 1
    if k == 0:
        return FOUND, nodes
    ncand[0] = k
    order = np.argsort(c_off[0, :k])
    c_off[0, :k] = c_off[0, :k][order]
    c_buf[0, :k] = c_buf[0, :k][order]
    hts = np.zeros(k, np.int64)
    for t in range(k):
        hts[t] = c_off[0, t] // 4096 + size[c_buf[0, t]]
    h_ord[0, :k] = np.argsort(hts)
    nodes += 1

    while True:
        d = depth
        if cursor[d] >= ncand[d]:  # this frame is exhausted: back to the parent, undo its placement
            if d == 0:
                return EXHAUSTED, nodes
            depth -= 1
            p = depth
            i = placed[p]
            _unplace(i, mstart[p], fstart[p], mtop, ftop, mlog_i, mlog_v, flog_i, flog_v, minoff, floor, total, cut,
                     size, span_a, span_b, offset)
            mtop, ftop = mstart[p], fstart[p]
            if _hatless(i, offset, ov_ptr, ov_idx):  # nothing unplaced overlapped it: no sibling does better
                cursor[p] = ncand[p]
            continue
        t = cursor[d]
        cursor[d] += 1
        key = c_off[d, t]
        o = key // 4096
        r = key % 4096
        i = c_buf[d, t]
        if o < last_off[d] or (o == last_off[d] and r < last_rank[d]):
            continue  # not canonical
        # dominated: a non-conflicting unplaced buffer would fit entirely below o
        dom = False
        for u in range(ncand[d]):
            j = c_buf[d, h_ord[d, u]]
            hj = c_off[d, h_ord[d, u]] // 4096 + size[j]
            if hj > o:
                break
            if j != i and not conf[i, j]:
                dom = True
                break
        if dom:
            continue
        # section check, cheap first
        a, b = span_a[i], span_b[i]
        top = o + size[i]
        fail = False
        for sct in range(s0, s1):
            f = floor[sct]
            tt = total[sct]
            if a <= sct < b:
                if top > f:
                    f = top
                tt -= size[i]
            if max(f, o) + tt > capacity:
                fail = True
                break
        if fail:
            # a hatless buffer obstructs nothing: if its own lowest placement breaks a section, so does any other
            if _hatless(i, offset, ov_ptr, ov_idx):
                cursor[d] = ncand[d]
            continue
        # place i at o
        mstart[d] = mtop
        fstart[d] = ftop
        placed[d] = i
        offset[i] = o
        for sct in range(a, b):
            if top > floor[sct]:
                flog_i, flog_v = _push(flog_i, flog_v, ftop, sct, floor[sct])
                ftop += 1
                floor[sct] = top
            total[sct] -= size[i]
        split = False
        for sct in range(a + 1, b):
            cut[sct] -= 1
            if cut[sct] == 0 and s0 < sct < s1:
                split = True
        touched[:] = False
        any_touch = False
        for u in range(ov_ptr[i], ov_ptr[i + 1]):
            j = ov_idx[u]
            if offset[j] >= 0:
                continue
            h = top
            if conf[i, j]:
                h = _element_end(o, size[i], el_start, el_end, el_size)
            if h > minoff[j]:
                mlog_i, mlog_v = _push(mlog_i, mlog_v, mtop, j, minoff[j])
                mtop += 1
                minoff[j] = h
                for sct in range(span_a[j], span_b[j]):
                    touched[sct] = True
                any_touch = True
        ok = True
        if any_touch:  # a section's floor is at least its unplaced buffers' lowest possible offset
            for sct in range(s0, s1):
                if not touched[sct]:
                    continue
                low = -1
                for u in range(sec_ptr[sct], sec_ptr[sct + 1]):
                    j = sec_idx[u]
                    if offset[j] < 0 and (low < 0 or minoff[j] < low):
                        low = minoff[j]
                if low > floor[sct]:
                    flog_i, flog_v = _push(flog_i, flog_v, ftop, sct, floor[sct])
                    ftop += 1
                    floor[sct] = low
                    if max(low, o) + total[sct] > capacity:
                        ok = False
                        break
        # the child frame
        c = d + 1
        k = 0
        if ok:
            for u in range(m):
                j = members[u]
                if offset[j] < 0:
                    oj = _lowest(j, minoff, lo, hi, align, size, fixed, barriers)
                    if oj < 0:
                        ok = False
                        break
                    c_off[c, k] = oj * 4096 + rank[j]
                    c_buf[c, k] = j
                    k += 1
        if ok and k == 0:
            return FOUND, nodes
        if ok and split:  # independent groups left: search each on its own (restoring the state on failure)
            saved = (offset.copy(), minoff.copy(), floor.copy(), total.copy(), cut.copy())
            status = FOUND
            g0 = s0
            while g0 < s1 and status == FOUND:
                g1 = g0 + 1
                while g1 < s1 and cut[g1] > 0:
                    g1 += 1
                cnt = 0
                for u in range(m):
                    j = members[u]
                    if offset[j] < 0 and g0 <= span_a[j] < g1:
                        cnt += 1
                if cnt:
                    group = np.empty(cnt, np.int64)
                    cnt = 0
                    for u in range(m):
                        j = members[u]
                        if offset[j] < 0 and g0 <= span_a[j] < g1:
                            group[cnt] = j
                            cnt += 1
                    kept = rank.copy()
                    rerank(group, rank, hkey, room, size, width, span_a, span_b, total)
                    status, used = search(group, rank, g0, g1, capacity, size, align, lo, hi, fixed, span_a, span_b,
                                          ov_ptr, ov_idx, conf, sec_ptr, sec_idx, barriers, el_start, el_end,
                                          el_size, offset, minoff, floor, total, cut, node_limit - nodes, hkey, room,
                                          width)
                    rank[:] = kept
                    nodes += used
                g0 = g1
            if status == FOUND:
                return FOUND, nodes
            offset[:] = saved[0]
            minoff[:] = saved[1]
            floor[:] = saved[2]
            total[:] = saved[3]
            cut[:] = saved[4]
            if status == LIMIT:
                return LIMIT, nodes
            ok = False  # no placement of some group above this partial assignment: a dead end here
        if ok:
            nodes += 1
            if nodes >= node_limit:
                return LIMIT, nodes
            order = np.argsort(c_off[c, :k])
            c_off[c, :k] = c_off[c, :k][order]
            c_buf[c, :k] = c_buf[c, :k][order]
            hts = np.zeros(k, np.int64)
            for u in range(k):
                hts[u] = c_off[c, u] // 4096 + size[c_buf[c, u]]
            h_ord[c, :k] = np.argsort(hts)
            ncand[c] = k
            cursor[c] = 0
            last_off[c] = o
            last_rank[c] = r
            depth = c
            continue
        # dead end: undo the placement at this frame and try its next candidate
        _unplace(i, mstart[d], fstart[d], mtop, ftop, mlog_i, mlog_v, flog_i, flog_v, minoff, floor, total, cut,
                 size, span_a, span_b, offset)
        mtop, ftop = mstart[d], fstart[d]
        if _hatless(i, offset, ov_ptr, ov_idx):
            cursor[d] = ncand[d]
