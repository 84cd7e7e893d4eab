"""`memgate mcp` driven by a real MCP client (the official Python SDK, `mcp`).

Run:  cargo build --features mcp
      MEMGATE_BIN=target/debug/memgate python -m pytest -q tests/mcp
(MEMGATE_BIN defaults to target/release/memgate, else target/debug/memgate;
the server is only in builds with the `mcp` feature and in the wheel's
`memgate`: .ci/run uses the wheel's.)
Every expectation comes from an independent source: the CLI's own
`--format json` output, the regressed example's documented failure, or the
snapshot this file writes itself.
"""
from __future__ import annotations

import asyncio
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
# ../shared beside the checkout (CI, the main checkout), or a worktree's grandparent.
# Resolved: the server names files by their canonical path (a linked
# ../shared would otherwise make the CLI's paths differ from its).
REAL = next((d for d in (REPO.parent / "shared" / "fixtures" / "real",
                         REPO.parent.parent / "shared" / "fixtures" / "real") if d.is_dir()),
            REPO.parent / "shared" / "fixtures" / "real").resolve()
CAP = 64 * 1024
FULL_CAP = 256 * 1024  # an answer that asked for the whole document
TOOLS = {"inspect", "peak", "profile", "phases", "live_at", "diff", "ranks",
         "explain_oom", "check", "summarize"}


def binary() -> str:
    given = os.environ.get("MEMGATE_BIN")
    if given:
        return given
    for kind in ("release", "debug"):
        p = REPO / "target" / kind / "memgate"
        if p.exists():
            return str(p)
    pytest.fail("no memgate binary: build it or set MEMGATE_BIN")


def session(roots, body, command=None, errlog=None):
    """Run `body(session, proc_pid)` against one `memgate mcp --root …`
    session, the server's stderr to `errlog` (an open file) when given."""
    cmd = command or [binary()]
    args = cmd[1:] + ["mcp"] + [a for r in roots for a in ("--root", str(r))]
    params = StdioServerParameters(command=cmd[0], args=args, cwd=str(roots[0]))

    async def main():
        async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await body(s)

    return asyncio.run(main())


def attr(obj, *names):
    """A field of the SDK's models, whichever spelling this SDK version uses."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    raise AttributeError(names)


async def call(s, tool, args):
    res = await s.call_tool(tool, args)
    text = res.content[0].text
    error = attr(res, "is_error", "isError")
    cap = FULL_CAP if args.get("detail") == "full" else CAP
    assert len(text.encode()) <= cap, f"{tool}: {len(text)} bytes over the cap"
    return error, (text if error else json.loads(text))


def cli_json(*args, cwd=REPO):
    out = subprocess.run([binary(), *args, "--format", "json"], cwd=cwd,
                         capture_output=True, check=True)
    return json.loads(out.stdout)


def test_lists_the_ten_tools_with_schemas():
    async def body(s):
        return (await s.list_tools()).tools

    tools = session([REPO], body)
    assert {t.name for t in tools} == TOOLS
    for t in tools:
        assert attr(t, "input_schema", "inputSchema")["type"] == "object", t.name
        # Every answer also comes as structuredContent, declared here.
        out = attr(t, "output_schema", "outputSchema")
        assert out["type"] == "object" and {"kind", "trust"} <= set(out["required"]), t.name
        assert t.description, t.name
    peak = next(t for t in tools if t.name == "peak")
    schema = attr(peak, "input_schema", "inputSchema")
    assert "path" in schema["required"]
    assert {"limit", "cursor", "window", "at"} <= set(schema["properties"])


def peak_equals_cli(path: Path, limit=None):
    """`peak` at the default page (5) or `limit` equals the CLI's `--top` as many."""
    async def body(s):
        args = {"path": str(path), "detail": "full"}
        if limit:
            args["limit"] = limit
        return await call(s, "peak", args)

    err, ans = session([path.parent], body)
    assert not err, ans
    assert ans["kind"] == "memgate.mcp.peak/1"
    for flag in ("lower_bound", "trace_incomplete", "device_kind", "missing_time_us"):
        assert flag in ans["trust"]
    want = cli_json("peak", str(path.resolve()), "--top", str(limit or 5))
    assert "cut" not in ans, ans["cut"]
    assert ans["document"] == want
    fig = ans["figures"][0]["allocated-peak"]
    assert fig["value"] == want["snapshots"][0]["devices"][0]["figures"]["allocated-peak"]
    assert fig["human"].endswith("iB") or fig["human"].endswith(" B")
    return ans


