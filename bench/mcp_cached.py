#!/usr/bin/env python3
"""A new question to `memgate mcp` about a snapshot it already decoded,
against Python's `pickle.load` of the same file (issue 33: at most 0.01x).

    python3 bench/mcp_cached.py SNAPSHOT --memgate PATH [--rounds 5]

PATH is a memgate built with the `mcp` feature (`cargo build --release
--features mcp`, or the wheel's). One server session: `inspect` first
(the decode, cached), then each of `peak`, `profile`, `phases` and
`live_at` once per round, each a question the cache has not answered in
that form. The server's CPU time per call is read from /proc (user +
system of the server process, which a shared machine disturbs less than
wall time); `pickle.load` runs in a child between rounds. Needs the `mcp`
package (the official SDK) in the running Python; Linux only.
"""
from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TICKS = os.sysconf("SC_CLK_TCK")
QUESTIONS = [
    ("peak", {}),
    ("profile", {}),
    ("phases", {}),
    ("live_at", {"entry": 500000}),
]


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of process `pid` and its finished threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_pid(binary: str) -> int:
    """The newest `memgate mcp` process started from `binary`."""
    out = subprocess.run(["pgrep", "-n", "-f", f"{binary} mcp"], capture_output=True, text=True)
    return int(out.stdout.split()[0])


def pickle_cpu(path: str) -> float:
    code = f"import pickle; pickle.load(open({path!r}, 'rb'))"
    t = os.times()
    subprocess.run([sys.executable, "-c", code], check=True)
    u = os.times()
    return (u.children_user - t.children_user) + (u.children_system - t.children_system)


async def measure(binary: str, path: str, rounds: int):
    root = os.path.dirname(os.path.abspath(path))
    params = StdioServerParameters(command=binary, args=["mcp", "--root", root], cwd=root)
    name = os.path.basename(path)
    times: dict[str, list[float]] = {}
    loads: list[float] = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            pid = server_pid(binary)

            async def timed(tool, args):
                before, t0 = cpu_of(pid), time.perf_counter()
                # `inspect` takes a list of paths, the others one.
                target = {"paths": [name]} if tool == "inspect" else {"path": name}
                res = await s.call_tool(tool, {**target, **args})
                wall = time.perf_counter() - t0
                if getattr(res, "isError", False) or getattr(res, "is_error", False):
                    raise SystemExit(f"{tool}: {res.content[0].text[:300]}")
                return cpu_of(pid) - before, wall

            cold = await timed("inspect", {})
            for _ in range(rounds):
                loads.append(pickle_cpu(path))
                for tool, args in QUESTIONS:
                    times.setdefault(tool, []).append(await timed(tool, args))
            loads.append(pickle_cpu(path))
    return cold, times, loads


def main(argv):
    args = argv[1:]
    binary, rounds, path = None, 5, None
    while args:
        a = args.pop(0)
        if a == "--memgate":
            binary = os.path.abspath(args.pop(0))
        elif a == "--rounds":
            rounds = int(args.pop(0))
        elif a.startswith("-"):
            raise SystemExit(__doc__)
        else:
            path = a
    if not (binary and path):
        raise SystemExit(__doc__)
    cold, times, loads = asyncio.run(measure(binary, path, rounds))
    load = statistics.median(loads)
    print(f"snapshot {path}: pickle.load {load:.2f} s CPU (median of {len(loads)})")
    print(f"first question (decode): {cold[0]:.3f} s CPU, {cold[0] / load:.4f}x")
    print("question   CPU s   ratio    wall s  (median of rounds, cached snapshot)")
    for tool, v in times.items():
        cpu = statistics.median(c for c, _ in v)
        wall = statistics.median(w for _, w in v)
        print(f"{tool:9} {cpu:7.3f} {cpu / load:8.4f}x {wall:8.3f}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
