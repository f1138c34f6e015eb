#include "tools/viz/html_viewer.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>

#include "tools/viz/colour_scale.hpp"
#include "tools/viz/viz.hpp"

namespace wse::viz {
namespace {

// The page, split where the data goes. Everything it needs is inline: no fonts, scripts or
// images are fetched, so it opens from a file on a machine without network.
constexpr const char* kHead = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>wse viz</title>
<style>
  :root { --bg:#17181c; --panel:#23252b; --line:#33363e; --text:#e4e5e9; --dim:#9a9ca5; --accent:#fde725; }
  * { box-sizing: border-box; }
  html, body { margin:0; height:100%; background:var(--bg); color:var(--text);
    font:13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
  body { display:flex; flex-direction:column; }
  header { padding:10px 16px 6px; display:flex; align-items:baseline; gap:14px; flex-wrap:wrap; }
  header h1 { font-size:17px; margin:0; font-weight:600; letter-spacing:.02em; }
  header #meta { color:var(--dim); }
  #toolbar { display:flex; align-items:center; gap:10px; padding:6px 16px 10px; flex-wrap:wrap;
    border-bottom:1px solid var(--line); }
  #toolbar label { color:var(--dim); }
  select, button { background:var(--panel); color:var(--text); border:1px solid var(--line); border-radius:5px;
    padding:4px 9px; font:inherit; cursor:pointer; }
  button:hover, select:hover { border-color:#555a66; }
  #slider { width:240px; accent-color:#35b779; }
  #interval-label { color:var(--dim); min-width:220px; font-variant-numeric:tabular-nums; }
  .sep { width:1px; height:20px; background:var(--line); }
  #note { display:none; margin:8px 16px 0; padding:6px 10px; border-left:3px solid var(--accent);
    background:#2a2a22; color:#e9e3b5; }
  main { flex:1; display:flex; min-height:0; }
  #stage { flex:1; position:relative; min-width:0; }
  #mesh { position:absolute; inset:0; width:100%; height:100%; cursor:crosshair; display:block; }
  #mesh.dragging { cursor:grabbing; }
  aside { width:330px; border-left:1px solid var(--line); padding:12px 14px; overflow:auto; background:var(--panel); }
  aside h2 { font-size:12px; text-transform:uppercase; letter-spacing:.08em; color:var(--dim); margin:0 0 6px; font-weight:600; }
  #legend { margin-bottom:16px; }
  #legend-bar { width:100%; height:14px; display:block; border-radius:3px; }
  #legend-labels, .labels { display:flex; justify-content:space-between; color:var(--dim); font-variant-numeric:tabular-nums; margin-top:2px; }
  #pe-title { font-size:15px; font-weight:600; margin:0 0 2px; }
  #pe-sub { color:var(--dim); margin-bottom:8px; }
  table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
  th { text-align:right; color:var(--dim); font-weight:500; padding:2px 4px; border-bottom:1px solid var(--line); }
  th:first-child { text-align:left; }
  td { padding:3px 4px; border-bottom:1px solid #2c2f36; text-align:right; white-space:nowrap; }
  td:first-child { text-align:left; white-space:normal; word-break:break-word; }
  tr.current td { color:var(--accent); }
  td.unit { color:var(--dim); text-align:left; }
  .hint { color:var(--dim); }
  #link-legend { margin:-8px 0 16px; }
  #link-bar { width:100%; height:10px; display:block; border-radius:3px; }
  .swatch { display:inline-block; width:10px; height:10px; border-radius:2px; vertical-align:-1px; margin-right:4px; }
  #tl { margin-bottom:16px; }
  #tl-canvas { width:100%; display:block; background:#1b1d22; border-radius:3px; margin:6px 0; }
  #tl-table td:first-child { max-width:150px; }
</style>
<script>window.__errors = []; window.addEventListener("error", (e) => window.__errors.push(String(e.message)));</script>
</head>
<body>
<header><h1>wse viz</h1><span id="meta"></span></header>
<div id="toolbar">
  <label for="metric">metric</label><select id="metric"></select>
  <span class="sep"></span>
  <button id="play" title="play / pause (space)">&#9654; play</button>
  <input id="slider" type="range" min="0" max="0" value="0" step="1" title="interval (left / right arrows)">
  <span id="interval-label"></span>
  <span class="sep"></span>
  <label>zoom</label>
  <button id="zoom-in" title="zoom in (wheel)">+</button><button id="zoom-out" title="zoom out (wheel)">&minus;</button>
  <button id="zoom-fit" title="fit the mesh">fit</button>
  <span class="hint">drag to pan, click a PE for its timeline</span>
  <span class="sep"></span>
  <label><input type="checkbox" id="links" checked> links</label>
  <label for="colour">colour</label><select id="colour"><option value="-1">all colours</option></select>
</div>
<div id="note"></div>
<main>
  <div id="stage"><canvas id="mesh"></canvas></div>
  <aside>
    <div id="legend"><h2 id="legend-title">scale</h2><canvas id="legend-bar" width="300" height="14"></canvas>
      <div id="legend-labels"><span id="legend-lo">0</span><span id="legend-mid"></span><span id="legend-hi"></span></div></div>
    <div id="link-legend"><h2 id="link-title">links: utilization</h2><canvas id="link-bar" width="300" height="10"></canvas>
      <div class="labels"><span>0%</span><span>50%</span><span>100%</span></div>
      <div class="hint"><span class="swatch" style="background:rgb(255,45,85)"></span>backpressure (a wavelet waited for a credit)</div></div>
    <div id="tl"><h2>Timeline</h2><div id="tl-body" class="hint">Click a PE to see its tasks and DSD ops in the interval.</div></div>
    <h2>PE under the cursor</h2>
    <div id="pe-panel"><div class="hint">Hover a PE to see its counters.</div></div>
  </aside>
</main>
<script type="application/json" id="wse-data">)HTML";

constexpr const char* kTail = R"HTML(</script>
<script>
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("wse-data").textContent);
  const $ = (id) => document.getElementById(id);
  const canvas = $("mesh"), ctx = canvas.getContext("2d");
  const BG = "#17181c", RULER = 30, TOP = 20;
  const S = { metric: 0, frame: 0, playing: false, timer: null, scale: 1, ox: 0, oy: 0, fitted: true,
              hover: null, drag: null, links: true, colour: -1, pinned: null };
  const F = D.fabric || null, T = D.timeline || null;

  // The same colour table and interpolation as the PNGs (tools/viz/colour_scale.cpp).
  function viridis(t) {
    if (!(t > 0)) t = 0; if (t > 1) t = 1;
    const n = D.viridis.length - 1, pos = t * n, i = Math.min(Math.floor(pos), n - 1), f = pos - i;
    const a = D.viridis[i], b = D.viridis[i + 1];
    return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
  }
  const fmt = (v) => String(v);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  function short(v) {
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e5) return (v / 1e3).toFixed(0) + "k";
    return Number.isInteger(v) ? String(v) : v.toFixed(1);
  }