def test_peak_on_the_bundled_example_equals_the_cli():
    ans = peak_equals_cli(REPO / "examples" / "snapshots" / "rank0.pickle")
    assert ans["trust"]["device_kind"] == "cuda"
    assert ans["trust"]["lower_bound"] is False
    where = ans["where"][0]["stacks_at_peak"][0]["where"]
    assert where["user_frames"] > 0 and ":" in where["frames"][0], where


def test_peak_on_a_real_fixture_equals_the_cli():
    if not REAL.is_dir():
        pytest.skip(f"REAL FIXTURES ABSENT: {REAL} missing; the real-fixture check did not run")
    for name in ("wedsonlin_medium_1024_training.pickle", "npu_memsnapdump_training.pkl"):
        p = REAL / name
        if not p.exists():
            pytest.skip(f"REAL FIXTURE ABSENT: {p}")
        ans = peak_equals_cli(p, limit=2)
        if name.startswith("npu"):
            assert ans["trust"]["device_kind"] == "npu"


def test_check_on_the_regressed_example_fails_with_findings_and_causes():
    async def body(s):
        return await call(s, "check", {"config": "examples/memgate-regressed.toml", "limit": 50})

    err, ans = session([REPO], body)
    assert not err, ans
    assert ans["verdict"] == "fail" and ans["exit_code"] == 1
    # Ten failed checks, two regressions: one finding line per rank names
    # the figures that moved together, the headroom and the top site.
    assert ans["counts"]["fail"] == 10 and ans["counts"]["regressions"] == 2
    assert len(ans["findings"]) == 2, ans["findings"]
    for f in ans["findings"]:
        assert "allocated-, dynamic-, overall-" in f and "of 208 MiB (102%, over by 4.10 MiB)" in f, f
        assert "top site: +12 MiB forward" in f, f
    checks = {(c["snapshot"], c["check"]): c for c in ans["checks"]}
    ap = checks[("rank0", "allocated-peak")]
    assert ap["status"] == "fail"
    assert {f["kind"] for f in ap["findings"]} >= {"grew", "peak-at"}
    assert ap["budget"]["bytes"] == 208 << 20


def test_an_inline_budget_passes_and_fails_like_a_file():
    def budget(limit):
        return {"target": [{"name": "inline", "snapshots": "examples/snapshots/rank0.pickle",
                            "budget": {"allocated-peak": limit}}]}

    async def body(s):
        return (await call(s, "check", {"budget": budget("1 GiB")}),
                await call(s, "check", {"budget": budget("100 MiB")}))

    (e1, a1), (e2, a2) = session([REPO], body)
    assert not e1 and not e2
    assert a1["verdict"] == "pass" and a2["verdict"] == "fail"
    assert not list(REPO.glob(".memgate-mcp-budget-*"))


