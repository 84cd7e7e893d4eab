#!/usr/bin/env python3
"""Run action.yml's step scripts the way a runner would, offline.

    python3 .ci/action_smoke.py MEMGATE_BINARY_DIR

Needs ruamel.yaml (check-jsonschema's YAML library, in .ci/run's venv), and
jq for the comment cases. For each case: the step's `env` (inputs and the
runner / github contexts substituted), fresh GITHUB_OUTPUT, GITHUB_PATH and
GITHUB_STEP_SUMMARY files, `bash -e` like the runner.

* `check`: the exit code and the `verdict` / `exit-code` outputs; the
  reports in a fresh directory of the step's own under RUNNER_TEMP (the
  `junit` / `markdown` / `json` / `report` outputs name it), copied to the
  input paths; inputs that look like options (a snapshot `--warn-only`, a
  config `-gate.toml`) stay paths.
* a hostile checkout: a committed `memgate.md` (a symlink to a secret, or a
  "pass" report) when the gate exits 2 or passes is never posted, read or
  written through (the check step then the comment step, in one workspace).
* `download`: against a fake release directory (file:// URLs through the
  step's test-only MEMGATE_TEST_RELEASE_BASE) holding an archive of the given
  binary (a .tar.gz for Linux, a .zip for Windows) and SHA256SUMS: installs
  on a match, refuses a tampered checksum, a missing asset or line, an
  unsupported platform and a server-url that is not https; checksums
  committed in the action (checksums/TAG.sha256) win over the release's.
* `resolve`: `version: auto` is the action's own tag (github.action_ref, or
  the _actions/OWNER/NAME/REF checkout path), a source build at a branch;
  `source` builds; a tag is that tag.
* `working-directory`, `metrics` and `html`: memgate runs in the directory,
  the two reports land in the step's own directory and are copied; a
  working directory through a symlink or `..` is refused, and so is any
  input but `snapshots` holding a line break.
* the comment step: against a fake `gh` that answers the comment listing
  from a JSON file through real jq (the step's own --jq filter) and records
  each call: POST when no marked comment of the step's own login exists
  (GraphQL `viewer`, answered from a file too), PATCH of the marked one
  that is; another commenter's marked comment is never edited.
* the source build's pinned toolchain is Cargo.toml's rust-version, and
  no installer is piped to a shell (`curl … | sh`).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

from ruamel.yaml import YAML

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    # (what, inputs, files of a fresh workspace to run in (None: the repository root), exit code, verdict)
    ("bundled example", {"config": "examples/memgate.toml"}, None, 0, "pass"),
    ("regressed example", {"config": "examples/memgate-regressed.toml"}, None, 1, "fail"),
    ("regressed, warn-only", {"config": "examples/memgate-regressed.toml", "warn-only": "true"}, None, 0, "fail"),
    ("snapshots input (lines) replaces the config's",
     {"config": "examples/memgate-regressed.toml",
      "snapshots": "examples/snapshots/rank0.pickle\n  examples/snapshots/rank1.pickle\n"}, None, 0, "pass"),
    ("snapshots input (a glob, expanded by memgate)",
     {"config": "examples/memgate.toml", "snapshots": "examples/snapshots-regressed/rank*.pickle"}, None, 1, "fail"),
    ("baseline input, no reports", {"config": "examples/memgate.toml", "baseline": "examples/snapshots-regressed",
                                     "junit": "", "markdown": "", "json": ""}, None, 0, "pass"),
    ("missing config", {"config": "examples/nope.toml"}, None, 2, "error"),
    # Inputs are never options: a snapshot entry `--warn-only` is a (missing)
    # snapshot, so the regressed gate cannot pass; a config or baseline whose
    # name starts with `-` is that file.
    ("a snapshot entry --warn-only is a path, not the flag",
     {"config": "examples/memgate-regressed.toml",
      "snapshots": "examples/snapshots-regressed/rank0.pickle --warn-only"}, None, 2, "error"),
    ("a config named -gate.toml", {"config": "-gate.toml"}, {"-gate.toml": "config"}, 0, "pass"),
    ("a baseline named -golden", {"config": "-gate.toml", "baseline": "-golden"},
     {"-gate.toml": "config", "-golden": "golden"}, 0, "pass"),
    # A report path through a directory the checkout made a symlink: no
    # copy lands outside (the report stays in the report directory).
    ("markdown through a symlinked directory", {"config": "-gate.toml", "markdown": "out/memgate.md"},
     {"-gate.toml": "config", "out": "outside"}, 0, "pass"),
    ("warn-only neither true nor false is refused", {"config": "examples/memgate-regressed.toml", "warn-only": "yes"},
     None, 2, None),
    ("metrics and html reports", {"config": "examples/memgate-regressed.toml", "metrics": "m/metrics.txt",
                                  "html": "memgate.html"}, None, 1, "fail"),
    ("working-directory: paths relative to it", {"working-directory": "sub/dir", "config": "-gate.toml",
                                                 "html": "out/page.html", "metrics": "metrics.txt"},
     {"sub/dir/-gate.toml": "config"}, 0, "pass"),
    ("working-directory through a symlink is refused", {"working-directory": "link/dir", "config": "-gate.toml"},
     {"real/dir/-gate.toml": "config", "link": ("symlink", "real")}, 2, None),
    ("working-directory with .. is refused", {"working-directory": "sub/../..", "config": "-gate.toml"},
     {"sub/-gate.toml": "config"}, 2, None),
    # A line break hid the rest of the value from the symlink walk (which
    # read the first line): every input but `snapshots` is one line.
    ("working-directory with a line break is refused",
     {"working-directory": "ok\nlink/dir", "config": "-gate.toml"},
     {"real/dir/-gate.toml": "config", "ok\nlink": ("symlink", "real")}, 2, None),
    ("a report path with a line break is refused", {"config": "-gate.toml", "markdown": "a.md\nb.md"},
     {"-gate.toml": "config"}, 2, None),
]

def step_env(step, inputs, context):
    """The step's env with `${{ inputs.X }}` and `${{ runner.X }}` /
    `${{ github.X }}` / `${{ steps.X.outputs.Y }}` (from context; an unset
    step output is empty, as on a runner) substituted; literal values kept."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "MEMGATE_"))}
    for k, v in step["env"].items():
        m = re.fullmatch(r"\$\{\{ (inputs|runner|github|steps)\.([a-z_.-]+) \}\}", str(v))
        if m and m.group(1) == "steps":
            env[k] = context.get("steps." + m.group(2), "")
        elif m:
            env[k] = inputs[m.group(2)] if m.group(1) == "inputs" else context[m.group(1) + "." + m.group(2)]
        else:
            assert "${{" not in str(v), f"unexpected env value {v!r}"
            env[k] = str(v)
    return env


