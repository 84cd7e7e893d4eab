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
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEAKS = ("allocated-peak", "dynamic-peak", "reserved-peak")


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
            {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False},
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
               shots: Path, baseline: bool = False, cwd: Path = ROOT) -> list[str]:
    """Write a page with `memgate MAKE... --html PAGE` (run in `cwd`) and
    check it; `baseline`: every chart draws a baseline over it."""
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
    peak = json.loads(run_memgate(memgate, "peak", "--format", "json", "--at", "allocated",
                                  *files, cwd=cwd)) if paths else {"snapshots": []}
    devices = {(shown(s["path"]), str(d["device"])): d
               for s in peak["snapshots"] for d in s["devices"]}
    if not charts:
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
            return row && [row.querySelector('[data-bytes]').dataset.bytes,
                           row.querySelector('.stack div').textContent];
        }})()""")
        stacks = d["stacks-at-moment"]["stacks"]
        if not stacks:
            continue
        want_top = [str(stacks[0]["bytes"]),
                    shown(innermost(stacks[0]["frames"]) or "(no frames recorded)")]
        if top != want_top:
            fail(f"{where}: clicking the allocated peak lists {top}, `memgate peak` {want_top}")
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
    cases = [
        ("examples", ["profile", *examples], False, ROOT),
        ("diff-examples", ["diff", examples[0], regressed], True, ROOT),
        # The regressed example against its snapshots: failures first.
        ("check-examples", ["check", "--config", "memgate-regressed.toml",
                            "--baseline", "snapshots/"], True, ROOT / "examples"),
    ]
    if a.real:
        for p in sorted(Path(a.real).iterdir()):
            if p.suffix in (".pickle", ".pkl"):
                cases.append((p.stem, ["profile", str(p)], False, ROOT))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memgate-browser-") as tmp:
        work = Path(tmp)
        cases.append(("hostile", ["profile", str(hostile_snapshot(work))], False, ROOT))
        try:
            b = Browser(a.chromium, str(work / "profile"))
        except (OSError, RuntimeError) as e:
            print(f"error: cannot start {a.chromium}: {e}", file=sys.stderr)
            return 2
        failures: list[str] = []
        try:
            for name, make, baseline, cwd in cases:
                got = check_page(b, a.memgate, name, make, work, shots, baseline, cwd)
                size = (work / f"{name}.html").stat().st_size
                print(f"{'FAIL' if got else 'ok  '} {name}: memgate {make[0]}, "
                      f"page {size} bytes, screenshot {shots / (name + '.png')}")
                failures += got
        finally:
            b.close()
    for f in failures:
        print(f"  {f}", file=sys.stderr)
    print(f"{len(cases)} pages checked in {time.monotonic() - started:.1f} s, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
