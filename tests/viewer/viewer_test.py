#!/usr/bin/env python3
"""The HTML viewer in real headless Chromium, driven over WebDriver (chromium-driver).

Loads index.html from a file URL, checks the mesh canvas is drawn, moves the mouse onto a PE and
checks the panel shows that PE's counters exactly as embedded in the page, switches metric, interval
and zoom, and saves a screenshot. Needs only the Python standard library, /usr/bin/chromium and
/usr/bin/chromedriver (Debian packages chromium and chromium-driver): nothing is downloaded.

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
        run = max(f[cell] for f in m["frames"]) if m["level"] else sum(f[cell] for f in m["frames"])
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
    finally:
        wd.quit()
        log.close()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
