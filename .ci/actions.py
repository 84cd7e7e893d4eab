#!/usr/bin/env python3
"""Static check of every workflow, action and CI template memgate ships.

Fails on a GitHub-hosted runner label GitHub has retired (jobs on it queue
until they time out) and on an action whose pinned major runs on Node 20
(runners print a deprecation warning naming it, then stop running it).
Each `uses:` must name a commit (40 hex digits) followed by `# vX.Y.Z`, so
the major read from the comment is the one the commit is; a tag is allowed
only where `TAG_ALLOWED` says so (the user's own placeholder in examples).

The knowledge is committed below, with no network: `NODE` lists, for each
action memgate uses, the majors whose action.yml says `using: node24` (or a
composite or Docker action), read from the actions' repositories at their
tags. An action not in the table fails until someone reads its action.yml
and adds it. `RETIRED` are the labels GitHub has removed from its hosted
runners (its runner-images announcements).

Usage: actions.py [--self-test] [FILE ...]; without files, the default set.
"""

import re
import sys
from pathlib import Path

RETIRED = {
    "ubuntu-16.04", "ubuntu-18.04", "ubuntu-20.04",
    "macos-10.15", "macos-11", "macos-12", "macos-12-large", "macos-13",
    "macos-13-large", "macos-13-xlarge",
    "windows-2016", "windows-2019",
}

# action -> set of majors that do not run on Node 20 (node24, composite or
# docker); any other major of a listed action is a Node 20 (or older) one.
NODE = {
    "actions/checkout": {5, 6, 7},
    "actions/cache": {5},
    "actions/setup-python": {6, 7},
    "actions/upload-artifact": {6, 7},
    "actions/download-artifact": {7, 8},
    "actions/attest-build-provenance": {3, 4},  # composite over actions/attest
    "mikepenz/action-junit-report": {6},
    "pypa/gh-action-pypi-publish": {1},  # a Docker action
}

# Refs that may stay tags: the placeholder for memgate's own Action in the
# examples (the user pins their copy at a release).
TAG_ALLOWED = {"your-org/memgate"}

DEFAULT = [".github", "action.yml", "examples", "templates"]

USES = re.compile(r"^\s*(?:-\s*)?uses:\s*([^\s#]+)\s*(?:#\s*(\S+))?")
RUNNER = re.compile(r"^\s*(?:-\s*)?(?:runs-on|runner):\s*(.+?)\s*$")
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def yaml_files(paths):
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*") if q.suffix in (".yml", ".yaml"))
        elif p.exists():
            yield p


def check_uses(ref, comment):
    if ref.startswith(("./", "docker://")):
        return None
    action, _, version = ref.partition("@")
    action = "/".join(action.split("/")[:2])
    if action in TAG_ALLOWED:
        return None
    if not re.fullmatch(r"[0-9a-f]{40}", version):
        return f"{ref}: pin the action by commit, with its tag as a comment"
    if not comment or not re.fullmatch(r"v\d+(\.\d+)*", comment):
        return f"{ref}: the commit needs its tag as a comment (# vX.Y.Z)"
    if action not in NODE:
        return f"{action}: not in .ci/actions.py's table; read its action.yml and add it"
    major = int(comment[1:].split(".")[0])
    if major not in NODE[action]:
        return f"{action} {comment} runs on Node 20: use a Node 24 major ({sorted(NODE[action])})"
    return None


def check_runner(value):
    problems = []
    for label in LABEL.findall(value.split("#")[0]):
        if label in RETIRED:
            problems.append(f"runner {label} is retired by GitHub")
    return problems


def check_file(path):
    problems = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        m = USES.match(line)
        if m:
            p = check_uses(m.group(1), m.group(2))
            if p:
                problems.append(f"{path}:{n}: {p}")
        m = RUNNER.match(line)
        if m:
            problems += [f"{path}:{n}: {p}" for p in check_runner(m.group(1))]
    return problems


def self_test():
    """The check must catch what it exists for (and pass what is fine)."""
    import tempfile

    bad = (
        "jobs:\n  a:\n    runs-on: macos-13\n    steps:\n"
        "      - uses: actions/cache@5a3ec84eff668545956fd18022155c47e93e2684 # v4.2.3\n"
        "      - uses: actions/checkout@v5\n"
        "  b:\n    runs-on: [self-hosted, windows-2019]\n"
    )
    good = (
        "jobs:\n  a:\n    runs-on: macos-15-intel\n    steps:\n"
        "      - uses: actions/cache@27d5ce7f107fe9357f9df03efb73ab90386fccae # v5.0.5\n"
    )
    with tempfile.TemporaryDirectory() as d:
        b, g = Path(d, "bad.yml"), Path(d, "good.yml")
        b.write_text(bad)
        g.write_text(good)
        found = check_file(b)
        assert len(found) == 4, found
        assert check_file(g) == [], check_file(g)
    print("ok: .ci/actions.py catches a retired runner, a Node 20 major and a tag pin")


def main(argv):
    if argv[:1] == ["--self-test"]:
        self_test()
        argv = argv[1:]
    files = list(yaml_files(argv or DEFAULT))
    problems = [p for f in files for p in check_file(f)]
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"ok: {len(files)} workflow/action/template files: no retired runner, no Node 20 action")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