def test_outside_the_root_and_hostile_pickles_are_errors_and_the_server_keeps_serving(tmp_path):
    # Every code-running opcode, alone and inside a valid snapshot.
    hostile = sorted((REPO / "tests" / "fixtures" / "hostile").glob("code_*.pickle"))
    assert len(hostile) >= 20
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(REPO / "examples" / "snapshots" / "rank0.pickle", root / "ok.pickle")
    for h in hostile:
        shutil.copy(h, root / h.name)
    (root / "escape.pickle").symlink_to(REPO / "examples" / "snapshots" / "rank1.pickle")

    async def body(s):
        out = [await call(s, "peak", {"path": str(REPO / "examples/snapshots/rank1.pickle")}),
               await call(s, "peak", {"path": "../" + "x.pickle"}),
               await call(s, "peak", {"path": "escape.pickle"})]
        for h in hostile:
            out.append(await call(s, "peak", {"path": h.name}))
        out.append(await call(s, "peak", {"path": "ok.pickle", "limit": 0}))
        out.append(await call(s, "peak", {"path": "ok.pickle"}))
        return out

    answers = session([root], body)
    *bad, good = answers
    for err, text in bad[:3]:
        assert err and ("outside the roots" in text or "No such file" in text), text
    for err, text in bad[3:-1]:
        assert err and "refused opcode" in text, text
    assert bad[-1][0] and "limit 0" in bad[-1][1]
    assert not good[0] and good[1]["kind"] == "memgate.mcp.peak/1"
    assert not list(root.rglob("memgate-pwned")) and not list(REPO.rglob("memgate-pwned"))


def test_links_behind_a_budget_or_a_directory_are_refused_and_the_server_keeps_serving(tmp_path):
    # A root whose own files are fine, with a directory outside it that
    # links inside lead to: the budget names only relative paths, but a
    # linked directory, a glob matching a link, or a directory holding one
    # would read the outside file.
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "runs").mkdir(parents=True)
    outside.mkdir()
    shutil.copy(REPO / "examples" / "snapshots" / "rank0.pickle", root / "runs" / "rank0.pickle")
    shutil.copy(REPO / "examples" / "snapshots" / "rank1.pickle", outside / "secret.pickle")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "linked").mkdir()
    (root / "linked" / "rank0.pickle").symlink_to(outside / "secret.pickle")

    def budget(snapshots, **extra):
        return {"target": [{"name": "t", "snapshots": snapshots, **extra,
                            "budget": {"allocated-peak": "1 GiB"}}]}

    refused = [
        ("target.snapshots", "out", {"budget": budget("out/*.pickle")}),
        ("target.snapshots", "linked/rank0.pickle", {"budget": budget("linked/*.pickle")}),
        ("target.snapshots", "out", {"budget": budget("*/secret.pickle")}),
        ("target.baseline", "out", {"budget": budget("runs/*.pickle", baseline="out")}),
        ("snapshots", "linked/rank0.pickle",
         {"budget": budget("runs/*.pickle"), "snapshots": ["linked"]}),
        ("baseline", "linked/rank0.pickle",
         {"budget": budget("runs/*.pickle"), "baseline": "linked"}),
    ]
    (root / "memgate.toml").write_text(
        '[[target]]\nname = "t"\nsnapshots = "out/*.pickle"\n'
        '[target.budget]\nallocated-peak = "1 GiB"\n')

    async def body(s):
        out = [await call(s, "check", args) for _, _, args in refused]
        out.append(await call(s, "check", {"config": "memgate.toml"}))
        out.append(await call(s, "diff", {"base": "runs", "new": "linked"}))
        out.append(await call(s, "check", {"budget": budget("runs/*.pickle")}))
        return out

    *bad, good = session([root], body)
    for (key, via, args), (err, text) in zip(refused + [("target.snapshots", "out", None),
                                                        ("new", "linked/rank0.pickle", None)], bad):
        assert err, (args, text)
        assert "outside the roots" in text and key in text and via in text, (args, text)
    assert not good[0] and good[1]["verdict"] == "pass", good
    assert not list(root.glob(".memgate-mcp-budget-*"))


