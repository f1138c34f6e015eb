#!/usr/bin/env python3
"""The HTML viewer in real headless Chromium, driven over WebDriver (chromium-driver).

Loads index.html from a file URL, checks the mesh canvas is drawn, moves the mouse onto a PE and
checks the panel shows that PE's counters exactly as embedded in the page, switches metric, interval
and zoom; then the fabric: in screenshots (decoded here) each link is drawn in the colour of its
utilization, backpressure in its own colour, the colour filter keeps only that colour's links, and
a clicked PE shows its timeline for the interval as embedded. Saves the screenshots. Needs only the
Python standard library, /usr/bin/chromium and /usr/bin/chromedriver (Debian packages chromium and
chromium-driver): nothing is downloaded.

Exit status: 0 pass, 1 fail, 77 skip (no chromium / chromedriver installed).
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

BG = (23, 24, 28)  # the page's background, #17181c


class WebDriver:
    def __init__(self, driver, chromium, log):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([driver, f"--port={self.port}"], stdout=log, stderr=log)
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                if self.call("GET", "/status")["ready"]:
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        else:
            raise RuntimeError("chromedriver did not start")
        self.profile = tempfile.mkdtemp(prefix="wse-viewer-profile-")
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
                "--window-size=1400,900", f"--user-data-dir={self.profile}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                 "goog:chromeOptions": {"binary": chromium, "args": args}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.read().decode(errors='replace')[:500]}") from None

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def move_mouse(self, x, y):
        self.s("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                                                 "actions": [{"type": "pointerMove", "duration": 0, "origin": "viewport",
                                                              "x": int(round(x)), "y": int(round(y))}]}]})

    def quit(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


failures = []


def decode_png(png):
    """RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium's screenshots are): (w, h, rows)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(png):
        n = int.from_bytes(png[pos:pos + 4], "big")
        kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = body[0:4], body[4:8], body[8], body[9], body[10], body[11], body[12]
            w, h = int.from_bytes(w, "big"), int.from_bytes(h, "big")
            assert depth == 8 and interlace == 0 and ctype in (2, 6), (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, [[tuple(r[x * bpp:x * bpp + 3]) for x in range(w)] for r in rows]


def pixel(img, pt):
    w, h, rows = img
    x, y = int(pt["x"]), int(pt["y"])
    return rows[y][x] if 0 <= x < w and 0 <= y < h else None


def near(a, b, tol=8):
    return a is not None and all(abs(x - y) <= tol for x, y in zip(a, b))


def screenshot(wd, path):
    png = base64.b64decode(wd.s("GET", "/screenshot"))
    with open(path, "wb") as f:
        f.write(png)
    return png, decode_png(png)


def click(wd, x, y):
    wd.s("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                                           "actions": [{"type": "pointerMove", "duration": 0, "origin": "viewport",
                                                        "x": int(round(x)), "y": int(round(y))},
                                                       {"type": "pointerDown", "button": 0},
                                                       {"type": "pointerUp", "button": 0}]}]})
    wd.s("DELETE", "/actions")


