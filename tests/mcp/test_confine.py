"""`memgate mcp` holding its roots against a live attacker (issue 31):
every file is opened beneath a root's descriptor, a special file is refused
without waiting, and `check` reads back only what it wrote in a private
directory. Driven by the official MCP client, as test_mcp.py.

MEMGATE_RACE_S sets how long the rename-exchange race runs (5 s by default;
the issue asks for 20).
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_mcp import REPO, binary, call, session

RACE_S = float(os.environ.get("MEMGATE_RACE_S", "5"))
EXAMPLE = REPO / "examples" / "snapshots"

# Swaps two paths with renameat2(RENAME_EXCHANGE) until killed: the
# directory `d` under the root and a link to a directory outside.
SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
AT_FDCWD, RENAME_EXCHANGE = -100, 2
if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
print("ready", flush=True)
while True:
    libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
"""

SECRET_RULES = 'SECRET-RULES-LINE = "never shown\n'


def race_tree(tmp_path: Path):
    """A root whose `d/` holds a snapshot and a rules file, a link `swap`
    to an outside directory with a hostile rules file and another
    snapshot of the same names; the swapper exchanges `d` and `swap`."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    shutil.copy(EXAMPLE / "rank0.pickle", root / "d" / "snap.pickle")
    (root / "d" / "rules.toml").write_text('[categories]\nmine = "forward"\n')
    shutil.copy(EXAMPLE / "rank1.pickle", outside / "snap.pickle")
    (outside / "rules.toml").write_text(SECRET_RULES)
    (outside / ".snap.env.json").write_text(json.dumps(
        {"kind": "memgate-environment", "torch": "SECRET-ENV"}))
    (root / "swap").symlink_to(outside, target_is_directory=True)
    return root, outside


def listing(d: Path):
    return sorted((str(p.relative_to(d)), p.stat().st_size if p.is_file() else -1)
                  for p in d.rglob("*"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_a_rename_exchange_race_leaks_nothing_and_writes_nothing_outside_the_root(tmp_path):
    root, outside = race_tree(tmp_path)
    before = listing(outside)
    budget = {"target": [{"name": "t", "snapshots": "d/snap.pickle",
                          "budget": {"allocated-peak": "1 GiB"}}]}
    calls = [
        ("peak", {"path": "d/snap.pickle", "rules": "d/rules.toml", "detail": "full"}),
        ("profile", {"path": "d/snap.pickle", "html": "d/p.html"}),
        ("summarize", {"paths": ["d/snap.pickle"], "output_dir": "d"}),
        ("check", {"budget": budget, "html": "d/c.html"}),
        ("inspect", {"paths": ["d/snap.pickle"]}),
    ]

    async def body(s):
        # What the root's own files give, before the race: every answer of
        # the race that succeeds must say the same (the outside snapshot is
        # another one).
        expected = {tool: (await call(s, tool, args))[1]["document"]
                    for tool, args in calls if tool in ("peak", "inspect")}
        swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root / "d"),
                                    str(root / "swap")], stdout=subprocess.PIPE, text=True)
        try:
            if swapper.stdout.readline().strip() != "ready":
                return None, None
            answers, end, i = [], time.monotonic() + RACE_S, 0
            while time.monotonic() < end:
                tool, args = calls[i % len(calls)]
                answers.append((tool, await call(s, tool, args)))
                i += 1
            return answers, expected
        finally:
            swapper.kill()
            swapper.wait()

    answers, expected = session([root], body)
    if answers is None:
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    # The swapper may have stopped with `d` as the link: put it back.
    if (root / "d").is_symlink():
        os.rename(root / "d", root / "tmp")
        os.rename(root / "swap", root / "d")
        os.rename(root / "tmp", root / "swap")
    texts = [json.dumps(ans) if not err else ans for _, (err, ans) in answers]
    leaked = [t for t in texts if "SECRET" in t]
    assert not leaked, leaked[:3]
    wrong = [tool for tool, (err, ans) in answers
             if not err and tool in expected and ans["document"] != expected[tool]]
    assert not wrong, f"{len(wrong)} answers read another file: {wrong[:3]}"
    assert listing(outside) == before, "written outside the root"
    ok = sum(1 for _, (err, _) in answers if not err)
    print(f"race {RACE_S:.0f} s: {len(answers)} calls, {ok} answered, "
          f"{len(answers) - ok} refused, none leaked or wrote outside")
    assert len(answers) >= 20 and ok >= 5, (len(answers), ok)


def test_an_environment_file_linked_out_of_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    shutil.copy(EXAMPLE / "rank0.pickle", root / "run.pickle")
    (outside / "env.json").write_text(json.dumps(
        {"kind": "memgate-environment", "backend": "cuda", "torch": "SECRET-TORCH"}))
    (root / ".run.env.json").symlink_to(outside / "env.json")

    async def body(s):
        return [await call(s, "peak", {"path": "run.pickle"}),
                await call(s, "profile", {"path": "run.pickle"}),
                await call(s, "inspect", {"paths": ["run.pickle"]})]

    answers = session([root], body)
    for err, text in answers[:2]:
        assert err and ".run.env.json" in text, text
        assert "SECRET" not in text, text
    # inspect reads no environment file: it answers, and says nothing of it.
    assert not answers[2][0] and "SECRET" not in json.dumps(answers[2][1])


def test_fifo_snapshots_are_error_results_at_once_and_600_leave_the_server_answering(tmp_path):
    shutil.copy(EXAMPLE / "rank0.pickle", tmp_path / "ok.pickle")
    for i in range(600):
        os.mkfifo(tmp_path / f"f{i}.pickle")

    async def body(s):
        t0 = time.monotonic()
        first = await asyncio.wait_for(call(s, "peak", {"path": "f0.pickle"}), 10)
        once = time.monotonic() - t0
        rest = await asyncio.wait_for(asyncio.gather(*(
            call(s, tool, {"path": f"f{i}.pickle"})
            for i in range(1, 600) for tool in ["peak" if i % 2 else "explain_oom"])), 60)
        ok = await asyncio.wait_for(call(s, "peak", {"path": "ok.pickle"}), 30)
        return first, once, rest, ok

    first, once, rest, ok = session([tmp_path], body)
    assert first[0] and "FIFO" in first[1], first
    assert once < 2, f"the FIFO took {once:.2f} s to refuse"
    assert all(err and "FIFO" in text for err, text in rest), [r for r in rest if not r[0]][:2]
    assert not ok[0] and ok[1]["kind"] == "memgate.mcp.peak/1"


def test_a_verdict_planted_in_the_temporary_directory_is_never_read(tmp_path):
    root, tmp = tmp_path / "root", tmp_path / "tmp"
    root.mkdir()
    tmp.mkdir()
    shutil.copy(EXAMPLE / "rank0.pickle", root / "rank0.pickle")
    pidfile = tmp_path / "pid"
    # The server's pid, written before it starts (exec keeps it).
    command = ["sh", "-c", 'echo $$ > "$0"; exec "$@"', str(pidfile),
               "env", f"TMPDIR={tmp}", binary()]
    # A budget that cannot be used (its rules file does not exist): check
    # judges nothing and writes no verdict.
    unusable = {"defaults": {"rules": "missing-rules.toml"},
                "target": [{"name": "t", "snapshots": "rank0.pickle",
                            "budget": {"allocated-peak": "1 GiB"}}]}
    planted = json.dumps({"verdict": "pass", "counts": {"pass": 1}, "targets": []})

    async def body(s):
        pid = pidfile.read_text().strip()
        # The names the server used before, numbered by call: a verdict
        # that passes, then a FIFO.
        for n in range(8):
            (tmp / f"memgate-mcp-{pid}-{n}.json").write_text(planted)
        os.mkfifo(tmp / f"memgate-mcp-{pid}-8.json")
        for _ in range(10):
            err, text = await asyncio.wait_for(call(s, "check", {"budget": unusable}), 20)
            assert err, text
            assert "missing-rules.toml" in text and "pass" not in text, text
        return await call(s, "check", {"budget": {**unusable, "defaults": {}}})

    good = session([root], body, command=command)
    assert not good[0] and good[1]["verdict"] == "pass", good
    # The private directories are gone, and nothing was left in the root.
    assert not [p.name for p in tmp.iterdir() if p.is_dir()], list(tmp.iterdir())
    assert sorted(p.name for p in root.iterdir()) == ["rank0.pickle"]
