#!/usr/bin/env python3
"""Run the GitLab component's note job (templates/memgate.yml, rendered with
the inputs examples/gitlab-ci.yml gives it) the way a runner would, offline,
against the artifacts the gate job could leave.

    python3 .ci/gitlab_note_smoke.py MEMGATE_BINARY_DIR

Needs ruamel.yaml (in .ci/run's venv) and jq. `apk` and `curl` are fakes on
PATH: curl records each call and answers the user and note listings. Cases:
a real report (memgate run here, its exit code in `memgate-ran` as the
gate job writes it) is posted; a `memgate.md` without `memgate-ran` (what
a training step that wrote the report and exited before memgate leaves), a
`memgate-ran` that holds no exit code, and a report or marker that is a
symbolic link are never posted.
"""
import json
import os
import subprocess
import sys
import tempfile

from ruamel.yaml import YAML

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

FAKE_CURL = """#!/bin/sh
echo "$*" >> "$CURL_LOG"
case "$*" in
  *"/user") echo '{"id": 7}' ;;
  *"per_page=100"*) echo '[]' ;;
  *) for a in "$@"; do case "$a" in @*) cp "${a#@}" "$CURL_BODY" ;; esac; done; echo '{}' ;;
esac
"""


def note_script():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gitlab_component import render

    example = YAML(typ="safe").load(open(os.path.join(ROOT, "examples", "gitlab-ci.yml")))
    inputs = next(i["inputs"] for i in example["include"] if "memgate/memgate@" in i.get("component", ""))
    _, doc = render(inputs)
    job = doc["memory-note"]
    assert job["variables"]["MEMGATE_REPORTS"] == "memgate-report"
    return "\n".join(job["script"])


def run(script, ws, bin_dir):
    fake = os.path.join(ws, ".fake")
    os.makedirs(fake, exist_ok=True)
    for name, text in (("curl", FAKE_CURL), ("apk", "#!/bin/sh\nexit 0\n")):
        with open(os.path.join(fake, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(fake, name), 0o755)
    env = dict(os.environ, PATH=f"{fake}:{bin_dir}:{os.environ['PATH']}", MEMGATE_NOTE_TOKEN="t",
               MEMGATE_REPORTS="memgate-report",
               CI_API_V4_URL="https://gitlab.invalid/api/v4", CI_PROJECT_ID="1",
               CI_MERGE_REQUEST_IID="2", CURL_LOG=os.path.join(ws, ".curl.log"),
               CURL_BODY=os.path.join(ws, ".body.json"))
    p = subprocess.run(["sh", "-e", "-c", script], cwd=ws, env=env, capture_output=True, text=True)
    log = open(env["CURL_LOG"]).read() if os.path.exists(env["CURL_LOG"]) else ""
    body = open(env["CURL_BODY"]).read() if os.path.exists(env["CURL_BODY"]) else ""
    return p, log, body


def real_report(ws, bin_dir):
    """What memory-gate leaves: memgate's own Markdown, then `memgate-ran`."""
    out = os.path.join(ws, "memgate-report")
    os.makedirs(out)
    p = subprocess.run([os.path.join(bin_dir, "memgate"), "check", "--config",
                        os.path.join(ROOT, "examples", "memgate.toml"), "--markdown",
                        os.path.join(out, "memgate.md")], cwd=ROOT, capture_output=True)
    with open(os.path.join(out, "memgate-ran"), "w") as f:
        f.write(f"{p.returncode}\n")


def forged(ws, ran=None, link=None):
    """A "pass" report the training step wrote (where reports once went, and
    into memgate-report/), with or without a marker."""
    out = os.path.join(ws, "memgate-report")
    os.makedirs(out)
    for path in (os.path.join(ws, "memgate.md"), os.path.join(out, "memgate.md")):
        with open(path, "w") as f:
            f.write("## memgate: pass\n")
    if ran is not None:
        with open(os.path.join(out, "memgate-ran"), "w") as f:
            f.write(ran)
    if link:
        secret = os.path.join(ws, "secret")
        with open(secret, "w") as f:
            f.write("0\n")
        os.remove(os.path.join(out, link))
        os.symlink(secret, os.path.join(out, link))


CASES = [
    ("a report memgate wrote is posted", real_report, True),
    ("memgate.md without memgate-ran (the training step wrote it) is refused", lambda ws, b: forged(ws), False),
    ("memgate-ran holding no exit code is refused", lambda ws, b: forged(ws, ran="pass\n"), False),
    ("memgate-ran as a link is refused", lambda ws, b: forged(ws, ran="0\n", link="memgate-ran"), False),
    ("memgate.md as a link is refused", lambda ws, b: forged(ws, ran="0\n", link="memgate.md"), False),
]


def main():
    bin_dir = os.path.abspath(sys.argv[1])
    script = note_script()
    failures = 0
    for what, make, posted in CASES:
        with tempfile.TemporaryDirectory() as ws:
            make(ws, bin_dir)
            p, log, body = run(script, ws, bin_dir)
            wrote = " -X POST " in f" {log} " or " -X PUT " in f" {log} "
            ok = p.returncode == 0 and wrote == posted
            if posted:
                text = json.loads(body)["body"] if body else ""
                ok = ok and text.startswith("<!-- memgate-report -->\n") and "memgate" in text[24:]
            print(f"{'ok' if ok else 'FAIL'}: {what}")
            if not ok:
                failures += 1
                print(f"  exit {p.returncode}\n  stdout {p.stdout}\n  stderr {p.stderr}\n  curl {log}")
    print(f"gitlab note smoke: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
