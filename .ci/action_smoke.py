#!/usr/bin/env python3
"""Run action.yml's step scripts the way a runner would, offline.

    python3 .ci/action_smoke.py MEMGATE_BINARY_DIR

Needs ruamel.yaml (check-jsonschema's YAML library, in .ci/run's venv), and
jq for the comment cases. For each case: the step's `env` (inputs and the
runner / github contexts substituted), fresh GITHUB_OUTPUT, GITHUB_PATH and
GITHUB_STEP_SUMMARY files, `bash -e` like the runner.

* `check`: the exit code and the `verdict` / `exit-code` outputs.
* `download`: against a fake release directory (file:// URLs through the
  step's test-only MEMGATE_TEST_RELEASE_BASE) holding an archive of the given
  binary and SHA256SUMS: installs on a match, refuses a tampered checksum,
  a missing asset or line, and an unsupported platform.
* the comment step: against a fake `gh` that answers the comment listing
  from a JSON file through real jq (the step's own --jq filter) and records
  each call: POST when no marked comment exists, PATCH of the marked one.
* the source build's pinned toolchain is Cargo.toml's rust-version.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
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


def step_env(step, inputs, context):
    """The step's env with `${{ inputs.X }}` and `${{ runner.X }}` /
    `${{ github.X }}` (from context) substituted; literal values kept."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "MEMGATE_"))}
    for k, v in step["env"].items():
        m = re.fullmatch(r"\$\{\{ (inputs|runner|github)\.([a-z_.-]+) \}\}", str(v))
        if m:
            env[k] = inputs[m.group(2)] if m.group(1) == "inputs" else context[m.group(1) + "." + m.group(2)]
        else:
            assert "${{" not in str(v), f"unexpected env value {v!r}"
            env[k] = str(v)
    return env


def run_step(step, env, tmp):
    """Runs the step's script like the runner (bash -e -o pipefail); returns
    the process, its outputs and the lines it added to GITHUB_PATH."""
    assert step["shell"] == "bash"
    for name in ("output", "path", "summary"):
        open(os.path.join(tmp, name), "w").close()
    env = dict(env, GITHUB_OUTPUT=os.path.join(tmp, "output"), GITHUB_PATH=os.path.join(tmp, "path"),
               GITHUB_STEP_SUMMARY=os.path.join(tmp, "summary"))
    p = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]],
                       cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    out = open(env["GITHUB_OUTPUT"]).read()
    outputs = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    return p, outputs, open(env["GITHUB_PATH"]).read().splitlines()


def check_cases(action, defaults, bindir):
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    failures = 0
    for what, inputs, want_code, want_verdict in CASES:
        values = dict(defaults, **inputs)
        with tempfile.TemporaryDirectory() as tmp:
            env = step_env(step, values, {})
            for k in ("junit", "markdown", "json"):
                # reports go to the scratch directory, not the checkout
                key = "MEMGATE_" + k.upper()
                if env[key]:
                    env[key] = os.path.join(tmp, os.path.basename(env[key]))
            env["PATH"] = bindir + os.pathsep + env["PATH"]
            p, outputs, _ = run_step(step, env, tmp)
            ok = p.returncode == want_code and outputs.get("exit-code") == str(want_code)
            if want_verdict is not None:
                ok = ok and outputs.get("verdict") == want_verdict
                ok = ok and os.path.getsize(os.path.join(tmp, "summary")) > 0
            failures += report(ok, f"check: {what}: exit {p.returncode}, outputs {outputs}", p)
    return failures


def report(ok, line, p=None):
    print(f"{'ok  ' if ok else 'FAIL'} {line}")
    if not ok and p is not None:
        print(p.stdout[-2000:], p.stderr[-2000:], sep="\n")
    return 0 if ok else 1


VERSION = "v0.0.0-smoke"
X86_ASSET = f"memgate-{VERSION}-x86_64-unknown-linux-gnu.tar.gz"

