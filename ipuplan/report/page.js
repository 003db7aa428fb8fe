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
function drawHeat() {
  const c = $("heat"), T = M.tile_group.length, S = M.steps;
  c.width = S; c.height = T;
  const ctx = c.getContext("2d"), img = ctx.createImageData(S, T);
  let max = 1;
  for (let g = 0; g < M.groups.length; g++) for (let s = 0; s < S; s++) max = Math.max(max, liveOf(g, s));
  const cap = region === "region0" ? M.region0 : region === "region1" ? M.usable - M.region0 : M.usable;
  const ramp = [[13, 8, 135], [84, 2, 163], [139, 10, 165], [185, 50, 137], [219, 92, 104], [244, 136, 73], [254, 188, 43], [240, 249, 33]];
  for (let t = 0; t < T; t++) { const g = M.tile_group[t];
    for (let s = 0; s < S; s++) { const f = Math.min(1, liveOf(g, s) / cap) * (ramp.length - 1), i = 4 * (t * S + s);
      const k = Math.min(ramp.length - 2, Math.floor(f)), u = f - k;
      for (let ch = 0; ch < 3; ch++) img.data[i + ch] = ramp[k][ch] * (1 - u) + ramp[k + 1][ch] * u;
      img.data[i + 3] = 255; } }
  ctx.putImageData(img, 0, 0);
  $("heatnote").textContent = `${T} tiles (down) × ${S} steps (right); colour: live bytes of ${region}, dark 0 to ` +
    `yellow ${fmt(cap)} B (fullest cell ${fmt(max)} B). Hover for a cell, click for the tile's address map.`;
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
  const W = c.width = 900, H = c.height = 520, S = M.steps, top = M.usable;
  ctx.fillStyle = "#fafafa"; ctx.fillRect(0, 0, W, H);
  const y = (a) => H - (a / top) * H, x = (s) => (s / S) * W;
  rects = [];
  for (const b of G.buffers) { const [n, off, size, f, l] = b;
    const a = off, r = { x: x(f), y: y(a + size), w: Math.max(1, x(l + 1) - x(f)), h: Math.max(1, y(a) - y(a + size)), b };
    const fixed = f === 0 && l === S - 1 && off < M.region0 && /reserv|slot|trampoline|aperture|runtime|code/.test(M.names[n]);
    ctx.fillStyle = fixed ? "#9e9e9e" : hue(n); ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.strokeStyle = "rgba(0,0,0,.25)"; ctx.strokeRect(r.x, r.y, r.w, r.h); rects.push(r); }
  ctx.strokeStyle = "#c62828"; ctx.setLineDash([6, 4]); ctx.beginPath(); ctx.moveTo(0, y(M.region0)); ctx.lineTo(W, y(M.region0)); ctx.stroke();
  ctx.setLineDash([]); ctx.fillStyle = "#c62828"; ctx.fillText("end of region 0 (executable)", 6, y(M.region0) - 4);
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
  const c = $("xchg"), ctx = c.getContext("2d"); c.width = 900; c.height = 160;
  if (vals) { const max = Math.max(lim || 1, ...vals), bw = c.width / vals.length;
    ctx.fillStyle = "#1565c0"; vals.forEach((v, t) => { const h = v / max * 150; ctx.fillRect(t * bw, 160 - h, Math.max(1, bw - 0.2), h); });
    if (lim) { ctx.strokeStyle = "#c62828"; const yl = 160 - lim / max * 150; ctx.beginPath(); ctx.moveTo(0, yl); ctx.lineTo(c.width, yl); ctx.stroke(); } }
  const f = $("frag"), fx = f.getContext("2d"); f.width = 900; f.height = 100;
  if (X.pieces) { const fl = X.fragments_limit || 1, fmax = Math.max(fl, ...X.pieces), bw = f.width / X.pieces.length;
    fx.fillStyle = "#6a1b9a"; X.pieces.forEach((v, t) => { const h = v / fmax * 92; fx.fillRect(t * bw, 100 - h, Math.max(1, bw - 0.2), h); });
    fx.strokeStyle = "#c62828"; const yl = 100 - fl / fmax * 92; fx.beginPath(); fx.moveTo(0, yl); fx.lineTo(f.width, yl); fx.stroke();
  } else { f.style.display = "none"; }
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
  const n = rows ? rows.length : 0; c.width = Math.max(300, n * 4); c.height = 200;
  if (rows) { const tot = rows.map(r => r.compute + r.exchange + r.sync), max = Math.max(1, ...tot);
    rows.forEach((r, i) => { let y = 200;
      for (const [k, col] of [["compute", "#2e7d32"], ["exchange", "#1565c0"], ["sync", "#9e9e9e"]]) {
        const h = r[k] / max * 190; ctx.fillStyle = col; ctx.fillRect(i * 4, y - h, 3, h); y -= h; } }); }
  const b = T.breakdown || {}; $("tnote").textContent = `modeled ${fmt(T.modeled)} cycles: compute ${fmt(b.compute)}, exchange ` +
    `${fmt(b.exchange)}, sync ${fmt(b.sync)}` + (T.profile ? "; bars from the emulator's run profile (modeled cycles per superstep)" : rows ? "; per superstep (Repeat body once)" : "");
  const tbl = $("tkinds"); tbl.innerHTML = "";
  for (const [k, v] of Object.entries(b.by_kind || {})) { const tr = el("tr");
    for (const x of [k, fmt(v.compute), fmt(v.exchange), fmt(v.sync), fmt(v.total)]) tr.appendChild(el("td", {}, x)); tbl.appendChild(tr); }
  c.onmousemove = (ev) => { if (!rows) return; const r = c.getBoundingClientRect(), i = Math.floor((ev.clientX - r.left) / r.width * n);
    const q = rows[Math.max(0, Math.min(n - 1, i))]; showTip(ev, `<b>${q.name}</b>${q.iteration !== undefined ? " iteration " + q.iteration : ""}` +
      `<br>compute ${fmt(q.compute)} · exchange ${fmt(q.exchange)} · sync ${fmt(q.sync)}` + (q.emulator_seconds !== undefined ? `<br>emulator ${q.emulator_seconds} s` : "")); };
  c.onmouseleave = hideTip;
}

