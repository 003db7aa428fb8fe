// ipuplan report: renders the JSON document embedded in the page (no network, no libraries).
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
const fmt = (n) => (n === null || n === undefined) ? "" : Number(n).toLocaleString("en-US");
const tip = $("tip");
function showTip(ev, html) { tip.innerHTML = html; tip.style.display = "block";
  tip.style.left = (ev.pageX + 14) + "px"; tip.style.top = (ev.pageY + 14) + "px"; }
function hideTip() { tip.style.display = "none"; }
function hue(i) { return `hsl(${(i * 137.508) % 360}, 62%, 58%)`; }
const kib = (b) => b >= 1048576 ? `${(b / 1048576).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(0)} KiB` : `${Math.round(b)} B`;
function niceTicks(max, n) {
  if (!(max > 0)) return [0];
  const raw = max / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), r = raw / mag;
  const step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag, out = [];
  for (let v = 0; v <= max * (1 + 1e-9); v += step) out.push(v);
  return out;
}
// ticks at round numbers of KiB (or MiB) for byte axes, round numbers otherwise
function byteTicks(max, n) { const u = max >= 4 * 1048576 ? 1048576 : 1024; return niceTicks(max / u, n).map(v => v * u); }
const decimals = (ticks) => ticks.length > 1 ? Math.max(0, -Math.floor(Math.log10(ticks[1] - ticks[0]) + 1e-9)) : 0;
// axes on a canvas around the plot box {l, t, w, h}: ticks, tick labels and axis titles
function axes(ctx, box, xmax, ymax, xlabel, ylabel, xfmt, yfmt, xticks) {
  ctx.save(); ctx.strokeStyle = "#333"; ctx.fillStyle = "#333"; ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath(); ctx.moveTo(box.l, box.t); ctx.lineTo(box.l, box.t + box.h); ctx.lineTo(box.l + box.w, box.t + box.h); ctx.stroke();
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  const yt = yfmt === kib ? byteTicks(ymax, 5) : niceTicks(ymax, 5), yd = decimals(yt);
  for (const v of yt) { const y = box.t + box.h - v / ymax * box.h;
    ctx.beginPath(); ctx.moveTo(box.l - 4, y); ctx.lineTo(box.l, y); ctx.stroke(); ctx.fillText(yfmt(v, yd), box.l - 6, y); }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  for (const v of (xticks || niceTicks(xmax, 8))) { const x = box.l + v / Math.max(xmax, 1e-9) * box.w;
    ctx.beginPath(); ctx.moveTo(x, box.t + box.h); ctx.lineTo(x, box.t + box.h + 4); ctx.stroke(); ctx.fillText(xfmt(v), x, box.t + box.h + 6); }
  ctx.fillText(xlabel, box.l + box.w / 2, box.t + box.h + 22);
  ctx.translate(12, box.t + box.h / 2); ctx.rotate(-Math.PI / 2); ctx.textBaseline = "middle"; ctx.fillText(ylabel, 0, 0);
  ctx.restore();
}
function el(tag, attrs, text) { const e = document.createElement(tag);
  for (const k in (attrs || {})) e.setAttribute(k, attrs[k]); if (text !== undefined) e.textContent = text; return e; }

function header() {
  const h = D.head, v = h.verdict;
  $("title").textContent = `${h.model} · batch ${h.batch} · ${h.layers} layers · ${h.target}`;
  const b = $("verdict"); b.textContent = v; b.className = "badge " + v;
  const p = D.peaks, rows = [];
  if (p) for (const k of ["total", "region0", "region1", "interleaved"]) if (p[k])
    rows.push(`${k} ${fmt(p[k].bytes)} B on tile ${p[k].tile} at ${p[k].step}`);
  if (D.slack) rows.push(`slack ${fmt(D.slack.bytes)} B on tile ${D.slack.tile}`);
  if (D.sweep) rows.push("rows: a model, target, depth and option values; columns: batch; modeled latency of each FIT");
  $("summary").textContent = rows.join(" · ");
}

// ---- memory: tiles x steps -------------------------------------------------------------------------
let M = null, region = "total", selected = null;
function liveOf(g, s) { const G = M.groups[g];
  return region === "region0" ? G.r0[s] : region === "region1" ? G.r1[s] : G.r0[s] + G.r1[s]; }