def run_step(step, env, tmp, cwd=ROOT):
    """Runs the step's script like the runner (bash -e -o pipefail); returns
    the process, its outputs and the lines it added to GITHUB_PATH."""
    assert step["shell"] == "bash"
    for name in ("output", "path", "summary"):
        open(os.path.join(tmp, name), "w").close()
    env = dict(env, GITHUB_OUTPUT=os.path.join(tmp, "output"), GITHUB_PATH=os.path.join(tmp, "path"),
               GITHUB_STEP_SUMMARY=os.path.join(tmp, "summary"))
    p = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]],
                       cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    out = open(env["GITHUB_OUTPUT"]).read()
    outputs = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    return p, outputs, open(env["GITHUB_PATH"]).read().splitlines()


REPORTS = {"junit": "memgate-junit.xml", "markdown": "memgate.md", "json": "memgate.json",
           "metrics": "memgate-metrics.txt", "html": "memgate.html"}


def example_config():
    """examples/memgate.toml with its snapshot and baseline paths absolute."""
    text = open(os.path.join(ROOT, "examples", "memgate.toml")).read()
    examples = os.path.join(ROOT, "examples")
    text = text.replace('snapshots = "snapshots/', f'snapshots = "{examples}/snapshots/')
    return text.replace('baseline = "golden/"', f'baseline = "{examples}/golden/"')


OUTSIDE = "outside"


