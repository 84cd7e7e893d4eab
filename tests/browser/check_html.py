#!/usr/bin/env python3
"""Load memgate's HTML pages in headless Chromium and check them like a user.

    python3 tests/browser/check_html.py --memgate target/debug/memgate \
        --out SCREENSHOT_DIR [--chromium chromium] [--real DIR]

For the bundled examples (one page of examples/snapshots/*.pickle, and the
`diff --html` page of rank0 against its regressed twin) and, with --real, one
page per snapshot in that directory, it writes the page with
`memgate profile --html` (`diff --html`), opens it from disk and checks:

* no console error, no uncaught exception, no CSP or other log error;
* no network request besides the page's own file;
* each chart carries data-snapshot / data-device, and its peak markers'
  data-bytes equal `memgate peak --format json`'s figures (OOM markers the
  allocated bytes at each detailed OOM); a diff chart draws the baseline's
  allocated and reserved lines;
* hovering the allocated-peak marker shows the allocated peak's bytes;
* clicking it lists the same top stack (bytes, innermost Python frame) as
  `memgate peak --at allocated --format json`;
* a check page of the 8-rank fixture draws a bar per rank to its share of
  the heaviest, with the imbalance limit's mark, rank6 red;
* at 1400 px, on every page: budget labels clear of the markers, of the
  other labels and budget lines; band labels apart; the legend inside the
  page; no `devN` broken across lines; `pre-trace` the bottom layer; no
  category row at 0 B on both sides;
* a trace that started mid-run (generated here): its profile, diff and check
  pages say "lower bound" and draw the pre-trace layer below the others,
  and a budget just under its peak labels "over by" clear of the marker;

and saves a screenshot of each page (the CI artifact). Exit 1 on a failed
check, 2 when Chromium cannot be started.

Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: NUL-separated JSON on file descriptors 3 and 4),
so the script needs the Python standard library only: no websocket client,
no npm package, nothing to download.
"""
from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEAKS = ("allocated-peak", "dynamic-peak", "reserved-peak")
# The window the pages are checked at (a laptop's, the screenshots).
WIDTH = 1400


