"""What `cargo package` would publish holds what the crate needs to build.

    cargo package --list --allow-dirty --locked | python3 .ci/package_list.py

Instead of a publish dry run (a cold debug build of the packaged copy, about
a tenth of CI's CPU): every Rust file under src/, every file the sources
include (`include_str!`, `include_bytes!`), the README and LICENSE are in
the list, and the test fixtures, fuzz/, python/ and CI files are not.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'include_(?:str|bytes)!\(\s*"([^"]+)"\s*\)')
KEPT_OUT = ("tests/", "fuzz/", "python/", "examples/", ".ci/", ".github/", "bench/", "target/")


def main():
    listed = {line.strip() for line in sys.stdin if line.strip()}
    if not listed:
        sys.exit("error: cargo package --list printed nothing")
    needed = {"Cargo.toml", "Cargo.lock", "README.md", "LICENSE"}
    for rs in ROOT.glob("src/**/*.rs"):
        rel = rs.relative_to(ROOT).as_posix()
        needed.add(rel)
        for name in INCLUDE.findall(rs.read_text()):
            target = (rs.parent / name).resolve()
            needed.add(target.relative_to(ROOT).as_posix())
    missing = sorted(needed - listed)
    if missing:
        sys.exit(f"error: the package lacks {missing} (Cargo.toml's include list)")
    stray = sorted(f for f in listed if f.startswith(KEPT_OUT))
    if stray:
        sys.exit(f"error: the package carries {stray[:5]} (kept out on purpose)")
    print(f"ok: the package lists {len(listed)} files, every source and included file among them")


if __name__ == "__main__":
    main()