def check_fabric(wd, data, shots):
    """Links: utilization colours, backpressure marker, the colour filter, in real screenshots."""
    fab = data.get("fabric")
    check(bool(fab and fab["links"]), "the page embeds the fabric's links")
    if not fab or not fab["links"]:
        return
    names = [m["name"] for m in data["metrics"]]
    # The interval with the most backpressured links, on a dark metric (idle cells), links on.
    frame = max(range(len(data["intervals"])), key=lambda k: sum(1 for v in fab["backpressure"][k] if v))
    wd.js("window.wseViz.setMetric(arguments[0]); window.wseViz.setFrame(arguments[1]); window.wseViz.setColour(-1);"
          "window.wseViz.setLinks(true)", names.index("fmac_cycles") if "fmac_cycles" in names else 0, frame)
    wd.move_mouse(2, 2)  # no hover outline over the links
    vals = wd.js("return window.wseViz.linkValues()")
    expect = [[i, w, b] for i, (w, b) in enumerate(zip(fab["wavelets"][frame], fab["backpressure"][frame])) if w or b]
    check(vals == expect, f"links drawn in interval {frame + 1}: {len(vals)}, as embedded")
    length = wd.js("return window.wseViz.intervalLength(arguments[0])", frame)
    _, img = screenshot(wd, shots + "_links.png")
    plain = [v for v in vals if v[1] and not v[2]][:40]
    wrong = []
    for i, w, _ in plain:
        want = wd.js("return window.wseViz.linkColour(arguments[0])", w / length)
        got = pixel(img, wd.js("return window.wseViz.linkPoints(arguments[0]).mid", i))
        if not near(got, want):
            wrong.append((i, got, want))
    check(plain and not wrong, f"{len(plain)} links drawn in their utilization's colour" + (f": {wrong[:3]}" if wrong else ""))
    bp = [v for v in vals if v[2]][:40]
    red = tuple(wd.js("return window.wseViz.backpressureColour"))
    bad = [i for i, _, _ in bp if not near(pixel(img, wd.js("return window.wseViz.linkPoints(arguments[0]).bp", i)), red)]
    check(bp and not bad, f"{len(bp)} links with backpressure marked in its own colour {red}" + (f": not at {bad[:5]}" if bad else ""))

    # Links off: those pixels go back to the heatmap.
    wd.js("window.wseViz.setLinks(false)")
    _, off = screenshot(wd, shots + "_nolinks.png")
    changed = sum(1 for i, w, _ in plain if not near(pixel(off, wd.js("return window.wseViz.linkPoints(arguments[0]).mid", i)),
                                                     pixel(img, wd.js("return window.wseViz.linkPoints(arguments[0]).mid", i)), 2))
    check(changed == len(plain), f"turning links off removes them ({changed} of {len(plain)})")
    wd.js("window.wseViz.setLinks(true)")

    # The colour filter: the colour on most links; links it does not use disappear, the rest show
    # that colour's own utilization.
    if not fab["colours"]:
        check(False, "the page embeds links per colour")
        return
    def plain_links(j):
        col = fab["colours"][j]
        return sum(1 for w, b in zip(col["wavelets"][frame], col["backpressure"][frame]) if w and not b)
    k = max(range(len(fab["colours"])), key=lambda j: (plain_links(j), sum(1 for v in fab["colours"][j]["wavelets"][frame] if v)))
    c = fab["colours"][k]
    wd.js("window.wseViz.setColour(arguments[0])", k)
    cvals = wd.js("return window.wseViz.linkValues()")
    want = [[c["links"][j], w, b] for j, (w, b) in enumerate(zip(c["wavelets"][frame], c["backpressure"][frame])) if w or b]
    check(cvals == want, f"colour c{c['colour']}: {len(cvals)} links, as embedded")
    _, cimg = screenshot(wd, shots + "_colour.png")
    kept = {v[0] for v in cvals}
    gone = [v for v in plain if v[0] not in kept][:20]
    still = [v for v in gone if near(pixel(cimg, wd.js("return window.wseViz.linkPoints(arguments[0]).mid", v[0])),
                                     pixel(img, wd.js("return window.wseViz.linkPoints(arguments[0]).mid", v[0])), 2)]
    check(not still, f"the filter hides {len(gone)} links of other colours" + (f": still drawn {still[:3]}" if still else ""))
    shown = [v for v in cvals if v[1] and not v[2]][:20]
    wrong = [v for v in shown if not near(pixel(cimg, wd.js("return window.wseViz.linkPoints(arguments[0]).mid", v[0])),
                                          wd.js("return window.wseViz.linkColour(arguments[0])", v[1] / length))]
    marked = [v for v in cvals if v[2]][:20]
    unmarked = [v for v in marked if not near(pixel(cimg, wd.js("return window.wseViz.linkPoints(arguments[0]).bp", v[0])), red)]
    check((shown or marked) and not wrong and not unmarked,
          f"{len(shown)} links of c{c['colour']} in the colour of that colour's utilization, {len(marked)} with its backpressure marked")
    legend = wd.js("return document.getElementById('link-title').textContent")
    check(f"colour {c['colour']}" in legend, f"link legend names the colour: {legend}")
    wd.js("window.wseViz.setColour(-1)")


