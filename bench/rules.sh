#!/usr/bin/env bash
# Time `memgate profile` over a snapshot of N distinct frames (bench/gen_frames.py)
# with no custom rules, and with R cheap literal category rules in a rules file
# (docs/figures.md#limits-on-rules): the rules are matched once per distinct
# frame name and file with one set matcher, so R rules must cost well under 2x
# the time without them (issue 31: 1000 rules over 100k frames took 7-28 s
# against 0.7-4.2 s before).
#
#   bench/rules.sh [FRAMES] [RULES]       default 100000 1000
#
# Environment: MEMGATE=path (default target/release/memgate), RUNS=3.
# Prints the median wall time and the peak RSS (/usr/bin/time -v) of each.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-100000}
R=${2:-1000}
RUNS=${RUNS:-3}
MEMGATE=$(realpath "${MEMGATE:-target/release/memgate}")
WORK=$(mktemp -d /tmp/memgate-rules.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

python3 bench/gen_frames.py "$WORK/frames.pickle" "$N"
# R literal rules; one in ten names a file the snapshot has.
python3 - "$R" "$N" >"$WORK/rules.toml" <<'PY'
import sys
r, n = int(sys.argv[1]), int(sys.argv[2])
print("[categories]")
for k in range(r):
    lit = f"mod_{(k * 97) % n}.py" if k % 10 == 0 else f"no_such_function_{k}"
    print(f'rule_{k} = "{lit}"')
PY

run() { # label, args...
    local label=$1
    shift
    local times=() rss=0
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -v -o "$WORK/time" "$MEMGATE" "$@" >/dev/null
        times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$WORK/time")")
        rss=$(awk -F': ' '/Maximum resident/ { print $2 }' "$WORK/time")
    done
    printf '%s\n' "${times[@]}" | sort -g | awk -v l="$label" -v r="$rss" \
        '{ a[NR] = $1 } END { printf "%-28s median %6.2f s   peak RSS %d MiB\n", l, a[int((NR + 1) / 2)], r / 1024 }'
}

echo "== profile over $N distinct frames, $RUNS runs each ($MEMGATE)"
run "no custom rules" profile --format json "$WORK/frames.pickle"
run "$R literal rules" profile --format json --rules "$WORK/rules.toml" "$WORK/frames.pickle"
