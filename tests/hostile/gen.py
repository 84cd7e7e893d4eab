#!/usr/bin/env python3
"""Write memgate's hostile and broken inputs (stdlib only, deterministic).

    python3 tests/hostile/gen.py            # rewrite tests/fixtures/hostile/ + fuzz/seeds/
    python3 tests/hostile/gen.py --verify   # also prove the exploits are live

Every file is small. The inputs that only make sense large (nesting millions
deep, quadratic-work bombs) are built by tests/integration/hostile.rs at test time.

``manifest.json`` says, per file, what memgate must answer: for code-running
opcodes the opcode name and byte offset (found by ``pickletools.genops``,
not by memgate), otherwise words the one-line error must contain.

``--verify`` loads each ``live`` exploit with CPython's own ``pickle.loads``
in a scratch directory and checks that it really runs ``touch
memgate-pwned`` there: the fixtures are real attacks, not look-alikes.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import pickletools
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "hostile")
SEEDS = os.path.join(ROOT, "fuzz", "seeds")

MARKER = "memgate-pwned"
CMD = "touch " + MARKER
SENTINEL = "__PAYLOAD__"

CODE_OPS = {
    "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ",
    "NEWOBJ_EX", "PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4",
}

manifest: dict[str, dict] = {}


def write(name: str, data: bytes, **expect) -> None:
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    manifest[name] = expect


# --------------------------------------------------------------------------
# A tiny, valid, torch-2.2-shaped snapshot (shared frames, like torch writes)
# --------------------------------------------------------------------------

def tiny(frame_name: str = "forward", **override):
    f0 = {"filename": "/workspace/model.py", "line": 41, "name": frame_name}
    f1 = {"filename": "/workspace/train.py", "line": 7, "name": "<module>"}
    stack = [f0, f1]
    empty: list = []
    base = 0x7F00_0000_0000
    blk = {"address": base, "size": 1 << 20, "requested_size": 1000000,
           "state": "active_allocated", "frames": stack}
    blk2 = {"address": base + (1 << 20), "size": 1 << 20, "requested_size": 0,
            "state": "inactive", "frames": empty}
    seg = {"device": 0, "address": base, "total_size": 2 << 20,
           "allocated_size": 1 << 20, "active_size": 1 << 20,
           "requested_size": 1000000, "stream": 0, "segment_type": "large",
           "segment_pool_id": (0, 0), "is_expandable": False,
           "frames": stack, "blocks": [blk, blk2]}
    t = 1_738_780_408_787_504
    trace = [
        {"action": "segment_alloc", "addr": base, "size": 2 << 20, "stream": 0,
         "time_us": t, "frames": stack},
        {"action": "alloc", "addr": base, "size": 1000000, "stream": 0,
         "time_us": t + 1, "frames": stack},
    ]
    snap = {"segments": [seg], "device_traces": [trace, []]}
    for path, value in override.items():
        set_path(snap, path, value)
    return snap


def set_path(obj, path: str, value) -> None:
    """``a.0.b`` style assignment; the value ``DELETE`` removes the key."""
    *parents, last = path.split(".")
    for p in parents:
        obj = obj[int(p)] if isinstance(obj, list) else obj[p]
    if isinstance(obj, list):
        obj[int(last)] = value
    elif value is DELETE:
        del obj[last]
    else:
        obj[last] = value


DELETE = object()


def unframe(data: bytes) -> bytes:
    """Drop protocol 4 FRAME opcodes so bytes can be spliced in freely."""
    ops = list(pickletools.genops(data))
    out = bytearray()
    for i, (op, _arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        if op.name != "FRAME":
            out += data[pos:end]
    return bytes(out)


def first_code_op(data: bytes):
    for op, _arg, pos in pickletools.genops(data):
        if op.name in CODE_OPS:
            return op.name, pos
    raise AssertionError("no code-running opcode")


# --------------------------------------------------------------------------
# Code-running opcodes
# --------------------------------------------------------------------------

def sbu(s: str) -> bytes:  # SHORT_BINUNICODE
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


# Each payload leaves exactly one value on the stack, so it can stand in for
# a string inside a valid pickle. The first code-running opcode is the named
# one; ``live`` payloads really call os.system under CPython's pickle.loads.
PAYLOADS = {
    "global_reduce": (b"cos\nsystem\n" + sbu(CMD) + b"\x85R", True),
    "stack_global": (sbu("os") + sbu("system") + b"\x93" + sbu(CMD) + b"\x85R", True),
    "inst": (b"(" + sbu(CMD) + b"ios\nsystem\n", True),
    "reduce": (b"N)R", False),
    "build": (b"}}b", False),
    "obj": (b"(N" + sbu(CMD) + b"o", False),
    "newobj": (b"N)\x81", False),
    "newobj_ex": (b"N)}\x92", False),
    "persid": (b"P" + CMD.encode() + b"\n", False),
    "binpersid": (sbu(CMD) + b"Q", False),
    "ext1": (b"\x82\x01", False),
    "ext2": (b"\x83\x01\x00", False),
    "ext4": (b"\x84\x01\x00\x00\x00", False),
}


class Pwn:
    """What an attacker pickles: loading it runs a shell command."""

    def __reduce__(self):
        return (os.system, (CMD,))


def refused(name: str, data: bytes, live: bool) -> None:
    op, pos = first_code_op(data)
    write(name, data, kind="refused", opcode=op, offset=pos, live=live)


def code_running() -> None:
    # What pickle itself writes for an os.system payload, per protocol.
    for proto in (0, 2, 4):
        refused(f"code_pwn_proto{proto}.pickle", pickle.dumps(Pwn(), protocol=proto), True)
    # The textbook protocol 0 exploit, typed by hand.
    refused("code_global_reduce_proto0_classic.pickle",
            b"cos\nsystem\n(S'" + CMD.encode() + b"'\ntR.", True)
    # Every code-running opcode alone at the top…
    for key, (payload, live) in PAYLOADS.items():
        refused(f"code_{key}_top.pickle", b"\x80\x04" + payload + b".", live)
    # …and deep inside an otherwise valid snapshot, as a frame's name.
    snap = unframe(pickle.dumps(tiny(SENTINEL), protocol=4))
    needle = sbu(SENTINEL)
    assert snap.count(needle) == 1
    for key, (payload, live) in PAYLOADS.items():
        refused(f"code_{key}_in_frame.pickle", snap.replace(needle, payload), live)
    # The same in the C++ path's protocol 2 (BINUNICODE, BINPUT) and protocol 0.
    p2 = pickle.dumps(tiny(SENTINEL), protocol=2)
    n2 = b"X" + struct.pack("<I", len(SENTINEL)) + SENTINEL.encode()
    assert p2.count(n2) == 1
    refused("code_global_reduce_in_frame_proto2.pickle",
            p2.replace(n2, PAYLOADS["global_reduce"][0]), True)
    p0 = pickle.dumps(tiny(SENTINEL), protocol=0)
    n0 = b"V" + SENTINEL.encode() + b"\n"
    assert p0.count(n0) == 1
    text_payload = b"cos\nsystem\n(V" + CMD.encode() + b"\ntR"
    refused("code_global_reduce_in_frame_proto0.pickle", p0.replace(n0, text_payload), True)


# --------------------------------------------------------------------------
# Memo bombs: each level a list holding the previous level twice
# --------------------------------------------------------------------------

def bomb(levels: int = 64, kind=list):
    x = kind()
    for _ in range(levels):
        x = [x, x] if kind is list else {"a": x, "b": x}
    return x


def memo_bombs() -> None:
    write("bomb_top.pickle", pickle.dumps(bomb(), protocol=4),
          kind="error", contains=["segments[0]"])
    write("bomb_in_frames.pickle",
          pickle.dumps(tiny(**{"segments.0.blocks.0.frames": bomb()}), protocol=4),
          kind="error", contains=["frame"])
    write("bomb_in_trace_frames.pickle",
          pickle.dumps(tiny(**{"device_traces.0.1.frames": bomb()}), protocol=4),
          kind="error", contains=["frame"])
    write("bomb_as_segments.pickle",
          pickle.dumps(tiny(**{"segments": bomb()}), protocol=4),
          kind="error", contains=["segments[0]"])
    write("bomb_as_device_traces.pickle",
          pickle.dumps(tiny(**{"device_traces": bomb()}), protocol=4),
          kind="error", contains=["device_traces[0]"])
    # A dict bomb where arbitrary JSON is kept (allocator_settings): bounded.
    write("bomb_in_settings.pickle",
          pickle.dumps(tiny(allocator_settings=bomb(kind=dict)), protocol=4),
          kind="ok")
    write("bomb_in_annotations.pickle",
          pickle.dumps(tiny(external_annotations=bomb()), protocol=4),
          kind="ok")
    # Sharing that multiplies: 300 segments that are one dict whose 300
    # blocks are one dict: 90,000 blocks from 2 KB if expanded. torch never
    # shares segments, blocks, history entries or trace lists.
    s = tiny()
    seg = s["segments"][0]
    seg["blocks"] = [seg["blocks"][0]] * 300
    s["segments"] = [seg] * 300
    write("shared_blocks.pickle", pickle.dumps(s, protocol=4),
          kind="error", contains=["segments[0].blocks[1]", "same object as segments[0].blocks[0]"])
    s = tiny()
    s["segments"] = s["segments"] * 300
    write("shared_segments.pickle", pickle.dumps(s, protocol=4),
          kind="error", contains=["segments[1]", "same object as segments[0]"])
    s = tiny()
    blk = s["segments"][0]["blocks"][0]
    blk["history"] = [{"addr": 1, "real_size": 1, "frames": blk.pop("frames")}] * 2
    s["segments"][0]["blocks"][1]["history"] = blk["history"]
    del s["segments"][0]["blocks"][1]["frames"]
    write("shared_history.pickle", pickle.dumps(s, protocol=4),
          kind="error", contains=["history[0]", "same object"])
    s = tiny()
    trace = s["device_traces"][0]
    s["device_traces"] = [trace * 150] * 300
    write("shared_trace_lists.pickle", pickle.dumps(s, protocol=4),
          kind="error", contains=["device_traces[1]", "same"])


# --------------------------------------------------------------------------
# Lengths far past the end of the file
# --------------------------------------------------------------------------

def lengths() -> None:
    huge8 = struct.pack("<Q", 1 << 60)
    cases = {
        "BINUNICODE8": b"\x8d" + huge8,
        "BINBYTES8": b"\x8e" + huge8,
        "BYTEARRAY8": b"\x96" + huge8,
        "BINUNICODE": b"X" + struct.pack("<I", 0xFFFF_FFFF),
        "BINBYTES": b"B" + struct.pack("<I", 0xFFFF_FFFF),
        "BINSTRING": b"T" + struct.pack("<i", 0x7FFF_FFFF),
        "LONG4": b"\x8b" + struct.pack("<i", 0x7FFF_FFFF),
        "SHORT_BINUNICODE": b"\x8c\xff",
        "SHORT_BINBYTES": b"C\xff",
        "SHORT_BINSTRING": b"U\xff",
        "LONG1": b"\x8a\xff",
    }
    for op, body in cases.items():
        data = b"\x80\x04" + body + b"abc."
        write(f"length_{op.lower()}.pickle", data, kind="error",
              contains=[op, "byte offset 2", "bytes but only"])
    # Negative lengths where the field is signed.
    write("length_long4_negative.pickle",
          b"\x80\x04\x8b" + struct.pack("<i", -1) + b".",
          kind="error", contains=["LONG4", "byte offset 2", "negative"])
    write("length_binstring_negative.pickle",
          b"\x80\x02T" + struct.pack("<i", -(1 << 31)) + b".",
          kind="error", contains=["BINSTRING", "byte offset 2", "negative"])
    # A FRAME claiming 2^60 bytes is only a buffering hint: still truncated.
    write("length_frame.pickle", b"\x80\x04\x95" + huge8 + b"K\x01",
          kind="error", contains=["truncated", "STOP"])
    # The same huge string inside an otherwise valid snapshot.
    snap = unframe(pickle.dumps(tiny(SENTINEL), protocol=4))
    write("length_binunicode8_in_frame.pickle",
          snap.replace(sbu(SENTINEL), b"\x8d" + huge8), kind="error",
          contains=["BINUNICODE8", "bytes but only"])


# --------------------------------------------------------------------------
# Wrong types and missing keys
# --------------------------------------------------------------------------

def wrong_types() -> None:
    cases = {
        "type_size_str": ({"device_traces.0.1.size": "1000000"}, ["size", "str"]),
        "type_size_float": ({"device_traces.0.1.size": 1e6}, ["size", "float"]),
        "type_size_negative": ({"device_traces.0.1.size": -5}, ["size", "negative"]),
        "type_size_2_64": ({"device_traces.0.1.size": 1 << 64}, ["size", "2^64"]),
        "type_size_huge": ({"device_traces.0.1.size": 1 << 200}, ["size", "2^64"]),
        "type_block_size_str": ({"segments.0.blocks.0.size": "1 MiB"}, ["size", "str"]),
        "type_segment_address_negative": ({"segments.0.address": -1}, ["address", "negative"]),
        "type_action_int": ({"device_traces.0.1.action": 1}, ["action", "int"]),
        "type_device_traces_dict": ({"device_traces": {"0": []}}, ["device_traces", "dict"]),
        "type_segments_str": ({"segments": "none"}, ["segments", "str"]),
        "type_block_state_int": ({"segments.0.blocks.0.state": 1}, ["state", "int"]),
        "type_frames_int": ({"segments.0.blocks.0.frames": 7}, ["frames", "int"]),
        "type_time_us_str": ({"device_traces.0.1.time_us": "now"}, ["time_us"]),
        "type_device_huge": ({"segments.0.device": 1 << 40}, ["device"]),
        "missing_segments": ({"segments": DELETE}, ["segments"]),
        "missing_device_traces": ({"device_traces": DELETE}, ["device_traces"]),
        "missing_block_size": ({"segments.0.blocks.0.size": DELETE}, ["size"]),
        "missing_block_state": ({"segments.0.blocks.0.state": DELETE}, ["state"]),
        "missing_segment_blocks": ({"segments.0.blocks": DELETE}, ["blocks"]),
        "missing_segment_address": ({"segments.0.address": DELETE}, ["address"]),
        "missing_action": ({"device_traces.0.1.action": DELETE}, ["action"]),
        "missing_trace_size": ({"device_traces.0.1.size": DELETE}, ["size"]),
    }
    for name, (override, words) in cases.items():
        write(f"{name}.pickle", pickle.dumps(tiny(**override), protocol=4),
              kind="error", contains=words)
    for name, value, words in [
        ("top_int", 7, ["top-level", "int"]),
        ("top_str", "segments", ["top-level", "str"]),
        ("top_none", None, ["top-level", "None"]),
        ("top_float", 1.5, ["top-level", "float"]),
        ("top_tuple", (1, 2), ["top-level", "tuple"]),
        ("top_bytes", b"\x80\x04", ["top-level", "bytes"]),
        ("top_empty_dict", {}, ["segments"]),
    ]:
        write(f"{name}.pickle", pickle.dumps(value, protocol=4), kind="error", contains=words)


# --------------------------------------------------------------------------
# Not a snapshot at all, and broken pickles
# --------------------------------------------------------------------------

def png() -> bytes:
    def chunk(tag: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + tag + body
                + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b""))


def torch_save_zip() -> bytes:
    """The layout of a torch.save() file: a zip with data.pkl inside."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, body in [("archive/data.pkl", pickle.dumps({"w": 1}, protocol=2)),
                           ("archive/byteorder", b"little"),
                           ("archive/version", b"3\n")]:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            z.writestr(info, body)
    return buf.getvalue()