class Browser:
    """One headless Chromium and one tab, spoken to over the pipe."""

    def __init__(self, binary: str, profile: str):
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()

        def fds():
            # Chromium reads commands on fd 3 and answers on fd 4; the
            # high copies keep one dup2 from clobbering the other's source.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        args = [
            binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
            "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--mute-audio",
            f"--user-data-dir={profile}", "about:blank",
        ]
        self.proc = subprocess.Popen(
            args, preexec_fn=fds, pass_fds=(3, 4),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._next = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call(
            "Target.attachToTarget", {"targetId": target, "flatten": True}
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def _read(self, timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                return None
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, params: dict | None = None, session: bool = False,
             timeout: float = 30) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            reply = self._read(end - time.monotonic())
            if reply is None:
                raise RuntimeError(f"no reply to {method}")
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while not any(e["method"] == method for e in self.events):
            e = self._read(end - time.monotonic())
            if e is None:
                raise RuntimeError(f"no {method} event")
            if "method" in e:
                self.events.append(e)

    def js(self, expr: str):
        r = self.call("Runtime.evaluate",
                      {"expression": expr, "returnByValue": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def mouse(self, kind: str, x: float, y: float) -> None:
        params = {"type": kind, "x": x, "y": y, "button": "left"}
        if kind != "mouseMoved":
            params["clickCount"] = 1
        else:
            params["button"] = "none"
        self.call("Input.dispatchMouseEvent", params, session=True)

    def wheel(self, x: float, y: float, delta: float) -> None:
        self.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y,
                                               "deltaX": 0, "deltaY": delta}, session=True)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_memgate(memgate: str, *args: str, cwd: Path = ROOT) -> str:
    p = subprocess.run([memgate, *args], capture_output=True, text=True, cwd=cwd)
    # `check` exits 1 on a failed gate: the page is still written.
    if p.returncode not in ((0, 1) if args[0] == "check" else (0,)):
        raise RuntimeError(f"memgate {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


HIDDEN = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x061C, 0x2028, 0x2029}


def shown(name: str) -> str:
    """A name as memgate's pages show it: control characters, bidi controls and
    the line/paragraph separators as Rust escapes (src/report/escape.rs), written
    here from that rule, not from memgate's code."""
    named = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
    out = []
    for ch in name:
        o = ord(ch)
        if ch in named:
            out.append(named[ch])
        elif o < 0x20 or 0x7F <= o <= 0x9F or o in HIDDEN:
            out.append(f"\\u{{{o:x}}}")
        else:
            out.append(ch)
    return "".join(out)


def folded(line: str) -> str:
    """A stack line as the page shows it: each path's prefix before
    site-packages/ or dist-packages/ cut to `…/` (the full line in a title)."""
    return re.sub(r"(^|[ (])[^ (]*?[/\\\\]((?:site|dist)-packages[/\\\\])", r"\1…/\2", line)


def innermost(frames: list[str]) -> str | None:
    """The frame a folded stack shows first (src/report/frames.rs)."""
    def python(label: str) -> bool:
        place = label.rsplit(" (", 1)[1].rstrip(")") if " (" in label else ""
        return place.rsplit(":", 1)[0].endswith(".py")
    for f in frames:
        if python(f):
            return f
    return frames[0] if frames else None


def check_page(b: Browser, memgate: str, name: str, make: list[str], work: Path,
               shots: Path, baseline: bool = False, cwd: Path = ROOT,
               extras: tuple = ()) -> list[str]:
    """Write a page with `memgate MAKE... --html PAGE` (run in `cwd`) and
    check it; `baseline`: every chart draws a baseline over it; `extras`:
    more checks, each `f(browser, work) -> failures`."""
    page = work / f"{name}.html"
    run_memgate(memgate, *make, "--html", str(page), cwd=cwd)
    failures: list[str] = []

    def fail(msg: str) -> None:
        failures.append(f"{name}: {msg}")

    b.events.clear()
    url = page.resolve().as_uri()
    b.call("Page.navigate", {"url": url}, session=True)
    b.wait_for("Page.loadEventFired")
    charts = b.js("""Array.from(document.querySelectorAll('.chart')).map(c => ({
        snapshot: c.dataset.snapshot, device: c.dataset.device,
        drawn: !!c.querySelector('svg polygon'),
        baseline: c.querySelectorAll('svg polyline.baseline').length,
        marks: Array.from(c.querySelectorAll('[data-figure]')).map(m => ({
            figure: m.dataset.figure, bytes: m.dataset.bytes}))}))""")
    injected = b.js("document.querySelectorAll('img, iframe, object, embed').length + "
                    "document.scripts.length - 2")
    if injected:
        fail(f"{injected} element(s) the page did not write itself (markup from a name?)")
    if make[0] == "check":
        order = b.js("Array.from(document.querySelectorAll('section.case')).map(s => "
                     "s.className.split(' ')[1])")
        rank = {"error": 0, "fail": 1, "warn": 2, "skipped": 3, "pass": 4}
        if not order or [rank[o] for o in order] != sorted(rank[o] for o in order):
            fail(f"sections not failures first: {order}")
    # A chart names its snapshot as the page shows it (hidden characters
    # escaped); memgate is asked about the file that name stands for.
    real = {shown(a): a for a in make if isinstance(a, str)}
    paths = list(dict.fromkeys(c["snapshot"] for c in charts))
    files = [real.get(p, p) for p in paths]
    window = make[make.index("--window"):make.index("--window") + 2] if "--window" in make else []
    peak = json.loads(run_memgate(memgate, "peak", "--format", "json", "--at", "allocated",
                                  *window, *files, cwd=cwd)) if paths else {"snapshots": []}
    devices = {(shown(s["path"]), str(d["device"])): d
               for s in peak["snapshots"] for d in s["devices"]}
    # A snapshot with no device: the page says so (and `memgate peak`
    # agrees that it has none) instead of drawing an empty chart.
    said_no_device = b.js("document.querySelectorAll('p.no-device').length")
    if not charts and said_no_device:
        files = [a for a in make[1:] if isinstance(a, str) and not a.startswith("-")]
        found = json.loads(run_memgate(memgate, "peak", "--format", "json", *files, cwd=cwd))
        if any(s["devices"] for s in found["snapshots"]):
            fail("the page says no device, but `memgate peak` found one")
    elif not charts:
        fail("no chart")
    for k, c in enumerate(charts):
        path = c["snapshot"]
        d = devices.get((path, c["device"]))
        if d is None:
            fail(f"chart {k} ({path} dev{c['device']}) names no device `memgate peak` found")
            continue
        where = f"{path} dev{d['device']}"
        if not c["drawn"] and d["figures"]["trace-entries"]:
            fail(f"{where}: no area drawn")
        if baseline and c["baseline"] != 2:
            fail(f"{where}: {c['baseline']} baseline lines drawn, want 2 (allocated, reserved)")
        got = {m["figure"]: m["bytes"] for m in c["marks"] if m["figure"] != "oom"}
        for fig in PEAKS:
            value = d["figures"][fig]
            if fig in got and got[fig] != str(value):
                fail(f"{where}: marker {fig} = {got[fig]}, JSON figure {value}")
        if "allocated-peak" not in got and d["figures"]["trace-entries"] and \
                d["figures"]["allocated-peak"]:
            fail(f"{where}: no allocated-peak marker")
        ooms = [m["bytes"] for m in c["marks"] if m["figure"] == "oom"]
        want_ooms = [str(o["allocated"]) for o in d.get("oom", [])]
        if sorted(ooms) != sorted(want_ooms):
            fail(f"{where}: OOM markers {ooms}, JSON {want_ooms}")
        if "allocated-peak" not in got:
            continue
        # The page opens on the allocated peak's moment, its stacks listed.
        opened = b.js(f"""(() => {{
            const t = document.querySelectorAll('.chart')[{k}].querySelector('table.moment');
            return t && t.querySelector('caption').textContent;
        }})()""")
        if not opened or "allocated peak" not in opened:
            fail(f"{where}: the page does not open on the allocated peak's stacks: {opened!r}")
        # Hover the allocated-peak marker, then click it.
        box = b.js(f"""(() => {{
            const m = document.querySelectorAll('.chart')[{k}]
                .querySelector('[data-figure="allocated-peak"]');
            m.scrollIntoView({{block: 'center'}});
            const r = m.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2];
        }})()""")
        b.mouse("mouseMoved", box[0], box[1])
        readout = b.js(f"""(() => {{
            const r = document.querySelectorAll('.chart')[{k}].querySelector('.readout');
            return [r.dataset.allocated, r.textContent];
        }})()""")
        value = str(d["figures"]["allocated-peak"])
        if readout[0] != value or value not in readout[1]:
            fail(f"{where}: hover at the allocated peak shows {readout}, want {value}")
        b.mouse("mousePressed", box[0], box[1])
        b.mouse("mouseReleased", box[0], box[1])
        top = b.js(f"""(() => {{
            const t = document.querySelectorAll('.chart')[{k}].querySelector('table.moment');
            if (!t) return null;
            const row = t.querySelector('tr:nth-of-type(2)');
            const line = row && row.querySelector('.stack div');
            return row && [row.querySelector('[data-bytes]').dataset.bytes,
                           line.title || line.textContent, line.textContent];
        }})()""")
        stacks = d["stacks-at-moment"]["stacks"]
        if not stacks:
            continue
        # A group without frames is named (docs/figures.md#memory-with-no-story).
        no_frames = stacks[0].get("no-frames")
        want_top = [str(stacks[0]["bytes"]),
                    shown(innermost(stacks[0]["frames"]) or f"{no_frames} (no frames)")]
        if top is not None and top[2] != folded(want_top[1]):
            fail(f"{where}: the top stack's line shows {top[2]!r}, want {folded(want_top[1])!r}")
        top = top and top[:2]
        if top != want_top:
            fail(f"{where}: clicking the allocated peak lists {top}, `memgate peak` {want_top}")
    failures += [f"{name}: {m}" for m in polish(b)]
    failures += [f"{name}: {m}" for m in layout(b)]
    for extra in extras:
        failures += [f"{name}: {m}" for m in extra(b, work)]
    shot = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                  session=True)
    (shots / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))
    for e in b.events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            fail(f"console error: {p.get('args')}")
        elif m == "Runtime.exceptionThrown":
            fail(f"exception: {p['exceptionDetails']}")
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            fail(f"log error: {p['entry'].get('text')}")
        elif m == "Network.requestWillBeSent" and p["request"]["url"] != url:
            fail(f"network request: {p['request']['url']}")
    return failures


