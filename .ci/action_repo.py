#!/usr/bin/env python3
"""Assemble the action-only repository: what GitHub Marketplace can list.

    python3 .ci/action_repo.py OUT_DIR SOURCE_REPOSITORY

The Marketplace lists an action only from a repository with one action
metadata file at its root and no workflow files; this repository holds
workflows, a crate and a Python package besides `action.yml`. So each release
publishes a copy of the Action to a small repository of its own (the release
workflow's `action-repository` job pushes OUT_DIR there, tagged like the
release): `action.yml`, whose `release-repository` defaults to
SOURCE_REPOSITORY (the releases stay here), `checksums/` (the committed
release checksums the Action prefers), `LICENSE`, the README from
docs/action-repository-readme.md, and `.memgate-action-only`, which makes
the Action refuse a source build (there is no source there) with one clear
error.

Checks what it wrote: the files above and nothing else, no `.github/`, the
`release-repository` default replaced exactly once.
"""
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = re.compile(r'(\n  release-repository:\n(?:    .*\n)+?    default: )""\n')


def action_yml(source_repo):
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", source_repo):
        raise SystemExit(f"error: {source_repo!r} is not OWNER/NAME")
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    out, n = DEFAULT.subn(lambda m: f'{m.group(1)}"{source_repo}"\n', text)
    if n != 1:
        raise SystemExit("error: action.yml's release-repository input has no empty default to set")
    return out


def assemble(out, source_repo):
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"error: {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    (out / "action.yml").write_text(action_yml(source_repo), encoding="utf-8")
    shutil.copy(ROOT / "LICENSE", out / "LICENSE")
    readme = (ROOT / "docs" / "action-repository-readme.md").read_text(encoding="utf-8")
    (out / "README.md").write_text(readme.replace("OWNER/memgate", source_repo), encoding="utf-8")
    shutil.copytree(ROOT / "checksums", out / "checksums")
    (out / ".memgate-action-only").write_text(
        f"The action-only copy of {source_repo}'s action.yml: release binaries only.\n")
    return out


def verify(out):
    names = sorted(str(p.relative_to(out)) for p in Path(out).rglob("*") if p.is_file())
    top = {n.split("/")[0] for n in names}
    want = {"action.yml", "LICENSE", "README.md", "checksums", ".memgate-action-only"}
    if top != want:
        raise SystemExit(f"error: the action repository holds {sorted(top)}, not {sorted(want)}")
    return names


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[2].strip())
    out = assemble(argv[0], argv[1])
    names = verify(out)
    print(f"ok: action repository for {argv[1]} in {out}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