function stepName(s) { return (M.step_names && M.step_names[s]) || `step ${s}`; }
let scaleMode = (D.options && D.options.scale) || "auto";
const RAMP = [[13, 8, 135], [84, 2, 163], [139, 10, 165], [185, 50, 137], [219, 92, 104], [244, 136, 73], [254, 188, 43], [240, 249, 33]];
function rampAt(f) { f = Math.max(0, Math.min(1, f)) * (RAMP.length - 1);
  const k = Math.min(RAMP.length - 2, Math.floor(f)), u = f - k;
  return [0, 1, 2].map(ch => RAMP[k][ch] * (1 - u) + RAMP[k + 1][ch] * u); }
function drawHeat() {
  const c = $("heat"), T = M.tile_group.length, S = M.steps;
  c.width = S; c.height = T;
  const ctx = c.getContext("2d"), img = ctx.createImageData(S, T);
  let max = 1;
  for (let g = 0; g < M.groups.length; g++) for (let s = 0; s < S; s++) max = Math.max(max, liveOf(g, s));
  const cap = region === "region0" ? M.region0 : region === "region1" ? M.usable - M.region0 : M.usable;
  const top = scaleMode === "fixed" ? cap : max;
  for (let t = 0; t < T; t++) { const g = M.tile_group[t];
    for (let s = 0; s < S; s++) { const rgb = rampAt(liveOf(g, s) / top), i = 4 * (t * S + s);
      img.data[i] = rgb[0]; img.data[i + 1] = rgb[1]; img.data[i + 2] = rgb[2]; img.data[i + 3] = 255; } }
  ctx.putImageData(img, 0, 0);
  // axes and the colour bar around the heat map
  const a = $("heataxes"), ax = a.getContext("2d"), box = { l: 70, t: 10, w: 820, h: 430 };
  ax.clearRect(0, 0, a.width, a.height);
  ax.save(); ax.translate(0, 0);
  // tiles run downwards: label ticks from the top
  ax.strokeStyle = "#333"; ax.fillStyle = "#333"; ax.font = "11px system-ui, sans-serif"; ax.textAlign = "right"; ax.textBaseline = "middle";
  ax.beginPath(); ax.moveTo(box.l, box.t); ax.lineTo(box.l, box.t + box.h); ax.lineTo(box.l + box.w, box.t + box.h); ax.stroke();
  for (const v of niceTicks(T - 1, 6)) { const y = box.t + (v + 0.5) / T * box.h;
    ax.beginPath(); ax.moveTo(box.l - 4, y); ax.lineTo(box.l, y); ax.stroke(); ax.fillText(String(v), box.l - 6, y); }
  ax.textAlign = "center"; ax.textBaseline = "top";
  for (const v of niceTicks(S - 1, 8)) { const x = box.l + (v + 0.5) / S * box.w;
    ax.beginPath(); ax.moveTo(x, box.t + box.h); ax.lineTo(x, box.t + box.h + 4); ax.stroke(); ax.fillText(String(v), x, box.t + box.h + 6); }
  ax.fillText("program step (supersteps in schedule order)", box.l + box.w / 2, box.t + box.h + 24);
  ax.translate(14, box.t + box.h / 2); ax.rotate(-Math.PI / 2); ax.textBaseline = "middle"; ax.fillText("tile", 0, 0); ax.restore();
  const bx = box.l + box.w + 24, bw = 16;
  for (let y = 0; y < box.h; y++) { const rgb = rampAt(1 - y / box.h); ax.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`; ax.fillRect(bx, box.t + y, bw, 1); }
  ax.strokeStyle = "#333"; ax.strokeRect(bx, box.t, bw, box.h); ax.fillStyle = "#333"; ax.font = "11px system-ui, sans-serif";
  ax.textAlign = "left"; ax.textBaseline = "middle";
  for (const v of byteTicks(top, 5)) { const y = box.t + box.h - v / top * box.h; ax.fillText(kib(v), bx + bw + 4, y); }
  $("heatscale").textContent = `colour: live bytes of ${region}, 0 B (dark) to ${kib(top)} (yellow), ` +
    (scaleMode === "fixed" ? `fixed at the tile's capacity (${fmt(cap)} B)` : `auto: the fullest cell (${fmt(max)} B of ${fmt(cap)} B capacity)`);
  $("heatnote").textContent = `${T} tiles (down) × ${S} steps (right). Hover for a cell, click for the tile's address map.`;
}
function cellAt(ev) { const c = $("heat"), r = c.getBoundingClientRect();
  const s = Math.floor((ev.clientX - r.left) / r.width * M.steps), t = Math.floor((ev.clientY - r.top) / r.height * M.tile_group.length);
  return [Math.max(0, Math.min(M.tile_group.length - 1, t)), Math.max(0, Math.min(M.steps - 1, s))]; }
function largest(g, s, n) { return M.groups[g].buffers.filter(b => b[3] <= s && s <= b[4]).sort((a, b) => b[2] - a[2]).slice(0, n); }
function heatHover(ev) { const [t, s] = cellAt(ev), g = M.tile_group[t], G = M.groups[g];
  const big = largest(g, s, 3).map(b => `${M.names[b[0]]} ${fmt(b[2])} B`).join("<br>");
  showTip(ev, `<b>tile ${t}</b> · ${stepName(s)}<br>live ${fmt(G.r0[s] + G.r1[s])} B (region 0 ${fmt(G.r0[s])}, ` +
    `region 1 ${fmt(G.r1[s])})<br><i>largest</i><br>${big}`); }
function heatClick(ev) { const [t] = cellAt(ev); selectTile(t); }
function selectTile(t) { selected = t; drawPlacement(); }
let rects = [];
function drawPlacement() {
  const t = selected, g = M.tile_group[t], G = M.groups[g], c = $("place"), ctx = c.getContext("2d");
  const CW = c.width = 960, CH = c.height = 540, S = M.steps, top = M.usable;
  const box = { l: 70, t: 8, w: CW - 90, h: CH - 48 }, W = box.w, H = box.h;
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, CW, CH); ctx.fillStyle = "#fafafa"; ctx.fillRect(box.l, box.t, W, H);
  const y = (a) => box.t + H - (a / top) * H, x = (s) => box.l + (s / S) * W;
  rects = [];
  for (const b of G.buffers) { const [n, off, size, f, l] = b;
    const a = off, r = { x: x(f), y: y(a + size), w: Math.max(1, x(l + 1) - x(f)), h: Math.max(1, y(a) - y(a + size)), b };
    const fixed = f === 0 && l === S - 1 && off < M.region0 && /reserv|slot|trampoline|aperture|runtime|code/.test(M.names[n]);
    ctx.fillStyle = fixed ? "#9e9e9e" : hue(n); ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.strokeStyle = "rgba(0,0,0,.25)"; ctx.strokeRect(r.x, r.y, r.w, r.h); rects.push(r); }
  ctx.strokeStyle = "#c62828"; ctx.setLineDash([6, 4]); ctx.beginPath(); ctx.moveTo(box.l, y(M.region0)); ctx.lineTo(box.l + W, y(M.region0)); ctx.stroke();
  ctx.setLineDash([]); ctx.fillStyle = "#c62828"; ctx.fillText("end of region 0 (executable)", box.l + 6, y(M.region0) - 4);
  axes(ctx, box, S, top, "program step", "address offset", (v) => String(Math.round(v)), kib);
  $("placetitle").textContent = `tile ${t}: ${G.buffers.length} buffers (placement group ${g}); address (up) × step (right)`;
}
function placeHover(ev) { const c = $("place"), r = c.getBoundingClientRect();
  const px = (ev.clientX - r.left) * c.width / r.width, py = (ev.clientY - r.top) * c.height / r.height;
  const hit = rects.find(q => px >= q.x && px <= q.x + q.w && py >= q.y && py <= q.y + q.h);
  if (!hit) return hideTip(); const [n, off, size, f, l] = hit.b;
  showTip(ev, `<b>${M.names[n]}</b><br>[0x${(M.base + off).toString(16)}, +${fmt(size)}) · steps ${stepName(f)} … ${stepName(l)}`); }