PLOT = """(k) => {
    const svg = document.querySelectorAll('.chart')[k].querySelector('svg');
    svg.scrollIntoView({block: 'center'});
    const r = svg.getBoundingClientRect(), s = r.width / 960;
    return {left: r.left + 78 * s, width: (960 - 78 - 18) * s, top: r.top + 34 * s,
            bottom: r.top + (360 - 42) * s, axis: svg.dataset.axis};
}"""


def plot(b: Browser, k: int) -> dict:
    """Chart k's plot area on the screen (the page's viewBox margins)."""
    return b.js(f"({PLOT})({k})")


def readout(b: Browser, k: int, x: float, y: float) -> dict:
    """Hover (x, y) and read chart k's readout."""
    b.mouse("mouseMoved", x, y)
    return b.js(f"""(() => {{
        const r = document.querySelectorAll('.chart')[{k}].querySelector('.readout');
        return {{allocated: +r.dataset.allocated, low: +r.dataset.low, high: +r.dataset.high,
                 text: r.textContent}};
    }})()""")


def polish(b: Browser) -> list[str]:
    """Checks of every page: no colour repeats within a chart (areas and the
    category table's swatches), markers are not clipped, grid lines are drawn
    over the bands, a cut band label ends in an ellipsis."""
    got = b.js("""Array.from(document.querySelectorAll('.chart')).map(c => {
        const svg = c.querySelector('svg');
        const bands = Array.from(svg.querySelectorAll('.band'));
        const grid = svg.querySelector('.gridlines');
        return {
            fills: Array.from(svg.querySelectorAll('polygon')).map(p => p.getAttribute('fill')),
            swatches: Array.from(c.closest('section').querySelectorAll('table svg.sw rect'))
                .map(r => r.getAttribute('fill')),
            clipped: Array.from(svg.querySelectorAll('[data-figure]'))
                .filter(m => m.closest('[clip-path]')).length,
            gridUnder: bands.filter(b => grid && (grid.compareDocumentPosition(b) &
                Node.DOCUMENT_POSITION_FOLLOWING)).length,
            labels: Array.from(svg.querySelectorAll('.band text')).map(t =>
                [t.textContent, t.parentNode.querySelector('title').textContent]),
            phases: Array.from(svg.querySelectorAll('.band:not(.label)')).map(b =>
                [b.querySelector('title').textContent, b.querySelector('rect').getAttribute('fill')])
                .filter(p => p[0].startsWith('phase ')),
        };
    })""")
    out = []
    for k, c in enumerate(got):
        for what in ("fills", "swatches"):
            if len(set(c[what])) != len(c[what]):
                out.append(f"chart {k}: a colour repeats among the {what}: {c[what]}")
        colour = {}
        for phase, fill in c["phases"]:
            colour.setdefault(phase, set()).add(fill)
        fills = [f for fs in colour.values() for f in fs]
        if any(len(fs) != 1 for fs in colour.values()) or len(set(fills)) != len(fills):
            out.append(f"chart {k}: phase colours are not one per name, distinct: {colour}")
        if c["clipped"]:
            out.append(f"chart {k}: {c['clipped']} marker(s) inside a clip path")
        if c["gridUnder"]:
            out.append(f"chart {k}: {c['gridUnder']} band(s) drawn over the grid lines")
        for text, title in c["labels"]:
            full = title.removeprefix("phase ")
            if text != full and not (text.endswith("…") and full.startswith(text[:-1])):
                out.append(f"chart {k}: band label {text!r} is a cut of {full!r} without an ellipsis")
    return out