def make_workspace(ws, files):
    """A workspace holding `files`: name -> "config" (example_config()),
    "golden" (a copy of examples/golden), "outside" (a symlink to the empty
    directory OUTSIDE beside the workspace), ("symlink", target) or text."""
    os.makedirs(ws)
    for name, what in files.items():
        path = os.path.join(ws, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if what == "config":
            open(path, "w").write(example_config())
        elif what == "golden":
            shutil.copytree(os.path.join(ROOT, "examples", "golden"), path)
        elif what == "outside":
            os.makedirs(os.path.join(os.path.dirname(ws), OUTSIDE))
            os.symlink(os.path.join(os.path.dirname(ws), OUTSIDE), path)
        elif isinstance(what, tuple):
            os.symlink(what[1], path)
        else:
            open(path, "w").write(what)


def reports_ok(outputs, inputs, runner_temp, cwd):
    """Every report the step names is a regular file in a directory under
    RUNNER_TEMP that the step made; the input path holds a copy of it, or
    nothing when memgate wrote none. Returns the list of what is wrong."""
    wrong = []
    report_dir = outputs.get("report-dir", "")
    if not (report_dir and os.path.dirname(report_dir) == runner_temp and os.path.isdir(report_dir)):
        return [f"report-dir {report_dir!r} is not a directory in RUNNER_TEMP"]
    for kind, name in REPORTS.items():
        named = outputs.get(kind, "")
        asked = inputs[kind]
        if named:
            if os.path.dirname(named) != report_dir or os.path.islink(named) or not os.path.isfile(named):
                wrong.append(f"{kind} output {named!r} is not a regular file in the report directory")
                continue
            if asked and os.path.islink(os.path.join(cwd, os.path.dirname(asked))):
                if os.path.lexists(os.path.join(cwd, asked)):
                    wrong.append(f"{asked} was written through a symlinked directory")
            elif asked:
                copy = os.path.join(cwd, asked)
                if os.path.islink(copy) or not os.path.isfile(copy) or open(copy, "rb").read() != open(named, "rb").read():
                    wrong.append(f"{asked} is not a copy of {named}")
        elif asked and os.path.lexists(os.path.join(cwd, asked)):
            wrong.append(f"{asked} exists though memgate wrote no {kind} report")
    want_report = outputs.get("markdown") or outputs.get("json") or ""
    if outputs.get("report", "") != want_report:
        wrong.append(f"report output {outputs.get('report')!r}, expected {want_report!r}")
    return wrong


def check_cases(action, defaults, bindir):
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    failures = 0
    for what, inputs, files, want_code, want_verdict in CASES:
        values = dict(defaults, **inputs)
        with tempfile.TemporaryDirectory() as tmp:
            runner_temp = os.path.join(tmp, "runner-temp")
            os.makedirs(runner_temp)
            cwd = ROOT
            if files is None:
                # reports are copied to the scratch directory, not the checkout
                for k in REPORTS:
                    if values[k]:
                        values[k] = os.path.join(tmp, os.path.basename(values[k]))
            else:
                cwd = os.path.join(tmp, "workspace")
                make_workspace(cwd, files)
            env = step_env(step, values, {"runner.temp": runner_temp})
            env["PATH"] = bindir + os.pathsep + env["PATH"]
            p, outputs, _ = run_step(step, env, tmp, cwd)
            ok = p.returncode == want_code and outputs.get("exit-code") == str(want_code)
            wrong = []
            if want_verdict is not None:
                ok = ok and outputs.get("verdict") == want_verdict
                ok = ok and os.path.getsize(os.path.join(tmp, "summary")) > 0
                wrong = reports_ok(outputs, values, runner_temp, os.path.join(cwd, values["working-directory"]))
                outside = os.path.join(tmp, OUTSIDE)
                if os.path.isdir(outside) and os.listdir(outside):
                    wrong.append(f"wrote {os.listdir(outside)} outside the workspace")
            else:
                ok = ok and "::error title=memgate::" in p.stdout
            failures += report(ok and not wrong, f"check: {what}: exit {p.returncode}, outputs {outputs} {wrong}", p)
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
    #  exit code, stderr/stdout must contain[, version input])
    ("matching checksum installs", ("Linux", "X64"), None, "", True, 0, "matches the release's SHA256SUMS"),
    ("tampered checksum refused", ("Linux", "X64"), "tamper", "", True, 2, "checksum mismatch"),
    ("SHA256SUMS without the asset's line", ("Linux", "X64"), "drop", "", True, 2, "has no line for"),
    ("asset missing from the release", ("Linux", "ARM64"), None, "", True, 2, "could not download"),
    ("unsupported platform", ("Linux", "ARM"), None, "", True, 2, "no prebuilt memgate for Linux/ARM"),
    ("Windows: the zip, checked and unpacked", ("Windows", "X64"), None, "", True, 0, "matches the release's SHA256SUMS"),
    ("committed checksums win over a tampered release's", ("Linux", "X64"), "tamper+committed", "", True, 0,
     "matches checksums/v0.0.0-smoke.sha256 of the action"),
    ("a tampered committed checksum refuses", ("Linux", "X64"), "committed-tamper", "", True, 2,
     "checksums/v0.0.0-smoke.sha256 of the action says"),
    ("a server-url that is not https", ("Linux", "X64"), None, "", True, 2, "is not an https:// base URL",
     VERSION, "http://example.com"),
    ("local action, no release-repository", ("Linux", "X64"), None, "", False, 2, "set the 'release-repository'"),
    ("local action, release-repository given", ("Linux", "X64"), None, "acme/memgate", False, 0,
     "matches the release's SHA256SUMS"),
    ("a release-repository that is not owner/name", ("Linux", "X64"), None, "acme/memgate/../../x", False, 2,
     "is not owner/name"),
    ("a version that is not a tag name", ("Linux", "X64"), None, "", True, 2, "is not a release tag",
     "v0/../../../x"),
]