// ---- exchange ------------------------------------------------------------------------------------------
function drawExchange() {
  const X = D.exchange; if (!X) return;
  const vals = X.tables || X.tables_allocated; const lim = X.tables_limit;
  const c = $("xchg"), ctx = c.getContext("2d"); c.width = 960; c.height = 200;
  const bar = (cv, cx, data, limit, colour, ylabel, yfmt) => {
    const box = { l: 70, t: 8, w: cv.width - 90, h: cv.height - 48 }, max = Math.max(limit || 1, ...data), bw = box.w / data.length;
    cx.fillStyle = colour; data.forEach((v, t) => { const h = v / max * box.h; cx.fillRect(box.l + t * bw, box.t + box.h - h, Math.max(1, bw - 0.2), h); });
    if (limit) { cx.strokeStyle = "#c62828"; const yl = box.t + box.h - limit / max * box.h; cx.beginPath(); cx.moveTo(box.l, yl); cx.lineTo(box.l + box.w, yl); cx.stroke(); }
    axes(cx, box, data.length, max, "tile", ylabel, (v) => String(Math.round(v)), yfmt); };
  if (vals) bar(c, ctx, vals, lim, "#1565c0", "table bytes", kib);
  const f = $("frag"), fx = f.getContext("2d"); f.width = 960; f.height = 140;
  if (X.pieces) bar(f, fx, X.pieces, X.fragments_limit, "#6a1b9a", "pieces", (v) => fmt(Math.round(v)));
  else { f.style.display = "none"; }
  const s = X.summary || {}, tb = s.tables || {}, fr = s.fragments || {};
  $("xnote").textContent = `exchange tables per tile (${X.tables ? "encoded from the package's runs" : "allocated, whole elements"})` +
    ` against the limit of ${fmt(lim)} B (red)` + (X.pieces ? `; below, transfer pieces sent and received per tile against the ${fmt(X.fragments_limit)} fragment limit` : "") +
    `. Busiest: ${fmt(tb.bytes)} B on tile ${tb.tile}; fragments ${fmt(fr.count)} on tile ${fr.tile} of ${fmt(fr.limit)}.`;
  const tbl = $("xlargest"); tbl.innerHTML = "";
  for (const r of (X.largest || [])) { const tr = el("tr"); for (const v of [r.op, r.name, fmt(r.runs), fmt(r.busiest_bytes)]) tr.appendChild(el("td", {}, v)); tbl.appendChild(tr); }
}