LAYOUT = """(() => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const hit = (a, b) => a[0] < b[2] - 0.5 && b[0] < a[2] - 0.5 && a[1] < b[3] - 0.5 && b[1] < a[3] - 0.5;
    const out = [];
    document.querySelectorAll('.chart').forEach((c, k) => {
        const svg = c.querySelector('svg');
        if (!svg) return;
        const marks = Array.from(svg.querySelectorAll('.marks [data-figure]')).map(box);
        const lines = Array.from(svg.querySelectorAll('.budget')).map(g =>
            [g.dataset.check, box(g.querySelector('line'))[1]]);
        const labels = Array.from(svg.querySelectorAll('.budget-label')).map(l =>
            [l.dataset.check, box(l.querySelector('text')), l.querySelector('text').textContent]);
        labels.forEach(([check, r, text], i) => {
            if (marks.some(m => hit(r, m)))
                out.push(`chart ${k}: budget label ${JSON.stringify(text)} covers a marker`);
            lines.forEach(([other, y]) => {
                if (other !== check && y > r[1] && y < r[3])
                    out.push(`chart ${k}: budget label ${JSON.stringify(text)} crossed by the ${other} budget line`);
            });
            labels.slice(i + 1).forEach(([o, q]) => {
                if (hit(r, q)) out.push(`chart ${k}: budget labels ${check} and ${o} overlap`);
            });
        });
        const bands = Array.from(svg.querySelectorAll('.band text')).map(t => [t.textContent, box(t)]);
        bands.forEach(([t, r], i) => bands.slice(i + 1).forEach(([u, q]) => {
            if (hit(r, q)) out.push(`chart ${k}: band labels ${JSON.stringify(t)} and ${JSON.stringify(u)} overlap`);
        }));
        const legend = c.querySelector('.legend'), lb = box(legend);
        const right = Math.max(...Array.from(legend.children).map(e => box(e)[2]));
        if (right > lb[2] + 1 || right > window.innerWidth)
            out.push(`chart ${k}: the legend runs to ${right} px, past its box (${lb[2]}) or the window (${window.innerWidth})`);
        const layers = Array.from(svg.querySelectorAll('polygon')).map(p => p.querySelector('title').textContent);
        const pre = layers.indexOf('pre-trace');
        if (pre > 0) out.push(`chart ${k}: pre-trace is layer ${pre} of ${layers}, want the bottom one`);
    });
    document.querySelectorAll('section[id^=device-] > h2, section.case > h2').forEach(h => {
        if (!h.querySelector('.dev') && !h.textContent.endsWith('no device'))
            out.push(`heading ${JSON.stringify(h.textContent)}: its device is not kept on one line`);
    });
    document.querySelectorAll('.dev').forEach(d => {
        if (getComputedStyle(d).whiteSpace !== 'nowrap') out.push(`${d.textContent} may break across lines`);
        if (d.getClientRects().length > 1) out.push(`${d.textContent} broken across lines in ${JSON.stringify(d.parentNode.textContent)}`);
    });
    document.querySelectorAll('table.deltas').forEach(t => {
        if (!t.querySelector('caption').textContent.startsWith('Categories at the allocated peak')) return;
        Array.from(t.querySelectorAll('tr')).slice(1).forEach(tr => {
            const cells = Array.from(tr.cells).map(c => c.textContent);
            if (cells.length === 4 && ['0 B', '–'].includes(cells[1]) && cells[2] === '0 B')
                out.push(`a zero-byte category row: ${cells}`);
        });
    });
    return out;
})()"""


def layout(b: Browser) -> list[str]:
    """Checks of every page at WIDTH px: each budget label clear of the
    markers, of the other budget lines and labels; band labels apart; the
    legend inside the page; no `devN` broken across lines; the pre-trace
    layer (never growing) at the bottom of the stack; no zero-byte category
    rows (the Markdown hides them)."""
    return b.js(LAYOUT)


def rise_distance(b: Browser, k: int, expected: dict) -> tuple[float, int]:
    """Chart k: from the allocated-peak marker leftwards, pixel by pixel, to the
    first pixel holding a sample below half of the peak (halfway between the
    lowest value before the peak and the peak, from the generator): that
    distance as a share of the plot's width; and the bytes read hovering the
    marker."""
    p = plot(b, k)
    mark = b.js(f"""(() => {{
        const m = document.querySelectorAll('.chart')[{k}].querySelector('[data-figure="allocated-peak"]');
        const r = m.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2];
    }})()""")
    at_mark = readout(b, k, mark[0], mark[1])["allocated"]
    low, peak = expected["lowest-before-peak"], expected["allocated-peak"]
    half = low + (peak - low) / 2
    y = (p["top"] + p["bottom"]) / 2
    x = mark[0]
    while x > p["left"]:
        r = readout(b, k, x, y)
        if r["low"] < half:
            break
        x -= 1
    return (mark[0] - x) / p["width"], at_mark


def compiled_checks(expected: dict, report: list[str]):
    """The compiled trace: by default the rise to the allocated peak is at
    least 1% of the plot wide and hovering the marker reads the peak."""
    def check(b: Browser, work: Path) -> list[str]:
        out = []
        e = expected["compiled.json"]
        share, at_mark = rise_distance(b, 0, e)
        axis = plot(b, 0)["axis"]
        report.append(f"compiled trace: the rise is {share:.2%} of the plot wide by default "
                      f"({axis} axis)")
        if share < 0.01:
            out.append(f"rise to the allocated peak {share:.3%} of the plot wide, want >= 1%")
        if at_mark != e["allocated-peak"]:
            out.append(f"hovering the allocated-peak marker reads {at_mark}, want {e['allocated-peak']}")
        # The time axis, for the record: the rise is under a pixel there.
        b.js("document.querySelectorAll('.chart')[0].querySelector('button[data-x=\"s\"]').click()")
        share_t, at_mark_t = rise_distance(b, 0, e)
        report.append(f"compiled trace: the rise is {share_t:.2%} of the plot wide on the time axis")
        if at_mark_t != e["allocated-peak"]:
            out.append(f"time axis: hovering the marker reads {at_mark_t}, want {e['allocated-peak']}")
        b.js("document.querySelectorAll('.chart')[0].querySelector('button[data-x=\"entry\"]').click()")
        # The Peaks table places the peak in its phase.
        row = b.js("Array.from(document.querySelector('table.peaks tr[data-figure=\"allocated-peak\"]')"
                   ".cells).map(c => c.textContent)")
        if row[3] != str(e["peak-entry"]) or row[5] != "## forward ##":
            out.append(f"Peaks table row {row}: want entry {e['peak-entry']} in ## forward ##")
        return out
    return check