  const G = D.grid, B = D.block;
  const off = document.createElement("canvas");
  off.width = G.width; off.height = G.height;
  const offCtx = off.getContext("2d");
  const img = offCtx.createImageData(G.width, G.height);

  function paintOffscreen() {
    const m = D.metrics[S.metric], vals = m.frames[S.frame], hi = Math.max(1, m.max);
    for (let i = 0; i < vals.length; ++i) {
      const c = viridis(vals[i] / hi);
      img.data[4 * i] = c[0]; img.data[4 * i + 1] = c[1]; img.data[4 * i + 2] = c[2]; img.data[4 * i + 3] = 255;
    }
    offCtx.putImageData(img, 0, 0);
  }

  function resize() {
    const r = canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(r.width * dpr)); canvas.height = Math.max(1, Math.round(r.height * dpr));
    if (S.fitted) fit(); else draw();
  }
  function fit() {
    const r = canvas.getBoundingClientRect();
    const w = r.width - RULER - 12, h = r.height - TOP - 12;
    S.scale = Math.max(0.05, Math.min(w / G.width, h / G.height));
    S.ox = RULER + (w - G.width * S.scale) / 2; S.oy = TOP + (h - G.height * S.scale) / 2;
    S.fitted = true; draw();
  }
  function zoomAt(k, mx, my) {
    const ns = Math.min(400, Math.max(0.05, S.scale * k));
    k = ns / S.scale;
    S.ox = mx - (mx - S.ox) * k; S.oy = my - (my - S.oy) * k; S.scale = ns; S.fitted = false; draw();
  }

  function niceStep(pxPerCell, minPx) {
    for (let d = 1; ; d *= 10) for (const m of [1, 2, 5]) if (m * d * pxPerCell >= minPx) return m * d;
  }

