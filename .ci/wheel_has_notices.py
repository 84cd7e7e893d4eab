#!/usr/bin/env python3
"""Fail unless a wheel carries THIRD-PARTY-NOTICES.md equal to the
repository's (the licences of the crates compiled into its extension), and
its metadata declares the licence by SPDX expression with the licence file
(PEP 639), typed and with the Python versions it supports.

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
    meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
    text = z.read(meta[0]).decode() if meta else ""
    lines = set(text.split("\n\n")[0].splitlines())
    want_lines = {
        "License-Expression: Apache-2.0",
        "Classifier: Typing :: Typed",
        "Requires-Python: >=3.9",
    }
    missing = sorted(want_lines - lines)
    if missing or "License-File: LICENSE.txt" not in lines:
        sys.exit(f"error: {sys.argv[1]}'s METADATA lacks {missing or ['License-File: LICENSE.txt']}")
    licence = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE.txt")]
    root = (Path(__file__).resolve().parent.parent / "LICENSE").read_bytes()
    if not licence or z.read(licence[0]).replace(b"\r\n", b"\n") != root.replace(b"\r\n", b"\n"):
        sys.exit(f"error: {sys.argv[1]} has no .dist-info/licenses/LICENSE.txt equal to LICENSE")
print(f"ok: {sys.argv[1]} carries {found[0]}; METADATA: License-Expression Apache-2.0, LICENSE.txt, Typing :: Typed")