def steps_checks(expected: dict, report: list[str]):
    """The stepped trace: sweeping the hover over the plot reads a dip below
    half of the peak between every two step maxima, and zooming onto a dip
    reads it at the pointer."""
    def check(b: Browser, work: Path) -> list[str]:
        out = []
        e = expected["steps.json"]
        peak = e["allocated-peak"]
        p = plot(b, 0)
        y = (p["top"] + p["bottom"]) / 2
        # Per pixel: 'H' a step maximum (>= 90% of the peak), 'L' below half.
        marks, lows = [], []
        x = p["left"] + 0.5
        while x < p["left"] + p["width"]:
            r = readout(b, 0, x, y)
            marks.append("L" if r["low"] < peak / 2 else "H" if r["high"] >= 0.9 * peak else "-")
            if r["low"] < peak / 2:
                lows.append(x)
            x += 1
        runs = "".join(marks).replace("-", "")
        dips = len([1 for k in range(1, len(runs) - 1)
                    if runs[k] == "L" and runs[k - 1] == "H"])
        dips = sum(1 for i in range(len(runs) - 1) if runs[i] == "H" and runs[i + 1] == "L"
                   and "H" in runs[i + 1:])
        want = len(e["steps"]) - 1
        report.append(f"stepped trace: {dips} dips below half of the peak read between step "
                      f"maxima (steps: {len(e['steps'])})")
        if dips < want:
            out.append(f"{dips} dips below half the peak between step maxima, want {want}")
        # Zoom onto a dip in the middle: the pointer's own sample reads it.
        mid = [x for x in lows if p["left"] + p["width"] * 0.3 < x < p["left"] + p["width"] * 0.7]
        if mid:
            at = mid[0]
            for _ in range(12):
                b.wheel(at, y, -100)
            seen = min(readout(b, 0, at + dx, y)["allocated"] for dx in range(-30, 31))
            if seen >= peak / 2:
                out.append(f"zoomed onto a dip, the pointer reads {seen} at least, want < {peak / 2}")
            # Zoomed in, the finer level draws more samples than the areas.
            n = b.js("""(() => {
                const svg = document.querySelector('.chart svg');
                const fine = svg.querySelector('polyline.fine');
                const area = svg.querySelector('polygon');
                return [fine ? fine.getAttribute('points').trim().split(' ').length : 0,
                        area ? area.getAttribute('points').trim().split(' ').length / 2 : 0];
            })()""")
            report.append(f"stepped trace zoomed in: {n[0]} finer samples drawn, {n[1]:.0f} "
                          f"category samples")
            if n[0] <= n[1]:
                out.append(f"zoomed in, the finer level draws {n[0]} samples, the areas {n[1]}")
            b.js("document.querySelectorAll('.chart')[0].querySelector('.tools button').click()")
        # The Peaks table places the peak in its iteration and phase.
        step = next(k for k, (a, z) in enumerate(e["steps"]) if a <= e["peak-entry"] <= z)
        row = b.js("Array.from(document.querySelector('table.peaks tr[data-figure=\"allocated-peak\"]')"
                   ".cells).map(c => c.textContent)")
        if row[5:] != [f"ProfilerStep#{step}", str(step)]:
            out.append(f"Peaks table row {row}: want ProfilerStep#{step}, iteration {step}")
        return out
    return check


def window_checks(b: Browser, work: Path) -> list[str]:
    """`--window '#4000..#8000'` (entries): the page opens zoomed to it."""
    dom = b.js("document.querySelector('.chart svg').dataset.domain.split(' ').map(Number)")
    axis = plot(b, 0)["axis"]
    if axis != "entry":
        return [f"window page opens on the {axis} axis, want entries"]
    # x on the entries axis is the entry + 1; a twentieth of margin each side.
    if not (3_700 <= dom[0] <= 4_001 and 8_001 <= dom[1] <= 8_300):
        return [f"--window #4000..#8000 opens on x {dom}, want about 3800..8200"]
    return []


def overlay_checks(b: Browser, work: Path) -> list[str]:
    """A baseline of another length (100 s against 1 s): on both axes the
    current run's area and the baseline's line each span the plot."""
    out = []
    for axis in ("s", "entry"):
        b.js(f"document.querySelector('.chart button[data-x=\"{axis}\"]').click()")
        ext = b.js("""(() => {
            const svg = document.querySelector('.chart svg');
            const xs = el => el.getAttribute('points').trim().split(' ').map(p => +p.split(',')[0]);
            const area = Array.from(svg.querySelectorAll('polygon')).flatMap(xs);
            const line = xs(svg.querySelector('polyline.baseline.allocated'));
            return [Math.min(...area), Math.max(...area), Math.min(...line), Math.max(...line)];
        })()""")
        # The plot runs from x = 78 to 942 in the viewBox.
        for what, lo, hi in (("current run", ext[0], ext[1]), ("baseline", ext[2], ext[3])):
            if hi - lo < 0.9 * (942 - 78):
                out.append(f"{axis} axis: the {what} spans {lo:.0f}..{hi:.0f} of 78..942")
    return out


