#!/usr/bin/env bash
# Time `memgate check` over the summaries of an N-rank job (docs/ranks.md):
# one summary per rank and per baseline rank, `[target.ranks]` with an
# imbalance limit, stages and a heaviest limit. 64 ranks must take well
# under a second.
#
#   bench/ranks.sh [RANKS]        default 64
#
# Environment: MEMGATE=path (default target/release/memgate), RUNS=5.
# With farm-bench on the PATH it times the runs (median of RUNS); else
# `date` does.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-64}
RUNS=${RUNS:-5}
MEMGATE=${MEMGATE:-target/release/memgate}
WORK=$(mktemp -d /tmp/memgate-ranks.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The job: rank 6 20% heavier, the rest within 2% (generate.py --ranks).
python3 tests/fixtures/gen/generate.py --ranks "$WORK/job" "$N" 6 20 >/dev/null
"$MEMGATE" summarize -o "$WORK/summaries" "$WORK"/job/run/*.pickle >/dev/null
"$MEMGATE" summarize -o "$WORK/golden" "$WORK"/job/baseline/*.pickle >/dev/null
names() { seq "$1" "$2" | awk '{ printf "%s\"rank%d\"", (NR > 1 ? ", " : ""), $1 }'; }
half=$((N / 2))
cat >"$WORK/memgate.toml" <<TOML
[defaults]
tolerance = "100%"

[[target]]
name = "job"
snapshots = "summaries/*.json"
baseline = "golden/"

[target.ranks]
imbalance = "15%"
heaviest = "80 GiB"
stage-imbalance = "15%"
stages = { first = [$(names 0 $((half - 1)))], last = [$(names "$half" $((N - 1)))] }
TOML
cd "$WORK"
echo "== check over $N rank summaries (+ $N baseline summaries), $RUNS runs"
# Exit 1 is the gate failing on rank 6, as it should (the last lines say so).
cmd=(sh -c "exec \"$OLDPWD/$MEMGATE\" check --json v.json >/dev/null 2>&1")
if command -v farm-bench >/dev/null; then
    farm-bench -n "$RUNS" -- "${cmd[@]}"
else
    for _ in $(seq "$RUNS"); do
        start=$(date +%s.%N)
        "${cmd[@]}" || true
        end=$(date +%s.%N)
        echo "$end - $start" | bc
    done | sort -g | awk '{ a[NR] = $1 } END { printf "median %.3f s\n", a[int((NR + 1) / 2)] }'
fi
"$OLDPWD/$MEMGATE" check --json v.json >/dev/null 2>&1 || true
python3 - "$N" <<'PY'
import json, sys
v = json.load(open("v.json"))
r = v["targets"][0]["ranks"]
assert len(r["ranks"]) == int(sys.argv[1]), len(r["ranks"])
heavy = [c for c in r["checks"] if c["id"] == "ranks.allocated-peak.imbalance"][0]
print("ranks judged:", len(r["ranks"]), "| allocated-peak imbalance:", heavy["status"],
      "heaviest", heavy["findings"][0]["heaviest"])
PY