// ---- infeasible --------------------------------------------------------------------------------------------
function drawInfeasible() {
  const I = D.infeasible; if (!I) return; $("infeasible").style.display = "block";
  $("ihead").textContent = I.headline || `certificate: ${I.kind}; ${(I.core && I.core.scope) || ""}`;
  const tbl = $("irows"); tbl.innerHTML = "";
  for (const r of I.rows || []) { const tr = el("tr");
    const contrib = (r.cheapest_by_group || []).slice(0, 4).map(x => `${x.group}: ${x.cheapest} (${fmt(x.bytes)} B)`).join("; ");
    for (const v of [r.name, fmt(r.capacity), fmt(r.cheapest_bytes), fmt((r.cheapest_bytes || 0) - (r.capacity || 0)), contrib]) tr.appendChild(el("td", {}, v));
    tbl.appendChild(tr); }
  const w = Object.entries(I.what_if || {}).map(([k, r]) => r && r.largest_fit !== undefined ?
    `what if ${k}: largest FIT ${r.largest_fit} (${r.fit_evidence || ""}), smallest INFEASIBLE ${r.smallest_infeasible} (${r.infeasible_evidence || ""})` :
    `what if ${k}: ${JSON.stringify(r)}`);
  $("iwhatif").textContent = w.length ? w.join("; ") : "no what-if answers yet (ipuplan explain DIR --what-if batch|layers|memory)";
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
    tr.appendChild(el("td", {}, `largest FIT ${r.largest_fit ?? "-"}, smallest INFEASIBLE ${r.smallest_infeasible ?? "-"}`));
    tbl.appendChild(tr); }
  const c = $("slat"), ctx = c.getContext("2d"); c.width = 900; c.height = 260;
  const pts = W.rows.map(r => W.batches.map(b => (r.cases[String(b)] || {}).modeled_ms || null));
  const max = Math.max(1e-9, ...pts.flat().filter(x => x)), x = (i) => 40 + i * (840 / Math.max(1, W.batches.length - 1));
  ctx.fillStyle = "#555"; W.batches.forEach((b, i) => ctx.fillText("b" + b, x(i) - 6, 255));
  ctx.fillText(`${max.toFixed(2)} ms`, 2, 12);
  pts.forEach((row, k) => { ctx.strokeStyle = hue(k); ctx.beginPath(); let on = false;
    row.forEach((v, i) => { if (v === null) { on = false; return; } const y = 240 - v / max * 220;
      if (on) ctx.lineTo(x(i), y); else ctx.moveTo(x(i), y); on = true; ctx.fillStyle = hue(k); ctx.fillRect(x(i) - 2, y - 2, 4, 4); });
    ctx.stroke(); });
}

header();
drawSweep();
if (D.memory) { M = D.memory; drawHeat(); selectTile(D.peaks && D.peaks.total ? D.peaks.total.tile : 0);
  const h = $("heat"); h.onmousemove = heatHover; h.onmouseleave = hideTip; h.onclick = heatClick;
  const p = $("place"); p.onmousemove = placeHover; p.onmouseleave = hideTip;
  $("region").onchange = (e) => { region = e.target.value; drawHeat(); };
  $("tile").onchange = (e) => selectTile(Math.max(0, Math.min(M.tile_group.length - 1, +e.target.value)));
} else { $("memory").style.display = "none"; }
if (!D.exchange) $("exchange").style.display = "none";
if (!D.time) $("timesec").style.display = "none";
drawExchange(); drawTime(); drawInfeasible();
document.body.setAttribute("data-rendered", "1");
