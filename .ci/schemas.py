"""The JSON Schemas in schemas/ against what memgate reads and writes.

    python3 .ci/schemas.py MEMGATE_BIN

Valid: every example budget (thresholds.example.toml, examples/*.toml), the
budget `memgate init` writes, every golden summary (examples/golden/), the
summaries `memgate summarize` writes of the example snapshots, and the
verdicts `memgate check --json` writes for the passing, the regressed and a
could-not-judge run. Invalid, and refused: a budget with a misspelt key, a
key in the wrong table, and a summary and a verdict with a wrong type.
Needs Python 3.11+ (tomllib) and the jsonschema package (check-jsonschema's).
"""

import copy
import json
import pathlib
import subprocess
import sys
import tempfile
import tomllib

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parent.parent


def validator(name):
    schema = json.loads((ROOT / "schemas" / name).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(v, doc):
    return [e.message for e in v.iter_errors(doc)]


def expect_valid(v, doc, what):
    found = errors(v, doc)
    if found:
        sys.exit(f"error: {what} does not match its schema: {found[:3]}")
    print(f"ok: {what}")


def expect_invalid(v, doc, what):
    if not errors(v, doc):
        sys.exit(f"error: {what} matches its schema, but should not")
    print(f"ok: {what} is refused")


def run(memgate, *args, cwd=ROOT, codes=(0,)):
    p = subprocess.run([memgate, *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode not in codes:
        sys.exit(f"error: memgate {' '.join(args)} exited {p.returncode}: {p.stderr}")


def budgets(memgate, tmp):
    v = validator("memgate.toml.schema.json")
    files = [ROOT / "thresholds.example.toml", *sorted((ROOT / "examples").glob("*.toml"))]
    init = tmp / "init"
    init.mkdir()
    snaps = sorted(map(str, (ROOT / "examples/snapshots").glob("rank*.pickle")))
    run(memgate, "init", *snaps, cwd=init)
    files += sorted(init.glob("*.toml"))
    if len(files) < 4:
        sys.exit(f"error: expected the example budgets and init's, found {files}")
    for f in files:
        expect_valid(v, tomllib.loads(f.read_text()), f"budget {f.name}")
    good = tomllib.loads((ROOT / "examples/memgate.toml").read_text())
    typo = copy.deepcopy(good)
    typo["target"][0]["budget"]["alocated-peak"] = "1 GiB"
    expect_invalid(v, typo, "a budget with `alocated-peak`")
    moved = copy.deepcopy(good)
    moved["defaults"] = {"snapshots": "x.pickle"}
    expect_invalid(v, moved, "a budget with `snapshots` in [defaults]")
    expect_invalid(v, {"target": {"name": "t"}}, "a budget whose [target] is a table")


def summaries(memgate, tmp):
    v = validator("summary.schema.json")
    files = sorted((ROOT / "examples/golden").glob("*.json"))
    for d in ("snapshots", "snapshots-regressed"):
        out = tmp / d
        snaps = sorted(map(str, (ROOT / "examples" / d).glob("rank*.pickle")))
        run(memgate, "summarize", "--output", str(out), *snaps)
        files += sorted(out.glob("*.json"))
    if len(files) < 4:
        sys.exit(f"error: expected goldens and summaries, found {files}")
    for f in files:
        expect_valid(v, json.loads(f.read_text()), f"summary {f.name}")
    bad = json.loads(files[0].read_text())
    bad["devices"][0]["figures"] = "big"
    expect_invalid(v, bad, "a summary whose figures are a string")


def verdicts(memgate, tmp):
    v = validator("verdict.schema.json")
    # A target whose snapshot is unreadable: judged as an error, verdict written.
    (tmp / "broken.pickle").write_bytes(b"not a pickle")
    missing = tmp / "missing.toml"
    missing.write_text('[[target]]\nname = "t"\nsnapshots = "broken.pickle"\n'
                       '[target.budget]\nallocated-peak = "1 GiB"\n')
    runs = [
        ("examples/memgate.toml", 0),
        ("examples/memgate-regressed.toml", 1),
        (str(missing), 2),
    ]
    for i, (config, code) in enumerate(runs):
        path = tmp / f"verdict{i}.json"
        run(memgate, "check", "--config", config, "--json", str(path), codes=(code,))
        doc = json.loads(path.read_text())
        expect_valid(v, doc, f"verdict of {config} (exit {code})")
        if i == 1:
            doc["counts"] = []
            expect_invalid(v, doc, "a verdict whose counts are a list")


def main():
    memgate = str(pathlib.Path(sys.argv[1]).resolve())
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        budgets(memgate, tmp)
        summaries(memgate, tmp)
        verdicts(memgate, tmp)


if __name__ == "__main__":
    main()
