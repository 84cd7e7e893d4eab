#!/usr/bin/env python3
"""Fail unless a wheel carries THIRD-PARTY-NOTICES.md equal to the
repository's (the licences of the crates compiled into its extension).

    python3 .ci/wheel_has_notices.py WHEEL
"""
import sys
import zipfile
from pathlib import Path

want = (Path(__file__).resolve().parent.parent / "THIRD-PARTY-NOTICES.md").read_bytes()
with zipfile.ZipFile(sys.argv[1]) as z:
    found = [n for n in z.namelist() if n.endswith("/THIRD-PARTY-NOTICES.md")]
    if not found:
        sys.exit(f"error: {sys.argv[1]} has no THIRD-PARTY-NOTICES.md")
    if z.read(found[0]).replace(b"\r\n", b"\n") != want.replace(b"\r\n", b"\n"):
        sys.exit(f"error: {found[0]} in {sys.argv[1]} differs from THIRD-PARTY-NOTICES.md")
print(f"ok: {sys.argv[1]} carries {found[0]}")