def many_sites_snapshot(path: Path, n: int):
    """A valid snapshot with `n` live allocations, each from its own site."""
    base, size = 0x7F0000000000, 512
    blocks, trace = [], [{"action": "segment_alloc", "addr": base, "size": n * size,
                          "stream": 0, "frames": [], "time_us": 1_000_000}]
    for i in range(n):
        frames = [{"filename": f"/srv/app/m{i}.py", "line": i + 1, "name": f"fn_{i}"}]
        blocks.append({"address": base + i * size, "size": size, "requested_size": size,
                       "state": "active_allocated", "frames": frames})
        trace.append({"action": "alloc", "addr": base + i * size, "size": size, "stream": 0,
                      "frames": frames, "time_us": 1_000_001 + i})
    seg = {"device": 0, "address": base, "total_size": n * size, "allocated_size": n * size,
           "active_size": n * size, "requested_size": n * size, "stream": 0,
           "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
           "frames": [], "blocks": blocks}
    path.write_bytes(pickle.dumps({"segments": [seg], "device_traces": [trace]}, protocol=4))


def test_ten_thousand_sites_come_back_in_pages_under_the_cap(tmp_path):
    n = 10_000
    many_sites_snapshot(tmp_path / "many.pickle", n)

    async def body(s):
        sites, pages, cursor = [], 0, None
        while True:
            args = {"path": "many.pickle", "limit": 250}
            if cursor:
                args["cursor"] = cursor
            err, ans = await call(s, "profile", args)  # each page checked under the cap
            assert not err, ans
            assert "cut" not in ans, ans["cut"]
            dev = ans["summary"]["snapshots"][0]["devices"][0]
            sites.extend(x["site"] for x in dev["sites-at-peak"])
            pages += 1
            cursor = ans.get("next_cursor")
            if not cursor:
                return sites, pages
            assert pages < 100

    sites, pages = session([tmp_path], body)
    assert pages == n // 250
    assert len(sites) == n and len(set(sites)) == n
    assert set(sites) == {f"fn_{i} (m{i}.py)" for i in range(n)}


def test_a_second_peak_on_a_large_file_is_ten_times_faster_and_memory_stays_bounded(tmp_path):
    big = tmp_path / "large.pickle"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_large.py"), str(big),
                    "--entries", "200000"], check=True, capture_output=True)

    async def body(s):
        t0 = time.perf_counter()
        e1, a1 = await call(s, "peak", {"path": "large.pickle"})
        t1 = time.perf_counter()
        e2, a2 = await call(s, "peak", {"path": "large.pickle"})
        t2 = time.perf_counter()
        rss = []
        for _ in range(5):
            await call(s, "peak", {"path": "large.pickle", "limit": 5})
            rss.append(server_rss_kib())
        return (t1 - t0, t2 - t1, a1, a2, rss, e1, e2)

    first, second, a1, a2, rss, e1, e2 = session([tmp_path], body)
    assert not e1 and not e2
    assert (a2["cache"]["reused"], a2["cache"]["decoded"]) == (1, 0)
    assert a2["cache"]["snapshots"] == 1
    assert a1["summary"] == a2["summary"]
    assert second * 10 <= first, f"first {first:.3f}s, second {second:.3f}s"
    # Repeated calls on a cached file do not grow the server.
    assert max(rss) - min(rss) < 64 * 1024, rss
    assert max(rss) < 2 * 1024 * 1024, rss