DOWNLOAD_CASES = [
    # (what, runner os/arch, SHA256SUMS edit, release-repository input, action path under _actions,
    #  exit code, stderr/stdout must contain)
    ("matching checksum installs", ("Linux", "X64"), None, "", True, 0, "matches SHA256SUMS"),
    ("tampered checksum refused", ("Linux", "X64"), "tamper", "", True, 2, "checksum mismatch"),
    ("SHA256SUMS without the asset's line", ("Linux", "X64"), "drop", "", True, 2, "has no line for"),
    ("asset missing from the release", ("Linux", "ARM64"), None, "", True, 2, "could not download"),
    ("unsupported platform", ("Windows", "X64"), None, "", True, 2, "no prebuilt memgate for Windows/X64"),
    ("local action, no release-repository", ("Linux", "X64"), None, "", False, 2, "set the 'release-repository'"),
    ("local action, release-repository given", ("Linux", "X64"), None, "acme/memgate", False, 0,
     "matches SHA256SUMS"),
]


def fake_release(tmp, binary, sums_edit):
    """A release directory: the x86_64 archive of `binary` and SHA256SUMS."""
    rel = os.path.join(tmp, "releases", VERSION)
    os.makedirs(rel)
    with tarfile.open(os.path.join(rel, X86_ASSET), "w:gz") as tar:
        tar.add(binary, arcname="memgate")
    digest = hashlib.sha256(open(os.path.join(rel, X86_ASSET), "rb").read()).hexdigest()
    if sums_edit == "tamper":
        digest = digest[::-1]
    lines = [f"{'0' * 64}  memgate-{VERSION}-riscv64gc-unknown-linux-gnu.tar.gz"]
    if sums_edit != "drop":
        lines.append(f"{digest}  {X86_ASSET}")
    with open(os.path.join(rel, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "file://" + os.path.join(tmp, "releases")


def download_cases(action, defaults, bindir):
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "download")
    binary = os.path.join(bindir, "memgate")
    failures = 0
    for what, (os_name, arch), sums_edit, repo, under_actions, want_code, want_text in DOWNLOAD_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            action_path = (os.path.join(tmp, "_actions", "acme", "memgate", "v1") if under_actions
                           else os.path.join(tmp, "work", "repo"))
            runner_temp = os.path.join(tmp, "runner-temp")
            os.makedirs(runner_temp)
            context = {"runner.os": os_name, "runner.arch": arch, "runner.temp": runner_temp,
                       "github.action_path": action_path}
            values = dict(defaults, version=VERSION, **{"release-repository": repo})
            env = step_env(step, values, context)
            env["MEMGATE_TEST_RELEASE_BASE"] = fake_release(tmp, binary, sums_edit)
            p, _, path = run_step(step, env, tmp)
            text = p.stdout + p.stderr
            ok = p.returncode == want_code and want_text in text
            if want_code == 0:
                # Installed: on GITHUB_PATH, the very binary that was packed.
                installed = os.path.join(path[0], "memgate") if len(path) == 1 else ""
                ok = ok and os.path.isfile(installed) and open(installed, "rb").read() == open(binary, "rb").read()
            else:
                ok = ok and not path and "::error title=memgate::" in text
            failures += report(ok, f"download: {what}: exit {p.returncode}", p)
    return failures


FAKE_GH = r"""#!/usr/bin/env python3
# A stand-in for gh: `api --paginate URL --jq F` answers from the comments
# JSON through real jq; other `api` calls are recorded (with the body file).
import json, os, subprocess, sys
args = sys.argv[1:]
log = os.environ["FAKE_GH_LOG"]
if "--paginate" in args:
    jq = args[args.index("--jq") + 1]
    comments = open(os.environ["FAKE_GH_COMMENTS"]).read()
    sys.exit(subprocess.run(["jq", "-r", jq], input=comments, text=True).returncode)
if os.environ.get("FAKE_GH_FAIL"):
    sys.exit(1)
body = next(a for a in args if a.startswith("body=@"))[len("body=@"):]
with open(log, "a") as f:
    f.write(json.dumps({"args": args, "body": open(body).read()}) + "\n")
"""

MARKER = "<!-- memgate-sticky-report -->"

COMMENT_CASES = [
    # (what, existing comments, gh fails, the one call expected: (method, URL) or None)
    ("first report is posted", [{"id": 5, "body": "LGTM"}], False, ("POST", "repos/acme/app/issues/7/comments")),
    ("later reports edit the marked comment",
     [{"id": 5, "body": "LGTM"}, {"id": 42, "body": MARKER + "\nold report"},
      {"id": 43, "body": "quoting " + MARKER}], False, ("PATCH", "repos/acme/app/issues/comments/42")),
    ("a refused comment warns, never fails", [], True, None),
]


def comment_cases(action, defaults):
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Comment on the pull request")
    failures = 0
    for what, comments, gh_fails, want_call in COMMENT_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            fakebin = os.path.join(tmp, "bin")
            os.makedirs(fakebin)
            with open(os.path.join(fakebin, "gh"), "w") as f:
                f.write(FAKE_GH)
            os.chmod(os.path.join(fakebin, "gh"), 0o755)
            report_md = os.path.join(tmp, "memgate.md")
            with open(report_md, "w") as f:
                f.write("## memgate: pass\n")
            with open(os.path.join(tmp, "comments.json"), "w") as f:
                json.dump(comments, f)
            context = {"runner.temp": tmp, "github.repository": "acme/app",
                       "github.event.pull_request.number": "7"}
            values = dict(defaults, markdown=report_md, comment="true")
            env = step_env(step, values, context)
            env.update(PATH=fakebin + os.pathsep + os.environ["PATH"], FAKE_GH_LOG=os.path.join(tmp, "calls"),
                       FAKE_GH_COMMENTS=os.path.join(tmp, "comments.json"))
            if gh_fails:
                env["FAKE_GH_FAIL"] = "1"
            p, _, _ = run_step(step, env, tmp)
            calls = ([json.loads(l) for l in open(env["FAKE_GH_LOG"])] if os.path.exists(env["FAKE_GH_LOG"])
                     else [])
            ok = p.returncode == 0
            if want_call is None:
                ok = ok and not calls and "::warning title=memgate::" in p.stdout
            else:
                method, url = want_call
                ok = ok and len(calls) == 1 and calls[0]["args"][:4] == ["api", "--silent", "-X", method]
                ok = ok and calls[0]["args"][4] == url
                ok = ok and calls[0]["body"] == MARKER + "\n## memgate: pass\n"
            failures += report(ok, f"comment: {what}: exit {p.returncode}, calls {[c['args'][3:5] for c in calls]}", p)
    return failures


def toolchain_pin(action):
    """The source build's toolchain and cache key name Cargo.toml's rust-version."""
    msrv = re.search(r'^rust-version = "([0-9.]+)"', open(os.path.join(ROOT, "Cargo.toml")).read(), re.M).group(1)
    text = open(os.path.join(ROOT, "action.yml")).read()
    pins = set(re.findall(r'MEMGATE_RUST_TOOLCHAIN: "([0-9.]+)"', text)) | set(re.findall(r"-rust([0-9.]+)-", text))
    ok = len(pins) == 1 and (pins == {msrv} or pins == {msrv + ".0"})
    return report(ok, f"source build toolchain {sorted(pins)} is Cargo.toml's rust-version {msrv}")


def main():
    bindir = os.path.abspath(sys.argv[1])
    action = YAML(typ="safe").load(open(os.path.join(ROOT, "action.yml")))
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    failures = check_cases(action, defaults, bindir)
    failures += download_cases(action, defaults, bindir)
    failures += comment_cases(action, defaults)
    failures += toolchain_pin(action)
    print(f"action smoke: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