  function draw() {
    const dpr = window.devicePixelRatio || 1, r = canvas.getBoundingClientRect();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = BG; ctx.fillRect(0, 0, r.width, r.height);
    ctx.imageSmoothingEnabled = false;
    const w = G.width * S.scale, h = G.height * S.scale;
    ctx.drawImage(off, S.ox, S.oy, w, h);
    if (S.scale >= 10) {  // cell borders once cells are big enough to tell apart
      ctx.strokeStyle = "rgba(0,0,0,0.25)"; ctx.lineWidth = 1; ctx.beginPath();
      for (let x = 0; x <= G.width; ++x) { const px = Math.round(S.ox + x * S.scale) + 0.5; ctx.moveTo(px, S.oy); ctx.lineTo(px, S.oy + h); }
      for (let y = 0; y <= G.height; ++y) { const py = Math.round(S.oy + y * S.scale) + 0.5; ctx.moveTo(S.ox, py); ctx.lineTo(S.ox + w, py); }
      ctx.stroke();
    }
    drawLinks();
    if (S.pinned) {
      ctx.strokeStyle = "#fde725"; ctx.lineWidth = 2;
      ctx.strokeRect(S.ox + S.pinned.cx * S.scale - 1, S.oy + S.pinned.cy * S.scale - 1, S.scale + 2, S.scale + 2);
    }
    if (S.hover) {
      ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2;
      ctx.strokeRect(S.ox + S.hover.cx * S.scale - 1, S.oy + S.hover.cy * S.scale - 1, S.scale + 2, S.scale + 2);
    }
    // Rulers with PE coordinates (x along the top, y down the left; y = 0 is the north edge).
    ctx.fillStyle = BG; ctx.fillRect(0, 0, r.width, TOP); ctx.fillRect(0, 0, RULER, r.height);
    ctx.fillStyle = "#9a9ca5"; ctx.font = "10px system-ui, sans-serif";
    ctx.textAlign = "center"; ctx.textBaseline = "middle";
    const sx = niceStep(S.scale / B, 8 + 7 * String(D.mesh.width).length);
    for (let x = 0; x < D.mesh.width; x += sx) {
      const px = S.ox + (Math.floor(x / B) + 0.5) * S.scale;
      if (px >= RULER && px <= r.width) ctx.fillText(String(x), px, TOP / 2);
    }
    ctx.textAlign = "right";
    const sy = niceStep(S.scale / B, 14);
    for (let y = 0; y < D.mesh.height; y += sy) {
      const py = S.oy + (Math.floor(y / B) + 0.5) * S.scale;
      if (py >= TOP && py <= r.height) ctx.fillText(String(y), RULER - 4, py);
    }
  }

  // --- the fabric: a segment per link, from a cell towards its neighbour, on the right-hand side
  // of its direction of travel (so the two directions between two PEs sit side by side).
  const DIRS = [[0, -1], [1, 0], [0, 1], [-1, 0]];
  const LINK_STOPS = [[44, 123, 182], [171, 217, 233], [255, 255, 255]], BP = [255, 45, 85];
  function linkColour(u) {
    if (!(u > 0)) u = 0; if (u > 1) u = 1;
    const i = u < 0.5 ? 0 : 1, f = u < 0.5 ? u * 2 : (u - 0.5) * 2, a = LINK_STOPS[i], b = LINK_STOPS[i + 1];
    return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
  }
  function intervalLength(i) { const iv = D.intervals[i]; return Math.max(1, iv[1] - iv[0]); }
  // The links to draw in this interval under the colour filter: [link index, wavelets, backpressure].
  function linkValues() {
    const out = [];
    if (!F) return out;
    if (S.colour < 0) {
      const w = F.wavelets[S.frame], b = F.backpressure[S.frame];
      for (let i = 0; i < F.links.length; ++i) if (w[i] || b[i]) out.push([i, w[i], b[i]]);
    } else {
      const c = F.colours[S.colour], w = c.wavelets[S.frame], b = c.backpressure[S.frame];
      for (let j = 0; j < c.links.length; ++j) if (w[j] || b[j]) out.push([c.links[j], w[j], b[j]]);
    }
    return out;
  }
  function linkGeom(i) {
    const [cx, cy, d] = F.links[i], s = S.scale, [dx, dy] = DIRS[d];
    const x0 = S.ox + (cx + 0.5) * s, y0 = S.oy + (cy + 0.5) * s, off = 0.16 * s, px = -dy * off, py = dx * off;
    const a = { x: x0 + dx * 0.2 * s + px, y: y0 + dy * 0.2 * s + py }, b = { x: x0 + dx * 0.8 * s + px, y: y0 + dy * 0.8 * s + py };
    return { a, b, mid: { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 },
             bp: { x: a.x + (b.x - a.x) * 0.12, y: a.y + (b.y - a.y) * 0.12 }, width: Math.max(1.5, 0.13 * s) };
  }
  function drawLinks() {
    if (!F || !S.links || S.scale < 3) return;
    const len = intervalLength(S.frame);
    ctx.lineCap = "butt";
    for (const [i, w, b] of linkValues()) {
      const g = linkGeom(i);
      ctx.strokeStyle = "rgba(0,0,0,0.85)"; ctx.lineWidth = g.width + 2;
      ctx.beginPath(); ctx.moveTo(g.a.x, g.a.y); ctx.lineTo(g.b.x, g.b.y); ctx.stroke();
      ctx.strokeStyle = `rgb(${linkColour(w / len)})`; ctx.lineWidth = g.width;
      ctx.beginPath(); ctx.moveTo(g.a.x, g.a.y); ctx.lineTo(g.b.x, g.b.y); ctx.stroke();
      if (b > 0) {  // where the wavelet waited: a marker at the link's start
        const r = g.width / 2 + 1.5;
        ctx.fillStyle = `rgb(${BP})`; ctx.fillRect(g.bp.x - r, g.bp.y - r, 2 * r, 2 * r);
      }
    }
  }
  function drawLinkLegend() {
    const lc = $("link-bar"), lx = lc.getContext("2d");
    for (let x = 0; x < lc.width; ++x) { lx.fillStyle = `rgb(${linkColour(x / (lc.width - 1))})`; lx.fillRect(x, 0, 1, lc.height); }
    $("link-title").textContent = (S.colour < 0 ? "links: utilization, all colours" : `links: utilization of colour ${F.colours[S.colour].colour}`) +
      (B > 1 ? ", max over a block edge" : "");
    $("link-legend").style.display = F ? "block" : "none";
  }