WINDOWS_ASSET = f"memgate-{VERSION}-x86_64-pc-windows-msvc.zip"


def fake_release(tmp, binary, sums_edit, action_path):
    """A release directory: the x86_64 Linux archive and the Windows zip of
    `binary`, and SHA256SUMS; with a `committed` edit, the action's
    checksums/VERSION.sha256 too (right, or tampered)."""
    rel = os.path.join(tmp, "releases", VERSION)
    os.makedirs(rel)
    with tarfile.open(os.path.join(rel, X86_ASSET), "w:gz") as tar:
        tar.add(binary, arcname="memgate")
    import zipfile
    with zipfile.ZipFile(os.path.join(rel, WINDOWS_ASSET), "w") as z:
        z.write(binary, arcname="memgate.exe")
    digests = {a: hashlib.sha256(open(os.path.join(rel, a), "rb").read()).hexdigest()
               for a in (X86_ASSET, WINDOWS_ASSET)}
    right = "".join(f"{d}  {a}\n" for a, d in digests.items())
    if sums_edit and "tamper" in sums_edit.split("+")[0]:
        digests = {a: d[::-1] for a, d in digests.items()}
    lines = [f"{'0' * 64}  memgate-{VERSION}-riscv64gc-unknown-linux-gnu.tar.gz"]
    if sums_edit != "drop":
        lines += [f"{d}  {a}" for a, d in digests.items()]
    with open(os.path.join(rel, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if sums_edit and "committed" in sums_edit:
        os.makedirs(os.path.join(action_path, "checksums"), exist_ok=True)
        committed = right if sums_edit == "tamper+committed" else "".join(
            f"{d}  {a}\n" for a, d in digests.items())
        open(os.path.join(action_path, "checksums", f"{VERSION}.sha256"), "w").write(committed)
    return "file://" + os.path.join(tmp, "releases")


def download_cases(action, defaults, bindir):
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "download")
    binary = os.path.join(bindir, "memgate")
    failures = 0
    for what, (os_name, arch), sums_edit, repo, under_actions, want_code, want_text, *extra in DOWNLOAD_CASES:
        version = (extra + [VERSION])[0]
        server = (extra[1:] + ["https://github.com"])[0]
        with tempfile.TemporaryDirectory() as tmp:
            action_path = (os.path.join(tmp, "_actions", "acme", "memgate", "v1") if under_actions
                           else os.path.join(tmp, "work", "repo"))
            runner_temp = os.path.join(tmp, "runner-temp")
            os.makedirs(runner_temp)
            context = {"runner.os": os_name, "runner.arch": arch, "runner.temp": runner_temp,
                       "github.action_path": action_path, "steps.resolve.outputs.tag": version}
            values = dict(defaults, **{"release-repository": repo, "server-url": server})
            env = step_env(step, values, context)
            env["MEMGATE_TEST_RELEASE_BASE"] = fake_release(tmp, binary, sums_edit, action_path)
            p, _, path = run_step(step, env, tmp)
            text = p.stdout + p.stderr
            ok = p.returncode == want_code and want_text in text
            if want_code == 0:
                # Installed: on GITHUB_PATH, the very binary that was packed.
                exe = "memgate.exe" if os_name == "Windows" else "memgate"
                installed = os.path.join(path[0], exe) if len(path) == 1 else ""
                ok = ok and os.path.isfile(installed) and open(installed, "rb").read() == open(binary, "rb").read()
            else:
                ok = ok and not path and "::error title=memgate::" in text
            failures += report(ok, f"download: {what}: exit {p.returncode}", p)
    return failures


FAKE_GH = r"""#!/usr/bin/env python3
# A stand-in for gh: `api --paginate URL --jq F` answers from the comments
# JSON, `api graphql -f query=Q --jq F` from the viewer JSON (exit 1 without
# one), both through real jq; other `api` calls are recorded (with the body
# file).
import json, os, subprocess, sys
args = sys.argv[1:]
log = os.environ["FAKE_GH_LOG"]
if args[:2] == ["api", "graphql"]:
    assert "query={viewer{login}}" in args, args
    viewer = os.environ.get("FAKE_GH_VIEWER")
    if not viewer:
        print("HTTP 401: Bad credentials", file=sys.stderr)
        sys.exit(1)
    jq = args[args.index("--jq") + 1]
    sys.exit(subprocess.run(["jq", "-r", jq], input=viewer, text=True).returncode)
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
BOT = "github-actions[bot]"


def by(login, id, body):
    return {"id": id, "body": body, "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}}


COMMENT_CASES = [
    # (what, existing comments, viewer login (None: the query fails), gh fails,
    #  the one call expected: (method, URL) or None); a viewer "" answers a null login
    ("first report is posted", [by("alice", 5, "LGTM")], BOT, False, ("POST", "repos/acme/app/issues/7/comments")),
    ("later reports edit the marked comment",
     [by("alice", 5, "LGTM"), by(BOT, 42, MARKER + "\nold report"), by(BOT, 43, "quoting " + MARKER)],
     BOT, False, ("PATCH", "repos/acme/app/issues/comments/42")),
    ("another commenter's marked comment is never edited",
     [by("mallory", 9, MARKER + "\n## memgate: pass")], BOT, False, ("POST", "repos/acme/app/issues/7/comments")),
    ("the step's own marked comment, after another commenter's",
     [by("mallory", 9, MARKER + "\n## memgate: pass"), by(BOT, 42, MARKER + "\nold report")],
     BOT, False, ("PATCH", "repos/acme/app/issues/comments/42")),
    ("a personal token edits its user's comment, not the bot's",
     [by(BOT, 10, MARKER + "\nold"), by("alice", 11, MARKER + "\nold")],
     "alice", False, ("PATCH", "repos/acme/app/issues/comments/11")),
    ("an unknown identity posts anew, never edits",
     [by(BOT, 42, MARKER + "\nold report")], None, False, ("POST", "repos/acme/app/issues/7/comments")),
    ("a viewer without a login (null) posts anew, never edits",
     [by("null", 8, MARKER + "\nfake")], "", False, ("POST", "repos/acme/app/issues/7/comments")),
    ("a refused comment warns, never fails", [], BOT, True, None),
]


def comment_env(step, defaults, tmp, comments, viewer, markdown_input, check_outputs):
    """The comment step's env, with a fake gh answering from `comments` and
    `viewer` (a login, or None for a failing query)."""
    fakebin = os.path.join(tmp, "bin")
    os.makedirs(fakebin)
    with open(os.path.join(fakebin, "gh"), "w") as f:
        f.write(FAKE_GH)
    os.chmod(os.path.join(fakebin, "gh"), 0o755)
    with open(os.path.join(tmp, "comments.json"), "w") as f:
        json.dump(comments, f)
    runner_temp = os.path.join(tmp, "runner-temp")
    os.makedirs(runner_temp, exist_ok=True)
    context = {"runner.temp": runner_temp, "github.repository": "acme/app", "github.event.pull_request.number": "7"}
    context.update({"steps.check.outputs." + k: v for k, v in check_outputs.items()})
    env = step_env(step, dict(defaults, markdown=markdown_input, comment="true"), context)
    env.update(PATH=fakebin + os.pathsep + os.environ["PATH"], FAKE_GH_LOG=os.path.join(tmp, "calls"),
               FAKE_GH_COMMENTS=os.path.join(tmp, "comments.json"))
    if viewer is not None:
        env["FAKE_GH_VIEWER"] = json.dumps({"data": {"viewer": {"login": viewer or None}}})
    return env


def gh_calls(env):
    return [json.loads(l) for l in open(env["FAKE_GH_LOG"])] if os.path.exists(env["FAKE_GH_LOG"]) else []


def comment_cases(action, defaults):
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Comment on the pull request")
    failures = 0
    for what, comments, viewer, gh_fails, want_call in COMMENT_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            # What the check step leaves: the report in its own directory.
            report_dir = os.path.join(tmp, "runner-temp", "memgate-reports.abc")
            os.makedirs(report_dir)
            report_md = os.path.join(report_dir, "memgate.md")
            with open(report_md, "w") as f:
                f.write("## memgate: pass\n")
            outputs = {"report-dir": report_dir, "markdown": report_md, "report": report_md}
            env = comment_env(step, defaults, tmp, comments, viewer, report_md, outputs)
            if gh_fails:
                env["FAKE_GH_FAIL"] = "1"
            p, _, _ = run_step(step, env, tmp)
            calls = gh_calls(env)
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


SECRET = "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0LXRva2Vu\n"
COMMITTED_PASS = "## memgate: \u2705 pass\n"

HOSTILE_CASES = [
    # (what, config input, memgate on PATH, the checkout's memgate.md, check's exit code)
    ("memgate.md -> a read-only secret, the gate could not judge", "nope.toml", True, "symlink", 2),
    ("memgate.md -> a read-only secret, the gate passes", "-gate.toml", True, "symlink", 0),
    ("memgate.md reading pass, the gate could not judge", "nope.toml", True, COMMITTED_PASS, 2),
    ("memgate.md reading pass, memgate never ran", "-gate.toml", False, COMMITTED_PASS, 127),
]


def hostile_checkout_cases(action, defaults, bindir):
    """The check step then the comment step in one workspace whose
    memgate.md the pull request committed: what is posted is this run's
    report (or nothing), never that file, and the secret stays as it was."""
    check = next(s for s in action["runs"]["steps"] if s.get("id") == "check")
    comment = next(s for s in action["runs"]["steps"] if s.get("name") == "Comment on the pull request")
    failures = 0
    for what, config, on_path, committed, want_code in HOSTILE_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            secret = os.path.join(tmp, "git-config")
            with open(secret, "w") as f:
                f.write(SECRET)
            os.chmod(secret, 0o444)
            ws = os.path.join(tmp, "workspace")
            make_workspace(ws, {"-gate.toml": "config",
                                "memgate.md": ("symlink", secret) if committed == "symlink" else committed})
            runner_temp = os.path.join(tmp, "runner-temp")
            os.makedirs(runner_temp)
            values = dict(defaults, config=config, comment="true")
            env = step_env(check, values, {"runner.temp": runner_temp})
            if on_path:
                env["PATH"] = bindir + os.pathsep + env["PATH"]
            p, outputs, _ = run_step(check, env, tmp, ws)
            wrong = [] if p.returncode == want_code else [f"check exited {p.returncode}"]
            if on_path:
                wrong += reports_ok(outputs, values, runner_temp, ws)
            env = comment_env(comment, defaults, tmp, [], BOT, values["markdown"], outputs)
            q, _, _ = run_step(comment, env, tmp, ws)
            calls = gh_calls(env)
            posted = [c["body"] for c in calls]
            if q.returncode != 0:
                wrong.append(f"comment step exited {q.returncode}")
            if any("c2VjcmV0LXRva2Vu" in b or COMMITTED_PASS in b for b in posted):
                wrong.append("posted the committed memgate.md")
            run_report = outputs.get("markdown", "")
            if run_report and os.path.isfile(run_report):
                if posted != [MARKER + "\n" + open(run_report).read()]:
                    wrong.append(f"posted {len(posted)} comments, not this run's report")
            elif posted:
                wrong.append("posted a comment though memgate wrote no report")
            if open(secret).read() != SECRET:
                wrong.append("the secret was written through the symlink")
            failures += report(not wrong, f"hostile checkout: {what}: exit {p.returncode}, {len(posted)} posted {wrong}",
                               q if q.returncode else p)
    return failures


RESOLVE_CASES = [
    # (what, version input, github.action_ref, action path tail, tag wanted)
    ("auto at a release tag", "auto", "v1.2.3", "_actions/acme/memgate/v1.2.3", "v1.2.3"),
    ("auto, action_ref empty: the checkout path's ref", "auto", "", "_actions/acme/memgate/v0.3.0-rc.1", "v0.3.0-rc.1"),
    ("auto at a branch builds from source", "auto", "main", "_actions/acme/memgate/main", ""),
    ("auto as a local action builds from source", "auto", "", "work/repo", ""),
    ("source builds from source", "source", "v1.2.3", "_actions/acme/memgate/v1.2.3", ""),
    ("empty builds from source", "", "v1.2.3", "_actions/acme/memgate/v1.2.3", ""),
    ("a tag is that tag", "v0.1.0", "main", "_actions/acme/memgate/main", "v0.1.0"),
    # The action-only repository (.ci/action_repo.py) has no source to build.
    ("action-only repository at its tag", "auto", "v1.2.3", "_actions/acme/memgate-action/v1.2.3", "v1.2.3"),
    ("action-only repository at a branch is refused", "auto", "main", "_actions/acme/memgate-action/main", None),
    ("action-only repository with version source is refused", "source", "v1.2.3", "_actions/acme/memgate-action/v1.2.3", None),
]


def resolve_cases(action, defaults):
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "resolve")
    failures = 0
    for what, version, ref, tail, want in RESOLVE_CASES:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, tail)
            if "memgate-action/" in tail:
                os.makedirs(path)
                open(os.path.join(path, ".memgate-action-only"), "w").close()
            context = {"github.action_ref": ref, "github.action_path": path}
            env = step_env(step, dict(defaults, version=version), context)
            p, outputs, _ = run_step(step, env, tmp)
            if want is None:
                ok = p.returncode == 2 and "holds no source to build" in p.stdout and "tag" not in outputs
            else:
                ok = p.returncode == 0 and outputs.get("tag") == want
            failures += report(ok, f"resolve: {what}: tag {outputs.get('tag')!r}", p)
    return failures


def toolchain_pin(action):
    """The source build's toolchain and cache key name Cargo.toml's rust-version."""
    msrv = re.search(r'^rust-version = "([0-9.]+)"', open(os.path.join(ROOT, "Cargo.toml")).read(), re.M).group(1)
    text = open(os.path.join(ROOT, "action.yml")).read()
    pins = set(re.findall(r'MEMGATE_RUST_TOOLCHAIN: "([0-9.]+)"', text)) | set(re.findall(r"-rust([0-9.]+)-", text))
    ok = len(pins) == 1 and (pins == {msrv} or pins == {msrv + ".0"})
    failures = report(ok, f"source build toolchain {sorted(pins)} is Cargo.toml's rust-version {msrv}")
    piped = re.findall(r"\|\s*(?:ba)?sh\b", text)
    return failures + report(not piped, f"no download piped to a shell in action.yml ({piped})")


def main():
    bindir = os.path.abspath(sys.argv[1])
    action = YAML(typ="safe").load(open(os.path.join(ROOT, "action.yml")))
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    # What the runner substitutes for the expression default.
    assert defaults["server-url"] == "${{ github.server_url }}", defaults["server-url"]
    defaults["server-url"] = "https://github.com"
    failures = check_cases(action, defaults, bindir)
    failures += resolve_cases(action, defaults)
    failures += download_cases(action, defaults, bindir)
    failures += comment_cases(action, defaults)
    failures += hostile_checkout_cases(action, defaults, bindir)
    failures += toolchain_pin(action)
    print(f"action smoke: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
