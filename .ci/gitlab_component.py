#!/usr/bin/env python3
"""Render templates/memgate.yml (the GitLab CI/CD component) with inputs the
way GitLab does, lint the result, and run its gate job's script.

    python3 .ci/gitlab_component.py MEMGATE_BINARY_DIR RENDERED_OUT.yml

Rendering follows GitLab's rules for `spec: inputs`: every input given must
be declared, a missing one takes its default (one without a default is an
error), booleans must be booleans, `regex` and `options` are enforced, and
`$[[ inputs.NAME ]]` is replaced in the document after the `---`. The result
must parse, hold no `$[[` left over, and name the jobs the inputs ask for;
.ci/run then lints it with GitLab's CI schema (check-jsonschema). The gate
script is run with the memgate built here: a passing budget exits 0, a failed
one exits 1, or 77 (the one code `allow_failure` lets through) with
`warn-only`; `memgate-ran` holds memgate's own exit code either way.

Needs ruamel.yaml (in .ci/run's venv).
"""
import os
import re
import subprocess
import sys
import tempfile

from ruamel.yaml import YAML

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TEMPLATE = os.path.join(ROOT, "templates", "memgate.yml")
TOKEN = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")


def split(text):
    head, sep, body = text.partition("\n---\n")
    if not sep:
        raise ValueError("the component has no `---` after its spec header")
    return YAML(typ="safe").load(head)["spec"]["inputs"], body


def resolve(spec, given):
    unknown = set(given) - set(spec)
    if unknown:
        raise ValueError(f"unknown inputs: {sorted(unknown)}")
    values = {}
    for name, rule in spec.items():
        rule = rule or {}
        if name in given:
            value = given[name]
        elif "default" in rule:
            value = rule["default"]
        else:
            raise ValueError(f"input {name} is required")
        kind = rule.get("type", "string")
        if kind == "boolean" and not isinstance(value, bool):
            raise ValueError(f"input {name} must be a boolean")
        if kind == "string" and not isinstance(value, str):
            raise ValueError(f"input {name} must be a string")
        if "regex" in rule and not re.search(rule["regex"], str(value)):
            raise ValueError(f"input {name}={value!r} does not match {rule['regex']}")
        if "options" in rule and value not in rule["options"]:
            raise ValueError(f"input {name}={value!r} is not one of {rule['options']}")
        values[name] = value
    return values


def render(given=None, text=None):
    spec, body = split(text if text is not None else open(TEMPLATE, encoding="utf-8").read())
    values = resolve(spec, given or {})

    def sub(m):
        v = values[m.group(1)]
        return ("true" if v else "false") if isinstance(v, bool) else str(v)

    out = TOKEN.sub(sub, body)
    if "$[[" in out:
        raise ValueError("an interpolation is left after rendering")
    return out, YAML(typ="safe").load(out)


def script(doc, job, key="script"):
    return "\n".join(doc[job][key])


def run_gate(doc, job, bin_dir, config):
    with tempfile.TemporaryDirectory() as ws:
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", CI_PROJECT_DIR=ws,
                   **{k: str(v) for k, v in doc[job]["variables"].items()})
        env["MEMGATE_CONFIG"] = config
        p = subprocess.run(["sh", "-e", "-c", script(doc, job)], cwd=ws, env=env,
                           capture_output=True, text=True)
        ran_path = os.path.join(ws, env["MEMGATE_REPORTS"], "memgate-ran")
        ran = open(ran_path).read().strip() if os.path.exists(ran_path) else None
        md = os.path.exists(os.path.join(ws, env["MEMGATE_REPORTS"], "memgate.md"))
        return p.returncode, ran, md


def refusals():
    """Inputs GitLab would refuse are refused here too."""
    for bad in ({"nope": 1}, {"note": "yes"}, {"version": "latest"}, {"job-prefix": "Mem Gate"}):
        try:
            render(bad)
        except ValueError:
            continue
        raise AssertionError(f"inputs {bad} rendered; GitLab refuses them")


def main():
    bin_dir, out_path = os.path.abspath(sys.argv[1]), sys.argv[2]
    refusals()
    inputs = {"needs": "train", "reports": "out/mg", "job-prefix": "mem", "note": True,
              "warn-only": True, "version": "v9.8.7"}
    text, doc = render(inputs)
    assert set(doc) == {"mem-gate", "mem-note"}, sorted(doc)
    assert doc["mem-gate"]["needs"][0]["job"] == "train"
    assert doc["mem-note"]["needs"][0]["job"] == "mem-gate"
    assert doc["mem-gate"]["artifacts"]["reports"]["junit"] == "out/mg/memgate-junit.xml"
    assert doc["mem-gate"]["variables"]["MEMGATE_VERSION"] == "v9.8.7"
    assert '"true" == "true"' in doc["mem-note"]["rules"][0]["if"]
    assert doc["mem-gate"]["variables"]["MEMGATE_BASE_SCRIPT"] == ""
    assert "- memgate-summaries/" in text
    _, default = render({})
    assert set(default) == {"memory-gate", "memory-note"}
    assert '"false" == "true"' in default["memory-note"]["rules"][0]["if"]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(text)
    ok = os.path.join(ROOT, "examples", "memgate.toml")
    bad = os.path.join(ROOT, "examples", "memgate-regressed.toml")
    cases = [
        ("a passing budget exits 0", doc, "mem-gate", ok, (0, "0")),
        ("a failed gate with warn-only exits 77 (allowed), memgate-ran 1", doc, "mem-gate", bad, (77, "1")),
        ("a failed gate without warn-only exits 1", default, "memory-gate", bad, (1, "1")),
        ("a budget that cannot be judged exits 2 whatever warn-only says", doc, "mem-gate",
         os.path.join(ROOT, "examples", "missing.toml"), (2, "2")),
    ]
    failures = 0
    for what, d, job, config, want in cases:
        code, ran, md = run_gate(d, job, bin_dir, config)
        good = (code, ran) == want and (md or want[1] == "2")
        print(f"{'ok' if good else 'FAIL'}: {what} (exit {code}, memgate-ran {ran})")
        failures += not good
    print(f"gitlab component: rendered to {out_path}; {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