  // --- a PE's timeline: its threads' tasks and DSD ops in the current interval.
  const TL_COLOURS = ["#35b779", "#31688e", "#fde725", "#6ece58", "#b5de2b", "#1f9e89", "#26828e", "#3e4989", "#90d743", "#c8e020"];
  function timelineBars() {
    if (!T || !S.pinned || B !== 1) return [];
    const threads = T.pes[`${S.pinned.cx},${S.pinned.cy}`] || {};
    const [s, e] = D.intervals[S.frame], out = [];
    for (const th of Object.keys(threads).map(Number).sort((a, b) => a - b)) {
      const v = threads[th];
      for (let k = 0; k < v.length; k += 4)
        if (v[k + 1] > s && v[k] < e) out.push({ thread: th, start: v[k], end: v[k + 1], name: T.names[v[k + 2]], count: v[k + 3] });
    }
    return out;
  }
  // Why a PE shows no bars where the trace left it out (its scope: wse trace --pes, --from/--to,
  // --detail counters), so an untraced PE or interval is not taken for one that ran nothing.
  function untraced(sc, x, y, s, e) {
    if (!sc) return "";
    if (!sc.pe_slices) return "The trace holds no PE slices (wse trace --detail counters): this PE's tasks and ops were not recorded.";
    if (x < sc.x0 || x >= sc.x1 || y < sc.y0 || y >= sc.y1)
      return `PE (${x}, ${y}) was not traced (the trace's PEs: wse trace --pes ${sc.x0},${sc.y0},${sc.x1 - 1},${sc.y1 - 1}).`;
    const to = sc.to === null ? Infinity : sc.to;
    if (e <= sc.from || s >= to)
      return `Cycles ${s}–${e} lie outside the traced window (wse trace --from ${sc.from}${sc.to === null ? "" : " --to " + sc.to}).`;
    if (s < sc.from || e > to) return `Only cycles ${Math.max(s, sc.from)}–${Math.min(e, to)} of this interval were traced (wse trace --from/--to).`;
    return "";
  }
  function updateTimeline() {
    const body = $("tl-body");
    if (!S.pinned) return;
    const x = S.pinned.cx * B, y = S.pinned.cy * B;
    if (!T) { body.innerHTML = '<div class="hint">No trace beside this dump (wse viz --trace DIR/trace.pftrace).</div>'; return; }
    if (B !== 1) { body.innerHTML = '<div class="hint">Timelines are shown when every cell is one PE (this page is downsampled).</div>'; return; }
    const [s, e] = D.intervals[S.frame], bars = timelineBars(), threads = [...new Set(bars.map((b) => b.thread))];
    const rowH = 16, W = 300, H = Math.max(1, threads.length) * rowH + 14;
    let html = `<div id="tl-title" data-x="${x}" data-y="${y}">PE (${x}, ${y}) · cycles ${s}–${e}</div>`;
    if (T.truncated && e > T.complete_until) html += `<div class="hint">bars from cycle ${T.complete_until} on may be missing (budget)</div>`;
    html += `<canvas id="tl-canvas" width="${W}" height="${H}" style="height:${H}px"></canvas>`;
    const why = untraced(T.scope, x, y, s, e);
    if (why) html += `<div class="hint" id="tl-untraced">${esc(why)}</div>`;
    else if (!bars.length) html += '<div class="hint">No task or DSD op in this interval.</div>';
    let rows = "";
    // Each row is the bar's part in this interval: where it starts in it and its cycles there. A
    // bar of N back-to-back repeats merged into one ("×N") may reach into the intervals beside;
    // its N and its whole span are the bar's, and said so (the table gave a merged bar's whole
    // count and cycles in every interval it touched: 131 tasks in a 1,000-cycle interval where
    // 67 began; a trace audit, forty-sixth round).
    bars.slice(0, 200).forEach((b) => {
      const from = Math.max(s, b.start), to = Math.min(e, b.end);
      const merged = b.count > 1 ? ` ×${b.count}${b.start < s || b.end > e ? ` (the bar, cycles ${b.start}–${b.end})` : ""}` : "";
      rows += `<tr class="tl-row"><td>${esc(b.name)}${merged}</td><td>${b.thread ? "ut" + (b.thread - 1) : "main"}</td>` +
        `<td>${from}</td><td>${to - from}</td></tr>`;
    });
    if (bars.length > 200) rows += `<tr><td colspan="4" class="hint">… ${bars.length - 200} more</td></tr>`;
    if (bars.length) html += `<table id="tl-table"><thead><tr><th>slice</th><th>thread</th><th>from</th><th>cycles here</th></tr></thead><tbody>${rows}</tbody></table>`;
    body.className = ""; body.innerHTML = html;
    const c = $("tl-canvas"), g = c.getContext("2d"), sx = (W - 40) / Math.max(1, e - s);
    g.fillStyle = "#9a9ca5"; g.font = "10px system-ui, sans-serif"; g.textBaseline = "middle";
    threads.forEach((th, r) => {
      g.fillStyle = "#9a9ca5"; g.fillText(th ? "ut" + (th - 1) : "main", 2, r * rowH + rowH / 2);
      for (const b of bars) if (b.thread === th) {
        const x0 = 40 + (Math.max(s, b.start) - s) * sx, x1 = 40 + (Math.min(e, b.end) - s) * sx;
        g.fillStyle = TL_COLOURS[T.names.indexOf(b.name) % TL_COLOURS.length];
        g.fillRect(x0, r * rowH + 2, Math.max(1, x1 - x0), rowH - 4);
      }
    });
    g.fillStyle = "#9a9ca5"; g.fillText(String(s), 40, H - 6); g.textAlign = "right"; g.fillText(String(e), W - 2, H - 6);
  }
  function pin(cx, cy) { S.pinned = { cx, cy }; updateTimeline(); draw(); }

