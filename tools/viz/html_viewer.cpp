#include "tools/viz/html_viewer.hpp"

#include <algorithm>
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
  #legend-labels { display:flex; justify-content:space-between; color:var(--dim); font-variant-numeric:tabular-nums; margin-top:2px; }
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
  <span class="hint">drag to pan</span>
</div>
<div id="note"></div>
<main>
  <div id="stage"><canvas id="mesh"></canvas></div>
  <aside>
    <div id="legend"><h2 id="legend-title">scale</h2><canvas id="legend-bar" width="300" height="14"></canvas>
      <div id="legend-labels"><span id="legend-lo">0</span><span id="legend-mid"></span><span id="legend-hi"></span></div></div>
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
              hover: null, drag: null };

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

  function drawLegend() {
    const m = D.metrics[S.metric], lc = $("legend-bar"), lx = lc.getContext("2d");
    for (let x = 0; x < lc.width; ++x) { const c = viridis(x / (lc.width - 1)); lx.fillStyle = `rgb(${c})`; lx.fillRect(x, 0, 1, lc.height); }
    const hi = Math.max(1, m.max);
    $("legend-title").textContent = `${m.name} (${m.unit})` + (B > 1 ? ", max per block" : "");
    $("legend-lo").textContent = "0"; $("legend-mid").textContent = short(hi / 2); $("legend-hi").textContent = short(hi);
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
      let run = 0;
      for (const f of m.frames) run = m.level ? Math.max(run, f[i]) : run + f[i];
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
    paintOffscreen(); draw(); updatePanel();
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
  window.addEventListener("mouseup", () => { S.drag = null; canvas.classList.remove("dragging"); });
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
    setMetric, setFrame,
  };
  setMetric(0); setFrame(0); resize();
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

std::string render_html_viewer(const DumpView& d, const std::vector<MetricGrid>& metrics, const HtmlOptions& opt,
                               uint32_t* block_out) {
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
    ms.push_back({{"name", m.name}, {"unit", m.unit}, {"level", is_level(m)}, {"max", hi}, {"frames", std::move(frames)}});
  }
  j["metrics"] = std::move(ms);

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