def check_page_checks(b: Browser, work: Path) -> list[str]:
    """The regressed example's check page: fail badges in red, and a summary
    table linking every section (every target named)."""
    got = b.js("""(() => {
        const fail = document.querySelector('.badge.fail');
        const links = Array.from(document.querySelectorAll('table.summary a'))
            .map(a => a.getAttribute('href'));
        return {red: fail && getComputedStyle(fail).backgroundColor,
                icon: fail && fail.textContent,
                links: links,
                sections: Array.from(document.querySelectorAll('section.case')).map(s => '#' + s.id),
                targets: Array.from(document.querySelectorAll('table.summary tr td:nth-child(2)'))
                    .map(t => t.textContent)};
    })()""")
    out = []
    if got["red"] != "rgb(198, 40, 40)" or "✖" not in (got["icon"] or ""):
        out.append(f"fail badge {got['icon']!r} in {got['red']}, want ✖ in rgb(198, 40, 40)")
    if set(got["sections"]) - set(got["links"]):
        out.append(f"sections without a link in the summary: {set(got['sections']) - set(got['links'])}")
    config = (ROOT / "examples/memgate-regressed.toml").read_text()
    names = re.findall(r'^name\s*=\s*"([^"]+)"', config, re.M)
    if not names or set(names) - set(got["targets"]):
        out.append(f"targets {names} not all in the summary table {got['targets']}")
    # The allocated-peak budget (208 MiB in the file) drawn on every chart,
    # its headroom the budget less the chart's allocated-peak marker.
    budget = 208 << 20
    assert f'allocated-peak = "{budget >> 20} MiB"' in config
    lines = b.js("""Array.from(document.querySelectorAll('.chart')).map(c => {
        const l = c.querySelector('.budget[data-check="allocated-peak"]');
        const t = c.querySelector('.budget-label[data-check="allocated-peak"] text');
        const m = c.querySelector('[data-figure="allocated-peak"]');
        return l && [+l.dataset.bytes, +l.dataset.headroom, +m.dataset.bytes, t.textContent];
    })""")
    for k, l in enumerate(lines):
        if l is None or l[0] != budget or l[1] != budget - l[2] or \
                ("over by" if l[1] < 0 else "headroom") not in l[3]:
            out.append(f"chart {k}: allocated-peak budget line {l}, want {budget} with its headroom")
    return out


def ranks_config(directory: Path) -> Path:
    """The 8-rank job of tests/fixtures/ranks against its baseline, rank6
    over a 15% imbalance limit (docs/ranks.md)."""
    ranks = ROOT / "tests/fixtures/ranks"
    path = directory / "ranks.toml"
    path.write_text(f"""[defaults]
tolerance = "100%"

[[target]]
name = "job"
snapshots = "{ranks}/run/*.pickle"
baseline = "{ranks}/baseline/"

[target.ranks]
imbalance = "15%"
stages = {{ first = ["rank0", "rank1", "rank2", "rank3"], last = "^rank[4-7]$" }}
stage-imbalance = "15%"
""")
    return path


def ranks_checks(b: Browser, work: Path) -> list[str]:
    """The rank section: linked from the summary, a bar per rank drawn to
    its value's share of the heaviest, rank6 red (over the limit) with the
    limit's mark on its bar, the other bars blue."""
    got = b.js("""(() => {
        const sec = document.querySelector('section.ranks');
        const links = Array.from(document.querySelectorAll('table.summary a'))
            .map(a => a.getAttribute('href'));
        const rows = Array.from(document.querySelectorAll('table.rankbars tr[data-rank]'))
            .map(tr => {
                const svg = tr.querySelector('svg.rankbar'), bar = svg.querySelector('rect');
                const limit = svg.querySelector('line.limit:not(.stage)');
                return {rank: tr.dataset.rank, cls: tr.className, value: +bar.dataset.value,
                        bar: bar.getBoundingClientRect().width,
                        whole: svg.getBoundingClientRect().width,
                        fill: getComputedStyle(bar).fill,
                        limit: limit && +limit.dataset.limit,
                        mark: limit && limit.getBoundingClientRect().left
                              - svg.getBoundingClientRect().left};
            });
        return {id: sec && sec.id, links: links, rows: rows};
    })()""")
    out = []
    if not got["id"] or f"#{got['id']}" not in got["links"]:
        out.append(f"rank section {got['id']} not linked from the summary {got['links']}")
    rows = got["rows"]
    if [r["rank"] for r in rows] != [f"rank{k}" for k in range(8)]:
        return out + [f"rank rows {[r['rank'] for r in rows]}"]
    top = max(r["value"] for r in rows)
    for r in rows:
        want = r["whole"] * r["value"] / top
        if r["whole"] < 50 or abs(r["bar"] - want) > 1.5:
            out.append(f"{r['rank']}: bar {r['bar']:.1f} px of {r['whole']:.1f}, want {want:.1f}")
        if r["limit"] is None or abs(r["mark"] - r["whole"] * r["limit"] / top) > 2.5:
            out.append(f"{r['rank']}: limit mark at {r['mark']} px for {r['limit']}")
        heavy = r["rank"] == "rank6"
        colour = "rgb(198, 40, 40)" if heavy else "rgb(78, 121, 167)"
        if r["fill"] != colour or ("heaviest over" in r["cls"]) != heavy:
            out.append(f"{r['rank']}: class {r['cls']!r}, fill {r['fill']}, want {colour}")
    return out


def profile_summary_checks(b: Browser, work: Path) -> list[str]:
    """A page of several snapshots: a summary table linking every device."""
    got = b.js("""[Array.from(document.querySelectorAll('table.summary a')).map(a => a.getAttribute('href')),
                  Array.from(document.querySelectorAll('section[id^=device-]')).map(s => '#' + s.id)]""")
    if not got[1] or got[0] != got[1]:
        return [f"summary links {got[0]}, sections {got[1]}"]
    return []


CUSTOM = ["adam", "linear", "attn", "mlp", "embed", "loss", "backward", "model",
          "train", "autograd", "optim", "init", "forward", "step", "never_matched"]


def rules_file(directory: Path) -> Path:
    """Custom categories, more than the palette's ten colours (one matches
    nothing: 0 B)."""
    path = directory / "many.toml"
    path.write_text("[categories]\n" + "".join(f'{n} = "{n}"\n' for n in CUSTOM))
    return path


HOSTILE = "</script><img src=x onerror=alert(1)><!--\u2028&amp;'\""


