#!/usr/bin/env python3
"""Run action.yml's `memgate check` step script the way a runner would.

    python3 .ci/action_smoke.py MEMGATE_BINARY_DIR

Needs ruamel.yaml (check-jsonschema's YAML library, in .ci/run's venv).
For each case: the step's `env` (inputs substituted), fresh GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files, `bash -e` like the runner; checks the exit code
and the `verdict` / `exit-code` outputs.
"""
import os
import re
import subprocess
import sys
import tempfile

from ruamel.yaml import YAML

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    # (what, inputs, exit code, verdict)
    ("bundled example", {"config": "examples/memgate.toml"}, 0, "pass"),
    ("regressed example", {"config": "examples/memgate-regressed.toml"}, 1, "fail"),
    ("regressed, warn-only", {"config": "examples/memgate-regressed.toml", "warn-only": "true"}, 0, "fail"),
    ("snapshots input (lines) replaces the config's",
     {"config": "examples/memgate-regressed.toml",
      "snapshots": "examples/snapshots/rank0.pickle\n  examples/snapshots/rank1.pickle\n"}, 0, "pass"),
    ("snapshots input (a glob, expanded by memgate)",
     {"config": "examples/memgate.toml", "snapshots": "examples/snapshots-regressed/rank*.pickle"}, 1, "fail"),
    ("baseline input, no reports", {"config": "examples/memgate.toml", "baseline": "examples/snapshots-regressed",
                                     "junit": "", "markdown": "", "json": ""}, 0, "pass"),
    ("missing config", {"config": "examples/nope.toml"}, 2, None),
]


def main():
    bindir = os.path.abspath(sys.argv[1])
    action = YAML(typ="safe").load(open(os.path.join(ROOT, "action.yml")))
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    assert step["shell"] == "bash"
    failures = 0
    for what, inputs, want_code, want_verdict in CASES:
        values = dict(defaults, **inputs)
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
            for k, v in step["env"].items():
                m = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", v)
                assert m, f"unexpected env value {v!r}"
                env[k] = values[m.group(1)]
            for k in ("junit", "markdown", "json"):
                # reports go to the scratch directory, not the checkout
                key = "MEMGATE_" + k.upper()
                if env[key]:
                    env[key] = os.path.join(tmp, os.path.basename(env[key]))
            env["GITHUB_OUTPUT"] = os.path.join(tmp, "output")
            env["GITHUB_STEP_SUMMARY"] = os.path.join(tmp, "summary")
            env["PATH"] = bindir + os.pathsep + env["PATH"]
            p = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]],
                               cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            out = open(env["GITHUB_OUTPUT"]).read() if os.path.exists(env["GITHUB_OUTPUT"]) else ""
            outputs = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
            ok = p.returncode == want_code and outputs.get("exit-code") == str(want_code)
            if want_verdict is not None:
                ok = ok and outputs.get("verdict") == want_verdict
                ok = ok and os.path.getsize(env["GITHUB_STEP_SUMMARY"]) > 0
            print(f"{'ok  ' if ok else 'FAIL'} {what}: exit {p.returncode}, outputs {outputs}")
            if not ok:
                failures += 1
                print(p.stdout[-2000:], p.stderr[-2000:], sep="\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