def server_rss_kib() -> int:
    """The resident set of the newest `memgate mcp` child of this process."""
    me = os.getpid()
    best = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            cmd = (status.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        if int(fields.get("PPid", "0").strip()) == me and b"mcp" in cmd:
            best = max(best, int(fields.get("VmRSS", "0 kB").split()[0]))
    return best


def test_the_other_tools_answer_with_their_kinds(tmp_path):
    ex = REPO / "examples"

    async def body(s):
        r = {}
        r["inspect"] = await call(s, "inspect", {"paths": ["examples/snapshots/rank0.pickle"]})
        r["profile"] = await call(s, "profile", {
            "path": "examples/snapshots/rank0.pickle",
            "categories": {"mlp": "fc1|fc2"}, "html": str(tmp_path / "p.html"), "detail": "full"})
        r["profile_ann"] = await call(s, "profile", {"path": "examples/snapshots/rank0.pickle",
                                                     "group_by": "annotation"})
        r["phases"] = await call(s, "phases", {"path": "examples/snapshots/rank0.pickle"})
        r["live_phase"] = await call(s, "live_at", {"path": "examples/snapshots/rank0.pickle",
                                                    "phase": "## forward ##"})
        r["live_entry"] = await call(s, "live_at", {"path": "examples/snapshots/rank0.pickle",
                                                    "entry": 194, "detail": "full"})
        r["diff"] = await call(s, "diff", {"base": "examples/snapshots/rank0.pickle",
                                           "new": "examples/snapshots-regressed/rank0.pickle",
                                           "detail": "full"})
        r["ranks"] = await call(s, "ranks", {"paths": ["examples/snapshots/rank0.pickle",
                                                       "examples/snapshots/rank1.pickle"]})
        r["oom"] = await call(s, "explain_oom", {"path": "examples/snapshots/rank0.pickle"})
        return r

    r = session([REPO, tmp_path], body)
    for name, (err, ans) in r.items():
        assert not err, (name, ans)
    assert r["inspect"][1]["document"] == cli_json("inspect", str(ex / "snapshots/rank0.pickle"))
    assert r["phases"][1]["kind"] == "memgate.mcp.phases/1"
    assert "mlp" in r["profile"][1]["document"]["snapshots"][0]["devices"][0]["categories"]["peaks"]
    assert Path(r["profile"][1]["html"]).exists()
    assert "html" not in json.dumps(r["profile"][1]["document"])[:0]
    # The peak of the whole run equals the live bytes after its entry (194).
    peak = cli_json("peak", str(ex / "snapshots/rank0.pickle"))["snapshots"][0]["devices"][0]
    live = r["live_entry"][1]["document"]["snapshots"][0]["devices"][0]
    assert live["figures"]["allocated-peak"] == peak["figures"]["allocated-peak"]
    assert r["live_phase"][1]["live"][0]["allocations"]
    want = cli_json("diff", str(ex / "snapshots/rank0.pickle"),
                    str(ex / "snapshots-regressed/rank0.pickle"), "--top", "11")
    got = r["diff"][1]["document"]
    assert got["devices"][0]["figures"] == want["devices"][0]["figures"]
    rows = r["ranks"][1]["ranks"]
    assert [row["device"] for row in rows] == [0, 1]
    assert r["oom"][1]["oom_events"] == 0


def test_oom_lower_bound_and_npu_are_flagged_as_the_cli_reports_them():
    syn = REPO / "tests" / "fixtures" / "synthetic"

    async def body(s):
        return (await call(s, "explain_oom", {"path": "oom_snapshot.pickle"}),
                await call(s, "peak", {"path": "ring_wrapped.pickle"}),
                await call(s, "peak", {"path": "npu.pickle"}))

    (e1, oom), (e2, ring), (e3, npu) = session([syn], body)
    assert not (e1 or e2 or e3)
    want = cli_json("peak", str(syn / "oom_snapshot.pickle"))["snapshots"][0]["devices"]
    events = sum(d["figures"]["oom-events"] for d in want)
    assert events > 0 and oom["oom_events"] == events
    first = next(d["oom"][0] for d in want if d.get("oom"))
    assert oom["ooms"][0]["requested"]["bytes"] == first["requested"]
    assert oom["ooms"][0]["requested"]["human"]
    ring_cli = cli_json("peak", str(syn / "ring_wrapped.pickle"))["snapshots"][0]["devices"][0]
    assert ring_cli["trace-complete"] is False
    assert ring["trust"]["lower_bound"] is True and ring["trust"]["trace_incomplete"] is True
    assert npu["trust"]["device_kind"] == "npu"


def test_default_answers_on_large_real_files_are_summaries_under_8_kib_and_full_equals_the_cli():
    if not REAL.is_dir():
        pytest.skip(f"REAL FIXTURES ABSENT: {REAL} missing; the answer-size check did not run")
    # The largest real files; oom_constructor_sun has three devices.
    names = ("oom_constructor_sun.pickle", "wedsonlin_medium_1024_training.pickle",
             "select_n_04d383c.pickle")
    for name in names:
        if not (REAL / name).exists():
            pytest.skip(f"REAL FIXTURE ABSENT: {REAL / name}")

    async def body(s):
        out = {}
        for name in names:
            budget = {"target": [{"name": "t", "snapshots": name,
                                  "budget": {"allocated-peak": "15 GiB"}}]}
            for tool, args in (("peak", {"path": name}), ("profile", {"path": name}),
                               ("live_at", {"path": name, "peak": "allocated"}),
                               ("explain_oom", {"path": name}), ("check", {"budget": budget})):
                res = await s.call_tool(tool, args)
                out[(name, tool)] = (res.content[0].text, attr(res, "structured_content",
                                                               "structuredContent"))
            res = await s.call_tool("peak", {"path": name, "detail": "full"})
            out[(name, "full")] = json.loads(res.content[0].text)
        return out

    out = session([REAL], body)
    for name in names:
        want = cli_json("peak", str(REAL / name), "--top", "5")
        for tool in ("peak", "profile", "live_at", "explain_oom", "check"):
            text, structured = out[(name, tool)]
            assert len(text.encode()) <= 8 * 1024, (name, tool, len(text.encode()))
            ans = json.loads(text)
            assert structured == ans, (name, tool)
            assert "document" not in ans and "torch::unwind" not in text, (name, tool)
        peak = json.loads(out[(name, "peak")][0])
        devices = want["snapshots"][0]["devices"]
        assert len(peak["figures"]) == len(devices)
        for row, dev in zip(peak["figures"], devices):
            for fid, value in dev["figures"].items():
                assert row[fid]["value"] == value, (name, fid)
            # Counts as counts: 678 segment allocations are "678", not "678 B".
            assert row["segment-allocs"]["human"] == str(dev["figures"]["segment-allocs"])
        assert out[(name, "full")]["document"] == want


def test_the_flat_inline_budget_of_the_pytest_marker_judges_the_given_snapshots():
    snap = "examples/snapshots/rank0.pickle"

    async def body(s):
        return (await call(s, "check", {"budget": {"allocated-peak": "1 GiB"}, "snapshots": [snap]}),
                await call(s, "check", {"budget": {"allocated_peak": "100 MiB"},
                                        "snapshots": [snap]}),
                await call(s, "check", {"budget": {"allocated-peak": "lots"}, "snapshots": [snap]}),
                await call(s, "check", {"budget": {"allocated-peak": "1 GiB"}}))

    (e1, a1), (e2, a2), (e3, bad), (e4, none) = session([REPO], body)
    assert not e1 and not e2, (a1, a2)
    assert a1["verdict"] == "pass" and a2["verdict"] == "fail"
    failed = {c["check"]: c for c in a2["checks"]}
    assert failed["allocated-peak"]["budget"]["bytes"] == 100 << 20
    # Errors name the argument, never a file the server made.
    assert e3 and bad.startswith("budget"), bad
    assert "allocated-peak" in bad and "tmp" not in bad and "inline-budget" not in bad, bad
    assert e4 and "snapshots" in none, none


def test_document_to_writes_the_whole_document_and_never_over_the_snapshot(tmp_path):
    snap = tmp_path / "rank0.pickle"
    shutil.copy(REPO / "examples" / "snapshots" / "rank0.pickle", snap)
    before = snap.read_bytes()

    async def body(s):
        return (await call(s, "peak", {"path": "rank0.pickle", "document_to": "doc.json"}),
                await call(s, "peak", {"path": "rank0.pickle", "document_to": "rank0.pickle"}),
                await call(s, "peak", {"path": "rank0.pickle", "detail": "everything"}))

    (e1, ans), (e2, over), (e3, bad) = session([tmp_path], body)
    assert not e1, ans
    assert "document" not in ans and Path(ans["document_written"]) == (tmp_path / "doc.json")
    assert json.loads((tmp_path / "doc.json").read_text()) == cli_json("peak", str(snap), "--top", "5")
    assert e2 and "document_to" in over, over
    assert snap.read_bytes() == before
    assert e3 and "detail" in bad, bad


def test_diff_check_and_summarize_come_from_the_cache_each_answer_fits_its_tools_schema_and_nothing_goes_to_stderr(tmp_path):
    import jsonschema

    args = {"base": "examples/snapshots/rank0.pickle", "new": "examples/snapshots-regressed/rank0.pickle"}
    out = tmp_path / "summaries"
    out.mkdir()

    async def body(s):
        tools = {t.name: attr(t, "output_schema", "outputSchema") for t in (await s.list_tools()).tools}
        r = {"diff1": await call(s, "diff", {**args, "html": str(tmp_path / "diff.html")}),
             "diff2": await call(s, "diff", args)}
        for k in ("check1", "check2"):
            r[k] = await call(s, "check", {"config": "examples/memgate-regressed.toml",
                                           "html": str(tmp_path / f"{k}.html")})
        r["summarize"] = await call(s, "summarize", {"paths": ["examples/snapshots/rank0.pickle"],
                                                     "output_dir": str(out)})
        return tools, r

    with open(tmp_path / "stderr.txt", "w") as errlog:
        tools, r = session([REPO, tmp_path], body, errlog=errlog)
    for name, (err, ans) in r.items():
        assert not err, (name, ans)
    a = {name: ans for name, (_, ans) in r.items()}
    # Each snapshot decoded once in the session, then reused: diff's two
    # sides, check's two regressed ranks (its golden summaries are read),
    # summarize's rank0 (decoded by diff).
    cache = {name: (ans["cache"]["decoded"], ans["cache"]["reused"]) for name, ans in a.items()}
    assert cache == {"diff1": (2, 0), "diff2": (0, 2), "check1": (1, 1), "check2": (0, 2),
                     "summarize": (0, 1)}, cache
    assert a["diff1"]["summary"] == a["diff2"]["summary"]
    assert a["check1"]["findings"] == a["check2"]["findings"] and a["check1"]["verdict"] == "fail"
    # The summary written from the cached snapshot is the CLI's, byte for byte.
    cli_out = tmp_path / "cli"
    subprocess.run([binary(), "summarize", "-o", str(cli_out), str(REPO / "examples/snapshots/rank0.pickle")],
                   check=True, capture_output=True)
    assert (out / "rank0.json").read_bytes() == (cli_out / "rank0.json").read_bytes()
    for name, schema in tools.items():
        assert schema["properties"]["kind"]["const"] == f"memgate.mcp.{name}/1", name
    assert tools["check"] != tools["diff"] and "verdict" in tools["check"]["required"]
    for name, tool in (("diff1", "diff"), ("check1", "check"), ("summarize", "summarize")):
        jsonschema.validate(a[name], tools[tool])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(a["diff1"], tools["check"])
    # The verdict `check` read back lived in a private directory, now gone,
    # and the pages are named in the answers: no `wrote` line on stderr.
    assert a["diff1"]["html"] == str(tmp_path / "diff.html") and (tmp_path / "diff.html").is_file()
    assert a["check1"]["html"] == str(tmp_path / "check1.html") and (tmp_path / "check1.html").is_file()
    assert (tmp_path / "stderr.txt").read_text() == ""
