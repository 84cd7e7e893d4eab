#!/usr/bin/env bash
# CycloneDX SBOM (JSON) of the memgate binary for one target triple:
#
#   .ci/sbom.sh TRIPLE OUT.cdx.json
#
# cargo-cyclonedx (pinned in release.yml) writes one SBOM per binary beside
# each Cargo.toml of the workspace; the root package's `memgate` one is
# moved to OUT, the others removed. PYTHON (default python3) checks it. Dependencies are those of TRIPLE (a
# Windows SBOM lists windows-sys, a Linux one libc).
set -euo pipefail
cd "$(dirname "$0")/.."
triple=$1 out=$2
find . python -maxdepth 1 -name '*.cdx.json' -delete
cargo cyclonedx --format json --describe binaries --target "$triple" >/dev/null
made=$(find . -maxdepth 1 -name '*.cdx.json')
if [[ $(wc -l <<<"$made") != 1 || -z $made ]]; then
    echo "error: expected one SBOM of the memgate binary, found: ${made:-none}" >&2
    exit 1
fi
mv "$made" "$out"
find python -maxdepth 1 -name '*.cdx.json' -delete
"${PYTHON:-python3}" - "$out" <<'PY'
import json, sys
bom = json.load(open(sys.argv[1]))
assert bom.get("bomFormat") == "CycloneDX", "not a CycloneDX document"
names = {c.get("name") for c in bom.get("components", [])}
assert "serde" in names, "the SBOM lists no dependencies"
print(f"ok: {sys.argv[1]}: {len(names)} components")
PY