  function drawLegend() {
    const m = D.metrics[S.metric], lc = $("legend-bar"), lx = lc.getContext("2d");
    // A metric that is 0 everywhere gets a bar of one colour and one label: a 0..1 scale would
    // claim values the run never had.
    const flat = !(m.max > 0);
    for (let x = 0; x < lc.width; ++x) { const c = viridis(flat ? 0 : x / (lc.width - 1)); lx.fillStyle = `rgb(${c})`; lx.fillRect(x, 0, 1, lc.height); }
    const hi = Math.max(1, m.max);
    $("legend-title").textContent = `${m.name} (${m.unit})` + (B > 1 ? ", max per block" : "");
    $("legend-lo").textContent = flat ? "" : "0"; $("legend-mid").textContent = flat ? "all 0" : short(hi / 2); $("legend-hi").textContent = flat ? "" : short(hi);
  }

  function intervalText(i) {
    const iv = D.intervals[i];
    return `interval ${i + 1} / ${D.intervals.length} \u00b7 cycles ${iv[0]}\u2013${iv[1]}`;
  }

  function updatePanel() {
    const p = $("pe-panel");
    if (!S.hover) { p.innerHTML = '<div class="hint">Hover a PE to see its counters.</div>'; return; }
    const { cx, cy } = S.hover, i = cy * G.width + cx;
    const x0 = cx * B, y0 = cy * B;
    const x1 = Math.min(D.mesh.width, x0 + B) - 1, y1 = Math.min(D.mesh.height, y0 + B) - 1;
    let title, sub;
    if (B === 1) { title = `PE (${x0}, ${y0})`; sub = intervalText(S.frame); }
    else { title = `PEs (${x0}\u2013${x1}, ${y0}\u2013${y1})`; sub = `block of ${B}\u00d7${B} PEs, maximum over the block \u00b7 ` + intervalText(S.frame); }
    let rows = "";
    D.metrics.forEach((m, k) => {
      const v = m.frames[S.frame][i];
      const run = m.run[i];
      rows += `<tr class="${k === S.metric ? "current" : ""}"><td>${esc(m.name)}</td>` +
        `<td class="v" data-metric="${esc(m.name)}">${fmt(v)}</td><td class="r" data-metric="${esc(m.name)}">${fmt(run)}</td>` +
        `<td class="unit">${esc(m.unit)}</td></tr>`;
    });
    p.innerHTML = `<div id="pe-title" data-x="${x0}" data-y="${y0}">${title}</div><div id="pe-sub">${sub}</div>` +
      `<table><thead><tr><th>counter</th><th>interval</th><th>run</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
  }

  function setFrame(f) {
    S.frame = (f + D.intervals.length) % D.intervals.length;
    $("slider").value = S.frame; $("interval-label").textContent = intervalText(S.frame);
    paintOffscreen(); draw(); updatePanel(); updateTimeline();
  }
  function setMetric(k) { S.metric = k; $("metric").value = k; drawLegend(); paintOffscreen(); draw(); updatePanel(); }
  function setPlaying(on) {
    S.playing = on; $("play").innerHTML = on ? "&#10074;&#10074; pause" : "&#9654; play";
    clearInterval(S.timer); if (on) S.timer = setInterval(() => setFrame(S.frame + 1), 600);
  }

  function cellAt(ev) {
    const r = canvas.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    const cx = Math.floor((mx - S.ox) / S.scale), cy = Math.floor((my - S.oy) / S.scale);
    return cx >= 0 && cy >= 0 && cx < G.width && cy < G.height ? { cx, cy } : null;
  }

  // --- wiring ---
  let meta = `mesh ${D.mesh.width}\u00d7${D.mesh.height}`;
  if (D.machine) meta += ` \u00b7 ${D.machine}`;
  if (D.layer) meta += ` \u00b7 layer ${D.layer}` + (D.pass ? ` (${D.pass})` : "");
  meta += ` \u00b7 ${D.intervals.length} interval${D.intervals.length === 1 ? "" : "s"} of ${D.interval_cycles} cycles \u00b7 ${D.cycles} cycles`;
  $("meta").textContent = meta;
  if (B > 1) {
    $("note").style.display = "block";
    $("note").textContent = `This ${D.mesh.width}\u00d7${D.mesh.height} mesh is downsampled for the page: each cell is a ` +
      `${B}\u00d7${B} block of PEs showing the maximum over the block (${G.width}\u00d7${G.height} cells). ` +
      `The PNGs next to this page (and wse viz --metric) have every PE.`;
  }
  D.metrics.forEach((m, k) => { const o = document.createElement("option"); o.value = k; o.textContent = `${m.name} (${m.unit})`; $("metric").appendChild(o); });
  $("metric").addEventListener("change", (e) => setMetric(Number(e.target.value)));
  if (F) F.colours.forEach((c, k) => { const o = document.createElement("option"); o.value = k; o.textContent = `c${c.colour}`; $("colour").appendChild(o); });
  function setColour(k) { S.colour = k; $("colour").value = String(k); drawLinkLegend(); draw(); }
  function setLinks(on) { S.links = on; $("links").checked = on; draw(); }
  $("colour").addEventListener("change", (e) => setColour(Number(e.target.value)));
  $("links").addEventListener("change", (e) => setLinks(e.target.checked));
  if (F && F.note) { $("note").style.display = "block"; $("note").textContent += " " + F.note; }
  $("slider").max = D.intervals.length - 1;
  $("slider").addEventListener("input", (e) => { setPlaying(false); setFrame(Number(e.target.value)); });
  $("play").addEventListener("click", () => setPlaying(!S.playing));
  const centre = () => { const r = canvas.getBoundingClientRect(); return [r.width / 2, r.height / 2]; };
  $("zoom-in").addEventListener("click", () => zoomAt(1.5, ...centre()));
  $("zoom-out").addEventListener("click", () => zoomAt(1 / 1.5, ...centre()));
  $("zoom-fit").addEventListener("click", fit);
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoomAt(Math.pow(1.0015, -e.deltaY), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  canvas.addEventListener("mousedown", (e) => { S.drag = { x: e.clientX, y: e.clientY, ox: S.ox, oy: S.oy }; canvas.classList.add("dragging"); });
  canvas.addEventListener("click", (e) => {
    if (S.drag && (Math.abs(e.clientX - S.drag.x) > 3 || Math.abs(e.clientY - S.drag.y) > 3)) return;  // a drag, not a click
    const c = cellAt(e); if (c) pin(c.cx, c.cy);
  });
  window.addEventListener("mouseup", () => { setTimeout(() => { S.drag = null; }, 0); canvas.classList.remove("dragging"); });
  canvas.addEventListener("mousemove", (e) => {
    if (S.drag) { S.ox = S.drag.ox + e.clientX - S.drag.x; S.oy = S.drag.oy + e.clientY - S.drag.y; S.fitted = false; }
    const c = cellAt(e);
    const changed = (c === null) !== (S.hover === null) || (c && (c.cx !== S.hover.cx || c.cy !== S.hover.cy));
    S.hover = c;
    if (changed) updatePanel();
    draw();
  });
  canvas.addEventListener("mouseleave", () => { S.hover = null; updatePanel(); draw(); });
  window.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT") return;
    if (e.key === "ArrowRight") { setPlaying(false); setFrame(S.frame + 1); }
    else if (e.key === "ArrowLeft") { setPlaying(false); setFrame(S.frame - 1); }
    else if (e.key === " ") { e.preventDefault(); setPlaying(!S.playing); }
  });
  new ResizeObserver(resize).observe(canvas);

  // For tests and scripts: where PE (x, y) is on the screen, in client coordinates.
  window.wseViz = {
    data: D, state: S,
    cellCentre(x, y) {
      const r = canvas.getBoundingClientRect();
      return { x: r.left + S.ox + (Math.floor(x / B) + 0.5) * S.scale, y: r.top + S.oy + (Math.floor(y / B) + 0.5) * S.scale };
    },
    // Link i as drawn now: client coordinates of its middle and of its backpressure marker.
    linkPoints(i) {
      const r = canvas.getBoundingClientRect(), g = linkGeom(i);
      return { mid: { x: r.left + g.mid.x, y: r.top + g.mid.y }, bp: { x: r.left + g.bp.x, y: r.top + g.bp.y }, width: g.width };
    },
    linkColour, linkValues, intervalLength, timelineBars, untraced, backpressureColour: BP,
    setMetric, setFrame, setColour, setLinks, pin,
  };
  setMetric(0); setFrame(0); drawLinkLegend(); resize();
})();
</script>
</body>
</html>
)HTML";

}  // namespace

uint32_t html_block(uint32_t width, uint32_t height, size_t intervals, size_t metrics, const HtmlOptions& opt) {
  const uint32_t longest = std::max(width, height);
  for (uint32_t b = 1;; ++b) {
    const uint64_t gw = (width + b - 1) / b, gh = (height + b - 1) / b;
    if ((gw <= opt.max_side && gh <= opt.max_side && gw * gh * std::max<size_t>(intervals, 1) * std::max<size_t>(metrics, 1) <= opt.max_values) ||
        b >= longest)
      return b;
  }
}

namespace {

// The links between cells of the page's grid, per interval: a hop link counts where it crosses
// from one cell to the next (all of them when a cell is one PE), an egress link where it leaves
// the mesh; a cell edge crossed by several links shows the busiest. Per colour the same from the
// router lanes: a lane's wavelets are on every link its colour is sent on from that router.
nlohmann::json fabric_json(const DumpView& d, uint32_t b, const HtmlOptions& opt) {
  using nlohmann::json;
  const size_t n = d.interval_starts.size();
  const MetricGrid* lw = d.link_metric("wavelets");
  const MetricGrid* lb = d.link_metric("backpressure_cycles");
  if (!lw || !lb || n == 0) return nullptr;
  std::map<std::tuple<uint32_t, uint32_t, uint8_t>, uint32_t> index;
  std::vector<std::array<uint32_t, 3>> links;
  // The page link of a tile's link toward d, if it crosses a cell edge (or leaves the mesh).
  auto page_link = [&](uint32_t x, uint32_t y, uint8_t dir) -> int64_t {
    if (dir > 3) return -1;
    const int64_t nx = int64_t(x) + (dir == 1) - (dir == 3), ny = int64_t(y) + (dir == 2) - (dir == 0);
    const bool off = nx < 0 || ny < 0 || nx >= int64_t(d.width) || ny >= int64_t(d.height);
    if (!off && uint32_t(nx) / b == x / b && uint32_t(ny) / b == y / b) return -1;  // inside a cell
    auto [it, added] = index.try_emplace({x / b, y / b, dir}, uint32_t(links.size()));
    if (added) links.push_back({x / b, y / b, dir});
    return it->second;
  };
  std::vector<int64_t> of_link(d.links.size(), -1);
  for (size_t l = 0; l < d.links.size(); ++l)
    if (d.links[l].kind == 0 || d.links[l].kind == 3) of_link[l] = page_link(d.links[l].x, d.links[l].y, d.links[l].dir);
  // Per colour, from the lanes (a colour may use a link no dump link names: a lane whose route
  // goes off the mesh where there is no egress port): colour -> page link -> (wavelets, bp) per interval.
  const MetricGrid* nw = d.lane_metric("wavelets");
  const MetricGrid* nb = d.lane_metric("backpressure_cycles");
  std::map<uint8_t, std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>>> per;
  uint64_t colour_values = 0;
  if (nw && nb) {
    for (size_t i = 0; i < d.lanes.size(); ++i) {
      const LaneInfo& ln = d.lanes[i];
      for (uint8_t dir = 0; dir < 4; ++dir) {
        if (!(ln.tx >> dir & 1)) continue;
        const int64_t pl = page_link(ln.x, ln.y, dir);
        if (pl < 0) continue;
        auto& v = per[ln.colour][uint32_t(pl)];
        if (v.empty()) v.resize(n), colour_values += 2 * n;
        for (size_t k = 0; k < n; ++k)
          v[k].first = std::max(v[k].first, nw->frames[k][i]), v[k].second = std::max(v[k].second, nb->frames[k][i]);
      }
    }
  }
  json f;
  std::string note;
  const uint64_t link_values = uint64_t(links.size()) * n * 2;
  if (link_values > opt.max_link_values) {
    f["links"] = json::array();
    f["wavelets"] = json::array(), f["backpressure"] = json::array(), f["colours"] = json::array();
    f["note"] = "Links are not drawn: " + std::to_string(links.size()) + " cell edges over " + std::to_string(n) +
                " intervals is more than the page holds.";
    return f;
  }
  std::vector<std::vector<uint32_t>> w(n, std::vector<uint32_t>(links.size(), 0)), bp = w;
  for (size_t k = 0; k < n; ++k)
    for (size_t l = 0; l < d.links.size(); ++l)
      if (of_link[l] >= 0) {
        uint32_t& a = w[k][size_t(of_link[l])];
        uint32_t& c = bp[k][size_t(of_link[l])];
        a = std::max(a, lw->frames[k][l]), c = std::max(c, lb->frames[k][l]);
      }
  json jl = json::array();
  for (const auto& l : links) jl.push_back({l[0], l[1], l[2]});
  f["links"] = std::move(jl);
  f["wavelets"] = w;
  f["backpressure"] = bp;
  json colours = json::array();
  if (link_values + colour_values > opt.max_link_values) {
    note = "The colour filter is off: links per colour over every interval are more than the page holds.";
  } else {
    for (const auto& [c, m] : per) {
      json idx = json::array(), cw = json::array(), cb = json::array();
      for (const auto& [pl, _] : m) idx.push_back(pl);
      for (size_t k = 0; k < n; ++k) {
        json a = json::array(), b2 = json::array();
        for (const auto& [pl, v] : m) a.push_back(v[k].first), b2.push_back(v[k].second);
        cw.push_back(std::move(a)), cb.push_back(std::move(b2));
      }
      colours.push_back({{"colour", c}, {"links", std::move(idx)}, {"wavelets", std::move(cw)}, {"backpressure", std::move(cb)}});
    }
  }
  f["colours"] = std::move(colours);
  f["note"] = note;
  return f;
}

nlohmann::json timeline_json(const PeTimelines& t) {
  using nlohmann::json;
  json pes = json::object();
  for (const auto& [xy, threads] : t.pes) {
    json th = json::object();
    for (const auto& [k, bars] : threads) {
      std::vector<uint64_t> flat;
      flat.reserve(bars.size() * 4);
      for (const TimelineBar& b : bars) flat.insert(flat.end(), {b.start, b.end, b.name, b.count});
      th[std::to_string(k)] = std::move(flat);
    }
    pes[std::to_string(xy.first) + "," + std::to_string(xy.second)] = std::move(th);
  }
  json scope = nullptr;  // what the trace kept, when it says (tools/trace_sink.hpp, TraceScope)
  if (t.scope)
    scope = {{"x0", t.scope->x0}, {"y0", t.scope->y0}, {"x1", t.scope->x1}, {"y1", t.scope->y1}, {"from", t.scope->from},
             {"to", t.scope->to == kNever ? json(nullptr) : json(t.scope->to)}, {"pe_slices", t.scope->pe_slices}};
  return {{"names", t.names}, {"pes", std::move(pes)}, {"truncated", t.truncated},
          {"complete_until", t.truncated ? t.complete_until : 0}, {"scope", std::move(scope)}};
}

}  // namespace

std::string render_html_viewer(const DumpView& d, const std::vector<MetricGrid>& metrics, const HtmlOptions& opt,
                               uint32_t* block_out, const PeTimelines* timelines) {
  using nlohmann::json;
  const size_t n = d.interval_starts.size();
  const uint32_t b = html_block(d.width, d.height, n, metrics.size(), opt);
  const uint32_t gw = (d.width + b - 1) / b, gh = (d.height + b - 1) / b;
  if (block_out) *block_out = b;

  json j;
  j["mesh"] = {{"width", d.width}, {"height", d.height}};
  j["block"] = b;
  j["grid"] = {{"width", gw}, {"height", gh}};
  j["machine"] = d.machine;
  j["layer"] = d.layer;
  j["pass"] = d.pass;
  j["interval_cycles"] = d.interval_cycles;
  j["cycles"] = d.cycles;
  json iv = json::array();
  for (size_t i = 0; i < n; ++i)
    iv.push_back({d.interval_starts[i], i + 1 < n ? d.interval_starts[i + 1] : std::max(d.cycles, d.interval_starts[i])});
  j["intervals"] = std::move(iv);
  json pal = json::array();
  for (const Rgb& c : kViridis) pal.push_back({c.r, c.g, c.b});
  j["viridis"] = std::move(pal);
  json ms = json::array();
  for (const MetricGrid& m : metrics) {
    json frames = json::array();
    uint32_t hi = 0;
    for (const auto& f : m.frames) {
      std::vector<uint32_t> cells(size_t(gw) * gh, 0);
      for (uint32_t y = 0; y < d.height; ++y)
        for (uint32_t x = 0; x < d.width; ++x) {
          uint32_t& c = cells[size_t(y / b) * gw + x / b];
          c = std::max(c, f[size_t(y) * d.width + x]);
        }
      for (uint32_t v : cells) hi = std::max(hi, v);
      frames.push_back(std::move(cells));
    }
    // The whole run per cell, from the run summary of each PE (or link): summing a cell's
    // per-interval maxima over the intervals could exceed every PE and link in it.
    const std::vector<uint32_t> total = run_summary(d, m);
    std::vector<uint32_t> run(size_t(gw) * gh, 0);
    for (uint32_t y = 0; y < d.height; ++y)
      for (uint32_t x = 0; x < d.width; ++x) {
        uint32_t& c = run[size_t(y / b) * gw + x / b];
        c = std::max(c, total[size_t(y) * d.width + x]);
      }
    ms.push_back({{"name", m.name}, {"unit", m.unit}, {"level", is_level(m)}, {"max", hi}, {"run", std::move(run)},
                  {"frames", std::move(frames)}});
  }
  j["metrics"] = std::move(ms);
  j["fabric"] = fabric_json(d, b, opt);
  j["timeline"] = timelines ? timeline_json(*timelines) : nlohmann::json(nullptr);

  std::string data = j.dump(-1, ' ', false, json::error_handler_t::replace);
  // Inside <script>, "</" could end the element early: JSON allows "<\/" for the same string.
  std::string safe;
  safe.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') safe += "<\\";
    else safe += data[i];
  }
  return std::string(kHead) + safe + kTail;
}

}  // namespace wse::viz
