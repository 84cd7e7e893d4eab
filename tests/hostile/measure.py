#!/usr/bin/env python3
"""Measure memgate's peak memory per input byte on worst-case inputs.

    cargo build --release
    python3 tests/hostile/measure.py [target/release/memgate] [MiB ...]

For each input shape that costs memgate the most per byte (one container,
reference or string per opcode byte), writes files of the given sizes
(default 8 and 32 MiB) to a scratch directory, runs ``memgate inspect`` on
each, and reads the child's peak RSS from ``os.wait4``. Prints, per shape,
k = (peak RSS - baseline) / file size; SECURITY.md quotes the largest.
Stdlib only; a few minutes at most.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time


def shapes(n: int) -> dict[str, bytes]:
    """Inputs of about ``n`` bytes."""
    p4 = b"\x80\x04"
    distinct = bytearray(p4 + b"(")
    i = 0
    while len(distinct) < n:
        s = i.to_bytes(3, "little")
        distinct += b"\x8c\x03" + s
        i += 1
    distinct += b"l."
    # One segment with minimal blocks (10 bytes each, keys by memo): what a
    # valid-looking file costs per block in the model.
    blocks = bytearray(p4 + b"}(\x8c\x08segments](}(\x8c\x06deviceK\x00\x8c\x07addressK\x00"
                       b"\x8c\x0atotal_sizeK\x00\x8c\x06blocks](}(\x8c\x04size\x94K\x00"
                       b"\x8c\x05state\x94\x8c\x08inactive\x94u")
    blocks += b"}(h\x00K\x00h\x01h\x02u" * ((n - len(blocks)) // 10)
    blocks += b"eue\x8c\x0ddevice_traces]u."
    # One device trace of minimal entries (keys and action by memo).
    entries = bytearray(p4 + b"}(\x8c\x08segments]\x8c\x0ddevice_traces](](}(\x8c\x06action\x94"
                        b"\x8c\x05alloc\x94\x8c\x04size\x94K\x00u")
    entries += b"}(h\x00h\x01h\x02K\x00u" * ((n - len(entries)) // 10)
    entries += b"eeu."
    return {
        "minimal blocks": bytes(blocks),
        "minimal trace entries": bytes(entries),
        "empty lists ]]]]": p4 + b"]" * n + b".",
        "empty dicts }}}}": p4 + b"}" * n + b".",
        "empty tuples ))))": p4 + b")" * n + b".",
        "1-tuples N\\x85": p4 + b"N\x85" * (n // 2) + b".",
        "marks ((((": p4 + b"N" + b"(" * n + b".",
        "DUP N2222": p4 + b"N" + b"2" * n + b".",
        "MEMOIZE N\\x94\\x94": p4 + b"N" + b"\x94" * n + b".",
        "list+memoize ]\\x94": p4 + b"]\x94" * (n // 2) + b".",
        "refs into a list h\\x00": p4 + b"]\x94(" + b"h\x00" * (n // 2) + b"e.",
        "refs as dict items": p4 + b"}\x94(" + b"K\x01h\x00" * (n // 4) + b"u.",
        "distinct strings": bytes(distinct),
        "empty bytes C\\x00": p4 + b"C\x00" * (n // 2) + b".",
        "JSON [[],[],…]": b"[" + b"[]," * (n // 3) + b"[]]",
        "JSON [0,0,…]": b"[" + b"0," * (n // 2) + b"0]",
        "JSON [{},{},…]": b"[" + b"{}," * (n // 3) + b"{}]",
        'JSON ["a","b",…]': b"[" + b'"a",' * (n // 4) + b'"a"]',
    }


def run(binary: str, path: str) -> tuple[int, float, int]:
    start = time.monotonic()
    proc = subprocess.Popen([binary, "inspect", path], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - start, usage.ru_maxrss * 1024


def main() -> None:
    args = sys.argv[1:]
    binary = args.pop(0) if args and not args[0].isdigit() else "target/release/memgate"
    sizes = [int(a) << 20 for a in args] or [8 << 20, 32 << 20]
    with tempfile.TemporaryDirectory() as tmp:
        base_path = os.path.join(tmp, "base.pickle")
        with open(base_path, "wb") as f:
            f.write(b"\x80\x04]\x94.")
        _, _, base = run(binary, base_path)
        print(f"baseline (tiny file): {base / 2**20:.1f} MiB peak RSS")
        print(f"{'shape':28} {'MiB in':>7} {'exit':>4} {'secs':>6} {'MiB peak':>9} {'k':>6}")
        worst = 0.0
        for size in sizes:
            for name, data in shapes(size).items():
                path = os.path.join(tmp, "input")
                with open(path, "wb") as f:
                    f.write(data)
                code, secs, rss = run(binary, path)
                k = (rss - base) / len(data)
                worst = max(worst, k)
                print(f"{name:28} {len(data) / 2**20:7.1f} {code:4} {secs:6.2f} "
                      f"{rss / 2**20:9.1f} {k:6.1f}")
        print(f"worst k = {worst:.1f} bytes of peak RSS per input byte "
              f"(+ {base / 2**20:.1f} MiB baseline)")


if __name__ == "__main__":
    main()
