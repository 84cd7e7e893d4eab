#!/usr/bin/env python3
"""memgate's commands against Python's `pickle.load` of the same snapshot,
interleaved in one run, as CPU time (user + sys of the process and its
threads, which a shared machine disturbs less than wall time) and peak RSS.

    python3 bench/ratio.py SNAPSHOT [--rounds 5] [--memgate NAME=PATH]...
                                    [--only inspect,peak,...]

Each round runs `pickle.load` once, then every command of every memgate
binary once; the next round starts with `pickle.load` again, so each
command run sits between two `pickle.load` runs and its ratio is taken
against their mean (rounds + 1 `pickle.load` runs for `rounds` pairs per
command). Several `--memgate` binaries (say a build of main and one of a
branch) are measured in the same rounds, so their ratios compare directly.
Reported per command: the median CPU ratio (and its range over the pairs),
the median CPU seconds, the median wall ratio, and the peak RSS as a share
of the file's size and in MiB.  stdlib only; Linux (wait4).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

TIME = "/usr/bin/time"
COMMANDS = ["inspect", "peak", "profile", "phases", "profile-html", "check"]
BUDGET = """[[target]]
name = "bench"
[target.budget]
overall-peak = "1000 GiB"
"""


def run(argv):
    """(cpu seconds, wall seconds, peak RSS bytes, exit status) of one run.
    Started through GNU time, a small C program: a process forked from this
    Python counts Python's pages in its peak RSS (the kernel keeps the
    pre-exec high-water mark), one forked from time only time's ~1 MiB.
    wait4 gives the CPU time (time's own is a millisecond)."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null, tempfile.NamedTemporaryFile("r") as out:
        p = subprocess.Popen([TIME, "-f", "%M", "-o", out.name, *argv], stdout=null, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        peak_kib = int(out.read().split()[-1])
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err.strip()[:400]}")
    return ru.ru_utime + ru.ru_stime, wall, peak_kib * 1024, code


def command_argv(binary, cmd, snapshot, work):
    if cmd == "profile-html":
        return [binary, "profile", "--html", os.path.join(work, "page.html"), snapshot]
    if cmd == "check":
        return [binary, "check", "--config", os.path.join(work, "memgate.toml"), snapshot]
    return [binary, cmd, snapshot]


def parse(argv):
    opts = {"rounds": 5, "memgate": [], "only": COMMANDS, "snapshot": None}
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--rounds":
            opts["rounds"] = int(args.pop(0))
        elif a == "--memgate":
            name, _, path = args.pop(0).partition("=")
            opts["memgate"].append((name, path or name))
        elif a == "--only":
            opts["only"] = args.pop(0).split(",")
        elif a.startswith("-"):
            # `--help`, or an option misspelt: never a snapshot to time.
            raise SystemExit(__doc__)
        else:
            opts["snapshot"] = a
    if not opts["snapshot"]:
        raise SystemExit(__doc__)
    if not opts["memgate"]:
        opts["memgate"] = [("memgate", "target/release/memgate")]
    return opts


def measure(opts, work):
    snap = opts["snapshot"]
    py = [sys.executable, "-c", "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))", snap]
    runs = {(n, c): [] for n, _ in opts["memgate"] for c in opts["only"]}
    pys = [run(py)]
    for r in range(opts["rounds"]):
        for name, binary in opts["memgate"]:
            for cmd in opts["only"]:
                runs[(name, cmd)].append(run(command_argv(binary, cmd, snap, work)))
        pys.append(run(py))
        print(f"  round {r + 1}/{opts['rounds']}: pickle.load {pys[-1][0]:.2f} s CPU", file=sys.stderr)
    return pys, runs


def report(opts, pys, runs):
    size = os.path.getsize(opts["snapshot"])
    py_cpu = [p[0] for p in pys]
    print(f"snapshot {opts['snapshot']}: {size / 1e6:.1f} MB; {opts['rounds']} pairs per command; "
          f"pickle.load {statistics.median(py_cpu):.2f} s CPU (median), "
          f"peak RSS {max(p[2] for p in pys) / size:.2f}x the file ({max(p[2] for p in pys) / 2**20:.0f} MiB)")
    print(f"{'binary':<10} {'command':<13} {'CPU ratio':>10} {'(range)':>15} {'CPU s':>7} "
          f"{'wall ratio':>10} {'RSS/file':>9} {'RSS MiB':>8}")
    for (name, cmd), rs in runs.items():
        ratios = [r[0] / ((pys[i][0] + pys[i + 1][0]) / 2) for i, r in enumerate(rs)]
        walls = [r[1] / ((pys[i][1] + pys[i + 1][1]) / 2) for i, r in enumerate(rs)]
        rss = max(r[2] for r in rs)
        print(f"{name:<10} {cmd:<13} {statistics.median(ratios):>9.3f}x "
              f"{f'{min(ratios):.3f}-{max(ratios):.3f}':>15} {statistics.median(r[0] for r in rs):>7.3f} "
              f"{statistics.median(walls):>9.3f}x {rss / size:>8.2f}x {rss / 2**20:>8.0f}")


def main(argv):
    opts = parse(argv)
    if not os.access(TIME, os.X_OK):
        raise SystemExit(f"error: {TIME} (GNU time) is required (apt-get install time)")
    with tempfile.TemporaryDirectory(prefix="memgate-ratio.") as work:
        with open(os.path.join(work, "memgate.toml"), "w") as f:
            f.write(BUDGET)
        pys, runs = measure(opts, work)
    report(opts, pys, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