// ---- time ------------------------------------------------------------------------------------------------
function drawTime() {
  const T = D.time; if (!T) return;
  const rows = T.profile || T.supersteps; const c = $("time"), ctx = c.getContext("2d");
  const n = rows ? rows.length : 0; c.width = 960; c.height = 240;
  const box = { l: 70, t: 8, w: 870, h: 192 };
  if (rows) { const tot = rows.map(r => r.compute + r.exchange + r.sync), max = Math.max(1, ...tot), bw = box.w / Math.max(1, n);
    rows.forEach((r, i) => { let y = box.t + box.h;
      for (const [k, col] of [["compute", "#2e7d32"], ["exchange", "#1565c0"], ["sync", "#9e9e9e"]]) {
        const h = r[k] / max * box.h; ctx.fillStyle = col; ctx.fillRect(box.l + i * bw, y - h, Math.max(1, bw - 0.5), h); y -= h; } });
    axes(ctx, box, n, max, T.profile ? "superstep (as run)" : "superstep (Repeat body once)", "cycles", (v) => String(Math.round(v)), (v) => fmt(Math.round(v))); }
  const b = T.breakdown || {}; $("tnote").textContent = `modeled ${fmt(T.modeled)} cycles: compute ${fmt(b.compute)}, exchange ` +
    `${fmt(b.exchange)}, sync ${fmt(b.sync)}` + (T.profile ? "; bars from the emulator's run profile (modeled cycles per superstep)" : rows ? "; per superstep (Repeat body once)" : "");
  const tbl = $("tkinds"); tbl.innerHTML = "";
  for (const [k, v] of Object.entries(b.by_kind || {})) { const tr = el("tr");
    for (const x of [k, fmt(v.compute), fmt(v.exchange), fmt(v.sync), fmt(v.total)]) tr.appendChild(el("td", {}, x)); tbl.appendChild(tr); }
  c.onmousemove = (ev) => { if (!rows) return; const r = c.getBoundingClientRect();
    const i = Math.floor(((ev.clientX - r.left) * c.width / r.width - box.l) / box.w * n);
    const q = rows[Math.max(0, Math.min(n - 1, i))]; showTip(ev, `<b>${q.name}</b>${q.iteration !== undefined ? " iteration " + q.iteration : ""}` +
      `<br>compute ${fmt(q.compute)} · exchange ${fmt(q.exchange)} · sync ${fmt(q.sync)}` + (q.emulator_seconds !== undefined ? `<br>emulator ${q.emulator_seconds} s` : "")); };
  c.onmouseleave = hideTip;
}