def check_timeline(wd, data, shots):
    """A clicked PE's tasks and DSD ops in the interval, as embedded."""
    tl = data.get("timeline")
    check(bool(tl and tl["pes"]), "the page embeds the PEs' timelines")
    if not tl or not tl["pes"]:
        return
    # The PE with the most bars; the interval where it has the most.
    key = max(tl["pes"], key=lambda p: sum(len(v) for v in tl["pes"][p].values()))
    x, y = map(int, key.split(","))

    def bars(frame):
        s, e = data["intervals"][frame]
        out = []
        for th in sorted(tl["pes"][key], key=int):
            v = tl["pes"][key][th]
            for i in range(0, len(v), 4):
                if v[i + 1] > s and v[i] < e:
                    out.append({"thread": int(th), "start": v[i], "end": v[i + 1], "name": tl["names"][v[i + 2]], "count": v[i + 3]})
        return out
    frame = max(range(len(data["intervals"])), key=lambda k: len(bars(k)))
    wd.js("window.wseViz.setFrame(arguments[0])", frame)
    c = wd.js("return window.wseViz.cellCentre(arguments[0], arguments[1])", x, y)
    click(wd, c["x"], c["y"])
    title = wd.js("const t = document.getElementById('tl-title'); return t ? [t.textContent, +t.dataset.x, +t.dataset.y] : null")
    check(title is not None and title[1:] == [x, y], f"clicking PE ({x},{y}) opens its timeline: {title and title[0]}")
    got = wd.js("return window.wseViz.timelineBars()")
    want = bars(frame)
    check(got == want and len(want) > 0, f"timeline of PE ({x},{y}) in interval {frame + 1}: {len(got)} bars, as embedded")
    rows = wd.js("return document.querySelectorAll('#tl-table tr.tl-row').length")
    check(rows == min(200, len(want)), f"timeline table lists {rows} slices")
    # Each row is its bar's part in the interval: from where it starts in it, for the cycles it
    # has there (a merged bar's whole count and cycles were listed in every interval it touched).
    # Checked in an interval a bar reaches out of, where the two differ.
    crossing = [k for k in range(len(data["intervals"]))
                if any(b["start"] < data["intervals"][k][0] or b["end"] > data["intervals"][k][1] for b in bars(k))]
    check(bool(crossing), "some interval of the PE has a bar that reaches out of it")
    for k in crossing[:1]:
        wd.js("window.wseViz.setFrame(arguments[0])", k)
        s, e = data["intervals"][k]
        cells = wd.js("return [...document.querySelectorAll('#tl-table tr.tl-row')].map(r => [...r.cells].map(c => c.textContent))")
        parts = [[max(s, b["start"]), min(e, b["end"]) - max(s, b["start"])] for b in bars(k)[:200]]
        check([[int(c[2]), int(c[3])] for c in cells] == parts, f"timeline rows are the bars' parts in cycles {s}-{e}")
    wd.js("window.wseViz.setFrame(arguments[0])", frame)
    ink = wd.js("""const c = document.getElementById('tl-canvas'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                   let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] + d[i + 1] + d[i + 2]) > 200) n++; return n;""")
    check(ink > 100, f"timeline bars drawn ({ink} pixels)")
    # Another interval: the timeline follows the slider.
    other = (frame + 1) % len(data["intervals"])
    wd.js("window.wseViz.setFrame(arguments[0])", other)
    check(wd.js("return window.wseViz.timelineBars()") == bars(other), f"the timeline follows the interval ({other + 1})")
    wd.js("window.wseViz.setFrame(arguments[0])", frame)
    png, _ = screenshot(wd, shots + "_timeline.png")
    check(len(png) > 10000, f"timeline screenshot saved ({len(png)} bytes)")
    # What the trace kept: this page's trace is the whole mesh over the whole run, so nothing is
    # said; a trace of some PEs, some cycles or no PE slices says so instead of "no task".
    sc = tl.get("scope")
    check(sc == {"x0": 0, "y0": 0, "x1": data["mesh"]["width"], "y1": data["mesh"]["height"], "from": 0, "to": None, "pe_slices": True},
          f"the page embeds the trace's scope: {sc}")
    check(wd.js("return document.getElementById('tl-untraced')") is None, "a traced PE and interval get no 'not traced' hint")
    part = {"x0": 1, "y0": 2, "x1": 3, "y1": 4, "from": 60, "to": 90, "pe_slices": True}
    cases = [
        (part, 0, 0, 50, 100, "PE (0, 0) was not traced (the trace's PEs: wse trace --pes 1,2,2,3)."),
        (part, 1, 2, 0, 50, "Cycles 0–50 lie outside the traced window (wse trace --from 60 --to 90)."),
        (part, 1, 2, 50, 100, "Only cycles 60–90 of this interval were traced (wse trace --from/--to)."),
        (part, 2, 3, 60, 90, ""),
        (dict(part, pe_slices=False), 1, 2, 60, 90,
         "The trace holds no PE slices (wse trace --detail counters): this PE's tasks and ops were not recorded."),
        (None, 0, 0, 0, 50, ""),
    ]
    for scope, x, y, a, b, want in cases:
        got = wd.js("return window.wseViz.untraced(arguments[0], arguments[1], arguments[2], arguments[3], arguments[4])", scope, x, y, a, b)
        check(got == want, f"untraced({x},{y}, {a}-{b}) says: {got!r}")


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def canvas_stats(wd):
    return wd.js("""
      const c = document.getElementById('mesh'), g = c.getContext('2d');
      const d = g.getImageData(0, 0, c.width, c.height).data, bg = arguments[0];
      let ink = 0; const colours = new Set();
      for (let i = 0; i < d.length; i += 4) {
        if (Math.abs(d[i] - bg[0]) + Math.abs(d[i+1] - bg[1]) + Math.abs(d[i+2] - bg[2]) > 6) {
          ink++; if (colours.size < 64) colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
        }
      }
      return {w: c.width, h: c.height, ink: ink, colours: colours.size};""", list(BG))