def hostile_snapshot(directory: Path) -> Path:
    """A JSON snapshot whose file, frame and annotation names are markup:
    the page must show them as text, load nothing and run nothing."""
    frames = [{"name": HOSTILE, "filename": f"/w/{HOSTILE}.py", "line": 7},
              {"name": "at::empty", "filename": "aten/Empty.cpp", "line": 0}]
    t0 = 1_700_000_000_000_000
    trace = [
        {"action": "segment_alloc", "addr": 1 << 30, "size": 8 << 20, "stream": 0,
         "time_us": t0, "frames": frames},
        {"action": "alloc", "addr": 1 << 30, "size": 3 << 20, "stream": 0,
         "time_us": t0 + 10, "frames": frames},
        {"action": "alloc", "addr": (1 << 30) + (4 << 20), "size": 1 << 20, "stream": 0,
         "time_us": t0 + 20, "frames": frames[1:]},
        {"action": "free_completed", "addr": 1 << 30, "size": 3 << 20, "stream": 0,
         "time_us": t0 + 30, "frames": frames},
    ]
    snap = {
        "segments": [], "device_traces": [trace],
        "external_annotations": [
            {"device": 0, "name": HOSTILE, "stage": "START", "time_us": t0 + 5},
            {"device": 0, "name": HOSTILE, "stage": "END", "time_us": t0 + 25},
        ],
    }
    path = directory / f"evil {HOSTILE.replace('/', '|')}.json"
    path.write_text(json.dumps(snap))
    return path