// ---- infeasible --------------------------------------------------------------------------------------------
function drawInfeasible() {
  const I = D.infeasible; if (!I) return; const sec = $("infeasible"); sec.style.display = "block";
  document.body.insertBefore(sec, $("summary").nextSibling);  // an INFEASIBLE page leads with why
  const e = I.explanation;
  $("ihead").textContent = e ? `The least-overflowing plan lacks ${fmt(e.deficit_bytes)} B on tile ${e.tile} at ${e.step} ` +
    `(it needs ${fmt(e.needs_usable_bytes)} B of ${fmt(e.usable_bytes)} B usable)` +
    (e.tables_over ? `; exchange tables over by ${fmt(e.tables_over)} B` : "") + (e.fragments_over ? `; fragments over by ${fmt(e.fragments_over)}` : "") +
    `. ${(I.core && I.core.scope) || ""}.` : (I.headline || `certificate: ${I.kind}; ${(I.core && I.core.scope) || ""}`);
  const live = $("ilive"); live.innerHTML = "";
  for (const c of (e && e.contributors || []).slice(0, 12)) { const tr = el("tr"); tr.appendChild(el("td", {}, c.tensor)); tr.appendChild(el("td", {}, fmt(c.bytes))); live.appendChild(tr); }
  const alt = $("ialt"); alt.innerHTML = "";
  for (const a of (e && e.alternatives || []).slice(0, 8)) alt.appendChild(el("li", {}, `${a.op}: ${a.chosen} → ${a.cheapest_here} saves ${fmt(a.saves)} B`));
  $("icert").textContent = `Proof (certificate.json, ${I.kind || "?"}; \`ipuplan check\` re-proves it): each row is a tile and ` +
    "program point whose capacity is below what the cheapest choice of every op there needs, whatever else is chosen.";
  const tbl = $("irows"); tbl.innerHTML = "";
  for (const r of I.rows || []) { const tr = el("tr");
    const contrib = (r.cheapest_by_group || []).slice(0, 4).map(x => `${x.group}: ${x.cheapest} (${fmt(x.bytes)} B)`).join("; ");
    const over = (r.cheapest_bytes || 0) - (r.capacity || 0);
    for (const v of [r.name, fmt(r.capacity), fmt(r.cheapest_bytes), over > 0 ? fmt(over) : "", contrib]) tr.appendChild(el("td", {}, v));
    tbl.appendChild(tr); }
  const w = Object.entries(I.what_if || {}).map(([k, r]) => r && r.largest_fit !== undefined ?
    `what if ${k}: largest FIT ${r.largest_fit} (${r.fit_evidence || ""}), smallest INFEASIBLE ${r.smallest_infeasible} (${r.infeasible_evidence || ""})` :
    `what if ${k}: ${JSON.stringify(r)}`);
  $("iwhatif").textContent = w.length ? w.join("; ") : "no what-if answers yet (ipuplan explain DIR --what-if batch|layers|memory)";
}

function drawPipeline() {
  const P = D.pipeline; if (!P) return; $("pipeline").style.display = "block";
  const tbl = $("pgrid"), hd = el("tr");
  for (const h of ["stage", "layers", "cycles", "ms", "link cycles", "time (bar: slowest stage = full width)"])
    hd.appendChild(el("th", {}, h));
  tbl.appendChild(hd);
  const worst = Math.max(...P.stages.map(s => s.cycles + s.link_cycles));
  for (const s of P.stages) { const tr = el("tr");
    const ends = (s.stem ? " + stem" : "") + (s.head ? " + head" : "");
    const a = el("a", { href: s.dir + "/report.html" }, `stage ${s.index}`);
    const td0 = el("td"); td0.appendChild(a); tr.appendChild(td0);
    for (const v of [`${s.first}..${s.first + s.count - 1}${ends}`, fmt(s.cycles), s.ms.toFixed(3), fmt(s.link_cycles)])
      tr.appendChild(el("td", {}, v));
    const bar = el("td"), c = el("span"), l = el("span");
    c.style.cssText = `display:inline-block;height:12px;background:#4a7fb0;width:${(500 * s.cycles / worst).toFixed(1)}px`;
    l.style.cssText = `display:inline-block;height:12px;background:#d9a441;width:${(500 * s.link_cycles / worst).toFixed(1)}px`;
    bar.appendChild(c); bar.appendChild(l); tr.appendChild(bar); tbl.appendChild(tr); }
  const T = P.throughput, L = P.latency;
  $("pnote").textContent = `${P.ipus} chips: ${T.images_per_s.toFixed(1)} images/s modeled (stage ${T.bottleneck_stage} and ` +
    `its link, ${fmt(T.bottleneck_cycles)} cycles, set the pace); latency ${L.ms.toFixed(3)} ms. The machine bound over ` +
    `stages needs at least ${P.bound.fewest_ipus} chip(s). Partitions tried: ` +
    P.partitions.map(p => p.counts.join("+") + (p.score === null ? " (no plan on every stage)" : ` (${fmt(p.score)})`)).join(", ");
}