def not_snapshots() -> None:
    write("png.pickle", png(), kind="error", contains=["PNG"])
    write("text.txt", b"hello, this is a build log and not a snapshot\n",
          kind="error", contains=["not a memory snapshot"])
    write("text_looks_like_opcodes.txt", b"Loss went up by 3%\n",
          kind="error", contains=["byte offset"])
    write("broken.json", b'{"segments": [{"device": 0, "address": ',
          kind="error", contains=["JSON"])
    write("numbers.json", b"[1, 2, 3]\n", kind="error", contains=["segments[0]"])
    write("torch_save.pt", torch_save_zip(), kind="error", contains=["zip"])
    write("empty.pickle", b"", kind="error", contains=["empty"])
    write("gzip.pickle.gz", gzip.compress(pickle.dumps(tiny(), protocol=4), mtime=0),
          kind="error", contains=["gzip"])
    write("proto_future.pickle", b"\x80\x06N.", kind="error",
          contains=["protocol 6", "byte offset 0", "PROTO"])
    write("proto_255.pickle", b"\x80\xff", kind="error", contains=["protocol 255", "PROTO"])
    write("unknown_opcode.pickle", b"\x80\x04K\x01\xff.", kind="error",
          contains=["0xff", "byte offset 4"])
    full = pickle.dumps(tiny(), protocol=4)
    write("no_stop.pickle", full[:-1], kind="error",
          contains=["truncated", "STOP", f"byte offset {len(full) - 1}"])
    write("truncated_half.pickle", full[: len(full) // 2], kind="error",
          contains=["truncated", "byte offset"])
    write("stop_empty_stack.pickle", b"\x80\x04.", kind="error",
          contains=["STOP", "byte offset 2"])
    write("pop_underflow.pickle", b"\x80\x040.", kind="error",
          contains=["POP", "byte offset 2"])
    write("appends_without_mark.pickle", b"\x80\x04]e.", kind="error",
          contains=["APPENDS", "MARK"])
    write("get_unknown_memo.pickle", b"\x80\x04h\x07.", kind="error",
          contains=["BINGET", "memo"])
    write("setitems_odd.pickle", b"\x80\x04}(K\x01u.", kind="error",
          contains=["SETITEMS", "odd"])
    write("next_buffer.pickle", b"\x80\x05\x97.", kind="error",
          contains=["NEXT_BUFFER", "byte offset 2"])
    write("int_not_a_number.pickle", b"I12x\n.", kind="error",
          contains=["INT", "byte offset 0"])
    # Valid, but an action name that would forge a CI log line if printed raw.
    write("valid_control_chars_in_action.pickle", pickle.dumps(tiny(**{
        "device_traces.0.1.action": "evil\n::error::forged by a snapshot\x1b[2J"}), protocol=4),
        kind="ok")
    # Valid, for the every-offset truncation test.
    write("valid_tiny_proto4.pickle", full, kind="ok")
    write("valid_tiny_proto2.pickle", pickle.dumps(tiny(), protocol=2), kind="ok")
    # Legal: trailing bytes after STOP are ignored (old torch_npu, HTML padding).
    write("trailing_garbage.pickle", full + b"\x00\x00garbage", kind="ok")


# --------------------------------------------------------------------------
# Fuzz seeds: a few small valid pickles of each protocol and a JSON one
# --------------------------------------------------------------------------

def seeds() -> None:
    os.makedirs(SEEDS, exist_ok=True)
    s = tiny()
    for proto in (0, 2, 4, 5):
        with open(os.path.join(SEEDS, f"tiny_proto{proto}.pickle"), "wb") as f:
            f.write(pickle.dumps(s, protocol=proto))
    legacy = tiny()["segments"]
    with open(os.path.join(SEEDS, "tiny_list.pickle"), "wb") as f:
        f.write(pickle.dumps(legacy, protocol=4))
    j = tiny()
    j["segments"][0]["segment_pool_id"] = [0, 0]
    with open(os.path.join(SEEDS, "tiny.json"), "wb") as f:
        f.write(json.dumps(j).encode())
    with open(os.path.join(SEEDS, "settings_bigints.pickle"), "wb") as f:
        f.write(pickle.dumps(tiny(allocator_settings={
            "max_split_size": -1, "garbage_collection_threshold": 0.8,
            "roundup_power2_divisions": {"1": 4}}, **{
            "device_traces.0.0.stream": 1 << 63}), protocol=4))


# --------------------------------------------------------------------------

def verify() -> None:
    """Prove each ``live`` exploit runs under CPython's pickle.loads."""
    for name, expect in sorted(manifest.items()):
        if not expect.get("live"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [sys.executable, "-c",
                 "import pickle, sys\n"
                 "try:\n    pickle.loads(open(sys.argv[1], 'rb').read())\n"
                 "except Exception:\n    pass\n",
                 os.path.join(OUT, name)],
                cwd=tmp, check=True)
            ran = os.path.exists(os.path.join(tmp, MARKER))
        print(f"{'live' if ran else 'DEAD'}  {name}")
        if not ran:
            raise SystemExit(f"{name}: pickle.loads did not run the payload")


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f != "README.md":
            os.remove(os.path.join(OUT, f))
    code_running()
    memo_bombs()
    lengths()
    wrong_types()
    not_snapshots()
    seeds()
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(manifest)} files in {os.path.relpath(OUT, ROOT)}")
    if "--verify" in sys.argv[1:]:
        verify()


if __name__ == "__main__":
    main()