def panel(wd):
    return wd.js("""
      const t = document.getElementById('pe-title');
      if (!t) return null;
      const v = {}, r = {};
      document.querySelectorAll('#pe-panel td.v').forEach(e => v[e.dataset.metric] = e.textContent);
      document.querySelectorAll('#pe-panel td.r').forEach(e => r[e.dataset.metric] = e.textContent);
      return {title: t.textContent, x: +t.dataset.x, y: +t.dataset.y, sub: document.getElementById('pe-sub').textContent,
              values: v, run: r};""")


def hover_and_check(wd, data, x, y, frame):
    wd.js("window.wseViz.setFrame(arguments[0])", frame)
    c = wd.js("return window.wseViz.cellCentre(arguments[0], arguments[1])", x, y)
    wd.move_mouse(c["x"], c["y"])
    p = panel(wd)
    check(p is not None, f"hovering PE ({x},{y}) opens the panel")
    if p is None:
        return
    b, gw = data["block"], data["grid"]["width"]
    cell = (y // b) * gw + (x // b)
    check(p["x"] == (x // b) * b and p["y"] == (y // b) * b, f"panel names the PE under the mouse: {p['title']}")
    if b == 1:
        check(p["title"] == f"PE ({x}, {y})", f"panel title is 'PE ({x}, {y})'")
    check(f"interval {frame + 1} /" in p["sub"], f"panel is for interval {frame + 1}: {p['sub']}")
    wrong = []
    for m in data["metrics"]:
        want = m["frames"][frame][cell]
        top = max(f[cell] for f in m["frames"])
        run = top if m["level"] else sum(f[cell] for f in m["frames"])
        if b > 1 or m["name"].startswith("link"):
            # A cell of several PEs, or of a tile's several links, shows the largest of their own
            # run totals (embedded as "run"; the C++ tests check it against hand sums). It lies
            # between the largest interval and the sum of the cell's per-interval maxima.
            if not (top <= m["run"][cell] <= run):
                wrong.append(f"{m['name']}: embedded run {m['run'][cell]} outside [{top}, {run}]")
            run = m["run"][cell]
        if p["values"].get(m["name"]) != str(want) or p["run"].get(m["name"]) != str(run):
            wrong.append(f"{m['name']}: page {p['values'].get(m['name'])}/{p['run'].get(m['name'])}, data {want}/{run}")
    check(not wrong and len(p["values"]) == len(data["metrics"]),
          f"panel shows all {len(data['metrics'])} counters of PE ({x},{y}) as embedded" + ("" if not wrong else f": {wrong[:3]}"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    a = ap.parse_args()
    for exe in (a.chromium, a.chromedriver):
        if not os.access(exe, os.X_OK):
            print(f"skip: {exe} not installed (Debian packages chromium chromium-driver; scripts/setup.sh installs them)")
            return 77
    page = os.path.abspath(a.page)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    start = html.index('<script type="application/json" id="wse-data">') + len('<script type="application/json" id="wse-data">')
    data = json.loads(html[start:html.index("</script>", start)])

    log = open(os.path.join(os.path.dirname(os.path.abspath(a.screenshot)), "chromedriver.log"), "w")
    wd = WebDriver(a.chromedriver, a.chromium, log)
    try:
        wd.s("POST", "/url", {"url": "file://" + page})
        for _ in range(100):
            if wd.js("return !!(window.wseViz && document.getElementById('mesh').width > 1)"):
                break
            time.sleep(0.05)
        errors = wd.js("return window.__errors || []")
        check(wd.js("return !!window.wseViz"), "page script ran (window.wseViz defined)")
        check(not errors, "no script errors")

        st = canvas_stats(wd)
        mesh_px = data["grid"]["width"] * data["grid"]["height"]
        check(st["ink"] > max(1000, mesh_px), f"canvas drawn: {st['ink']} of {st['w']}x{st['h']} pixels are not background")
        check(st["colours"] > 1, f"canvas uses {st['colours']} colours")
        meta = wd.js("return document.getElementById('meta').textContent")
        check(f"mesh {data['mesh']['width']}\u00d7{data['mesh']['height']}" in meta, f"header: {meta}")
        options = wd.js("return document.getElementById('metric').options.length")
        check(options == len(data["metrics"]), f"metric switcher lists {options} metrics")

        w, h = data["mesh"]["width"], data["mesh"]["height"]
        last = len(data["intervals"]) - 1
        hover_and_check(wd, data, w // 3, h // 2, min(1, last))
        hover_and_check(wd, data, w - 1, h - 1, last)
        hover_and_check(wd, data, 0, 0, 0)

        # Metric switcher: the legend follows.
        k = len(data["metrics"]) - 1
        wd.js("const s = document.getElementById('metric'); s.value = String(arguments[0]);"
              "s.dispatchEvent(new Event('change'));", k)
        legend = wd.js("return document.getElementById('legend-title').textContent")
        check(legend.startswith(data["metrics"][k]["name"]), f"switching metric updates the legend: {legend}")
        # Play advances the interval; pause stops it.
        if last > 0:
            wd.js("window.wseViz.setFrame(0); document.getElementById('play').click()")
            time.sleep(1.5)
            f = wd.js("document.getElementById('play').click(); return window.wseViz.state.frame")
            check(f > 0, f"play advances the time slider (interval {f + 1})")
            check(wd.js("return +document.getElementById('slider').value") == f, "slider follows the animation")
        # Zoom buttons.
        s0 = wd.js("return window.wseViz.state.scale")
        wd.js("document.getElementById('zoom-in').click()")
        s1 = wd.js("return window.wseViz.state.scale")
        check(s1 > s0 * 1.4, f"zoom in: {s0:.2f} -> {s1:.2f} px per cell")
        wd.js("document.getElementById('zoom-fit').click()")

        # The screenshot: fmac_cycles (or metric 0), the first interval, a PE hovered.
        names = [m["name"] for m in data["metrics"]]
        wd.js("window.wseViz.setMetric(arguments[0]); window.wseViz.setFrame(arguments[1])",
              names.index("fmac_cycles") if "fmac_cycles" in names else 0, 0)
        c = wd.js("return window.wseViz.cellCentre(arguments[0], arguments[1])", w // 2, h // 3)
        wd.move_mouse(c["x"], c["y"])
        png = base64.b64decode(wd.s("GET", "/screenshot"))
        with open(a.screenshot, "wb") as f:
            f.write(png)
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, f"screenshot saved: {a.screenshot} ({len(png)} bytes)")

        shots = os.path.splitext(a.screenshot)[0]
        check_fabric(wd, data, shots)
        check_timeline(wd, data, shots)
    finally:
        wd.quit()
        log.close()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