function drawSweep() {
  const W = D.sweep; if (!W) return; $("sweep").style.display = "block";
  $("title").textContent = D.head.model;
  const tbl = $("sgrid"), hd = el("tr"); hd.appendChild(el("th", {}, "model · target · depth · options"));
  for (const b of W.batches) hd.appendChild(el("th", {}, "b" + b)); hd.appendChild(el("th", {}, "boundary"));
  tbl.appendChild(hd);
  for (const r of W.rows) { const tr = el("tr"); tr.appendChild(el("td", {}, r.row));
    for (const b of W.batches) { const c = r.cases[String(b)] || {}, v = c.verdict || (c.status ? c.status : "");
      const td = el("td", { class: "cell " + v, title: c.name || "" }, v + (c.modeled_ms ? ` ${c.modeled_ms.toFixed(2)} ms` : "") + (c.checked === false ? " (check failed)" : ""));
      tr.appendChild(td); }
    tr.appendChild(el("td", {}, `largest FIT ${r.largest_fit ?? "-"}, smallest INFEASIBLE ${r.smallest_infeasible ?? "-"}` + (r.proven ? " (proven)" : "")));
    tbl.appendChild(tr); }
  const c = $("slat"), ctx = c.getContext("2d"); c.width = 960; c.height = 300;
  const box = { l: 70, t: 10, w: 860, h: 250 };
  const pts = W.rows.map(r => W.batches.map(b => (r.cases[String(b)] || {}).modeled_ms || null));
  const max = Math.max(1e-9, ...pts.flat().filter(x => x)), nb = Math.max(1, W.batches.length - 1), x = (i) => box.l + i * box.w / nb;
  axes(ctx, box, nb, max, "batch", "modeled latency (ms)", (i) => "b" + W.batches[Math.round(i)], (v, d) => v.toFixed(d),
       W.batches.map((_, i) => i));
  const lg = $("slegend"); lg.innerHTML = "";
  W.rows.forEach((r, k) => { const sp = el("span"); const sw = el("i"); sw.style.background = hue(k); sp.appendChild(sw);
    sp.appendChild(document.createTextNode(r.row)); lg.appendChild(sp); });
  pts.forEach((row, k) => { ctx.strokeStyle = hue(k); ctx.beginPath(); let on = false;
    row.forEach((v, i) => { if (v === null) { on = false; return; } const y = box.t + box.h - v / max * box.h;
      if (on) ctx.lineTo(x(i), y); else ctx.moveTo(x(i), y); on = true; ctx.fillStyle = hue(k); ctx.fillRect(x(i) - 2, y - 2, 4, 4); });
    ctx.stroke(); });
}

header();
drawSweep();
drawPipeline();
if (D.memory) { M = D.memory; drawHeat(); selectTile(D.peaks && D.peaks.total ? D.peaks.total.tile : 0);
  const h = $("heat"); h.onmousemove = heatHover; h.onmouseleave = hideTip; h.onclick = heatClick;
  const p = $("place"); p.onmousemove = placeHover; p.onmouseleave = hideTip;
  $("region").onchange = (e) => { region = e.target.value; drawHeat(); };
  $("scale").value = scaleMode; $("scale").onchange = (e) => { scaleMode = e.target.value; drawHeat(); };
  $("tile").onchange = (e) => selectTile(Math.max(0, Math.min(M.tile_group.length - 1, +e.target.value)));
} else { $("memory").style.display = "none"; }
if (!D.exchange) $("exchange").style.display = "none";
if (!D.time) $("timesec").style.display = "none";
drawExchange(); drawTime(); drawInfeasible();
document.body.setAttribute("data-rendered", "1");