def wrapped_snapshot(directory: Path, name: str, grow: int) -> Path:
    """A JSON snapshot whose trace started mid-run: 400 MiB of weights
    allocated before recording and live at the dump (pre-trace, never
    changing), a 50 MiB block from before recording freed first (so the
    trace is incomplete: its figures are lower bounds), then `grow` blocks
    of 10 MiB allocated to the allocated peak at the very last entry."""
    base, mib = 0x7F00_0000_0000, 1 << 20
    frames = [{"name": "forward", "filename": "/w/model.py", "line": 3},
              {"name": "main", "filename": "/w/train.py", "line": 9}]
    t0 = 1_700_000_000_000_000
    trace = [{"action": "free_completed", "addr": base + 400 * mib, "size": 50 * mib,
              "stream": 0, "time_us": t0, "frames": frames}]
    for i in range(grow):
        trace.append({"action": "alloc", "addr": base + (450 + 10 * i) * mib, "size": 10 * mib,
                      "stream": 0, "time_us": t0 + 1000 * (i + 1), "frames": frames})
    live = 450 + 10 * grow
    segment = max(1024, live + 64) * mib
    blocks = [{"address": base, "size": 400 * mib, "requested_size": 400 * mib,
               "state": "active_allocated", "frames": []},
              {"address": base + 400 * mib, "size": 50 * mib, "requested_size": 0,
               "state": "inactive", "frames": []}]
    blocks += [{"address": base + (450 + 10 * i) * mib, "size": 10 * mib,
                "requested_size": 10 * mib, "state": "active_allocated", "frames": frames}
               for i in range(grow)]
    blocks.append({"address": base + live * mib, "size": segment - live * mib,
                   "requested_size": 0, "state": "inactive", "frames": []})
    used = (400 + 10 * grow) * mib
    snap = {"segments": [{"device": 0, "address": base, "total_size": segment,
                          "allocated_size": used, "active_size": used, "requested_size": used,
                          "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
                          "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [trace]}
    path = directory / f"{name}.json"
    path.write_text(json.dumps(snap))
    return path


def wrapped_config(directory: Path, snapshot: Path, budget_mib: int) -> Path:
    """A gate on the wrapped snapshot's allocated peak alone, `budget_mib`
    under it: the label says "over by" where the peak's marker sits."""
    path = directory / "wrapped.toml"
    path.write_text(f"""[defaults]
figures = ["allocated-peak"]

[[target]]
name = "wrapped"
snapshots = "{snapshot}"

[target.budget]
allocated-peak = "{budget_mib} MiB"
""")
    return path


def wrapped_checks(b: Browser, work: Path) -> list[str]:
    """A trace that started mid-run: the page says its figures are lower
    bounds (the terminal's sentence), and the pre-trace layer is drawn
    below the others: first in the stack, reaching the x axis, every other
    layer above it."""
    got = b.js("""(() => {
        const notes = Array.from(document.querySelectorAll('.lower-bound')).map(p => p.textContent);
        const svg = document.querySelector('.chart svg');
        const polys = Array.from(svg.querySelectorAll('polygon')).map(p => {
            const r = p.getBoundingClientRect();
            return [p.querySelector('title').textContent, r.bottom, r.top];
        });
        const axis = svg.getBoundingClientRect().top + (360 - 42) * svg.getBoundingClientRect().width / 960;
        return {notes: notes, polys: polys, axis: axis};
    })()""")
    out = []
    if not any("lower bound" in n for n in got["notes"]):
        out.append(f"no lower-bound note on the page: {got['notes']}")
    polys = got["polys"]
    if not polys or polys[0][0] != "pre-trace":
        return out + [f"layers {[p[0] for p in polys]}: want pre-trace first (at the bottom)"]
    if abs(polys[0][1] - got["axis"]) > 1.5:
        out.append(f"the pre-trace layer ends at y {polys[0][1]:.1f}, the x axis is at {got['axis']:.1f}")
    for name, bottom, _ in polys[1:]:
        if bottom > polys[0][1] - 5:
            out.append(f"layer {name} reaches y {bottom:.1f}, under the top of pre-trace")
    return out


def nested_snapshot(directory: Path) -> Path:
    """A compiled-run shape for the band labels: five nested annotations
    with long names over the whole run (more than the three band rows),
    then sixty short `pad_mm_benchmark` spans side by side."""
    base, mib, t0 = 0x7F00_0000_0000, 1 << 20, 1_700_000_000_000_000
    frames = [{"name": "forward", "filename": "/w/model.py", "line": 3}]
    trace, notes = [], []
    for i in range(400):
        trace.append({"action": "alloc", "addr": base + i * mib, "size": mib, "stream": 0,
                      "time_us": t0 + 10 * i, "frames": frames})
    for depth in range(5):
        name = f"compiled_region_{depth}_with_a_rather_long_descriptive_name"
        notes += [{"device": 0, "name": name, "stage": "START", "time_us": t0 + depth},
                  {"device": 0, "name": name, "stage": "END", "time_us": t0 + 4000 - depth}]
    for k in range(60):
        notes += [{"device": 0, "name": "pad_mm_benchmark", "stage": "START",
                   "time_us": t0 + 1000 + 40 * k},
                  {"device": 0, "name": "pad_mm_benchmark", "stage": "END",
                   "time_us": t0 + 1000 + 40 * k + 30}]
    notes.sort(key=lambda n: n["time_us"])  # annotations are recorded in time order
    path = directory / "nested.json"
    path.write_text(json.dumps({"segments": [], "device_traces": [trace],
                                "external_annotations": notes}))
    return path


def custom_legend_checks(names: list[str]):
    """Every custom category is in the legend, at 0 B too."""
    def check(b: Browser, work: Path) -> list[str]:
        shown = b.js("Array.from(document.querySelectorAll('.chart')).map(c => Array.from("
                     "c.querySelectorAll('.legend .cat .name')).map(n => n.textContent))")
        return [f"chart {k}: custom categories {sorted(set(names) - set(s))} not in the legend"
                for k, s in enumerate(shown) if set(names) - set(s)]
    return check


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memgate", default=str(ROOT / "target/debug/memgate"))
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--out", required=True, help="directory for the screenshots")
    ap.add_argument("--real", help="directory of real snapshots: one page each")
    a = ap.parse_args()
    # Pages are written from more than one working directory.
    a.memgate = str(Path(a.memgate).resolve())
    shots = Path(a.out)
    shots.mkdir(parents=True, exist_ok=True)
    examples = [str(p) for p in sorted((ROOT / "examples/snapshots").glob("*.pickle"))]
    regressed = str(ROOT / "examples/snapshots-regressed/rank0.pickle")
    # (page name, memgate arguments, charts draw a baseline, working dir)
    started = time.monotonic()
    report: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memgate-browser-") as tmp:
        work = Path(tmp)
        traces = work / "traces"
        subprocess.run([sys.executable, str(ROOT / "tests/fixtures/gen/page_traces.py"),
                        str(traces)], check=True)
        expected = json.loads((traces / "expected.json").read_text())
        compiled, steps = str(traces / "compiled.json"), str(traces / "steps.json")
        wrapped = wrapped_snapshot(work, "wrapped", 30)
        wrapped_base = wrapped_snapshot(work, "wrapped-base", 24)
        # (page name, memgate arguments, charts draw a baseline, working dir,
        # more checks)
        cases = [
            ("examples", ["profile", *examples], False, ROOT, (profile_summary_checks,)),
            ("diff-examples", ["diff", examples[0], regressed], True, ROOT, ()),
            # The regressed example against its snapshots: failures first.
            ("check-examples", ["check", "--config", "memgate-regressed.toml",
                                "--baseline", "snapshots/"], True, ROOT / "examples",
             (check_page_checks,)),
            ("check-ranks", ["check", "--config", str(ranks_config(work))], False, ROOT,
             (ranks_checks,)),
            ("compiled", ["profile", compiled], False, ROOT, (compiled_checks(expected, report),)),
            ("steps", ["profile", steps], False, ROOT, (steps_checks(expected, report),)),
            ("window", ["profile", "--window", "#4000..#8000", "--x", "entries", steps], False,
             ROOT, (window_checks,)),
            ("overlay", ["diff", compiled, steps], True, ROOT, (overlay_checks,)),
            ("categories", ["profile", "--rules", str(rules_file(work)), *examples], False, ROOT,
             (custom_legend_checks(CUSTOM),)),
            # Band labels of nested and side-by-side spans.
            ("nested", ["profile", str(nested_snapshot(work))], False, ROOT, ()),
            # A trace that started mid-run: profile, diff and check pages.
            ("wrapped", ["profile", str(wrapped)], False, ROOT, (wrapped_checks,)),
            ("diff-wrapped", ["diff", str(wrapped_base), str(wrapped)], True, ROOT,
             (wrapped_checks,)),
            ("check-wrapped", ["check", "--config", str(wrapped_config(work, wrapped, 695))],
             False, ROOT, (wrapped_checks,)),
        ]
        if a.real:
            for p in sorted(Path(a.real).iterdir()):
                if p.suffix in (".pickle", ".pkl"):
                    cases.append((p.stem, ["profile", str(p)], False, ROOT, ()))
        cases.append(("hostile", ["profile", str(hostile_snapshot(work))], False, ROOT, ()))
        try:
            b = Browser(a.chromium, str(work / "profile"))
        except (OSError, RuntimeError) as e:
            print(f"error: cannot start {a.chromium}: {e}", file=sys.stderr)
            return 2
        failures: list[str] = []
        try:
            for name, make, baseline, cwd, extras in cases:
                got = check_page(b, a.memgate, name, make, work, shots, baseline, cwd, extras)
                size = (work / f"{name}.html").stat().st_size
                print(f"{'FAIL' if got else 'ok  '} {name}: memgate {make[0]}, "
                      f"page {size} bytes, screenshot {shots / (name + '.png')}")
                failures += got
        finally:
            b.close()
    for line in report:
        print(f"  {line}")
    for f in failures:
        print(f"  {f}", file=sys.stderr)
    print(f"{len(cases)} pages checked in {time.monotonic() - started:.1f} s, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
