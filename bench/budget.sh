#!/usr/bin/env bash
# Time `memgate check --validate` on a generated budget file of many targets
# (validation must stay linear: 50,000 targets in well under a second).
#
#   bench/budget.sh [TARGETS]        default 50000
#
# Environment: MEMGATE=path (default target/release/memgate), RUNS=5.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-50000}
RUNS=${RUNS:-5}
MEMGATE=${MEMGATE:-target/release/memgate}
WORK=$(mktemp -d /tmp/memgate-budget.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

awk -v n="$N" 'BEGIN {
    for (i = 0; i < n; i++) {
        printf "[[target]]\nname = \"t%d\"\nkey = '"'"'rank(\\d+)'"'"'\n", i
        printf "[target.budget]\noverall-peak = \"%d MiB\"\noom-events = 0\n", i
        printf "[target.budget.category]\nactivation = { limit = \"1 GiB\", level = \"warn\" }\n"
        printf "[target.tolerance]\nallocated-peak = \"2%%\"\n"
    }
}' >"$WORK/memgate.toml"
echo "== $N targets, $(wc -l <"$WORK/memgate.toml") lines, $RUNS runs"
# A snapshot named on the command line: the targets need no `snapshots`.
for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    "$MEMGATE" check --validate --config "$WORK/memgate.toml" unused.pickle >/dev/null
    end=$(date +%s.%N)
    echo "$end - $start" | bc
done | sort -g | awk '{ a[NR] = $1 } END { printf "median %.3f s\n", a[int((NR + 1) / 2)] }'
