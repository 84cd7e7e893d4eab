#!/usr/bin/env bash
# Benchmark memgate against a plain Python pickle.load of the same snapshot.
#
#   bench/run.sh [SNAPSHOT]          default /tmp/memgate-large.pickle (generated if missing)
#
# Environment:
#   RUNS=5               runs per command (median wall time, max peak RSS)
#   MEMGATE=path         use this binary instead of target/release/memgate
#   SKIP_BUILD=1         do not run cargo build --release
#   ONLY_PYTHON=1        measure only the Python baseline (e.g. before memgate builds)
#
# Wall time: hyperfine when installed (median of RUNS runs, 1 warm-up),
# otherwise a loop of /usr/bin/time -v ('Elapsed (wall clock)').  Peak RSS is
# always taken from /usr/bin/time -v ('Maximum resident set size'), max over runs.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
FILE=${1:-/tmp/memgate-large.pickle}
RUNS=${RUNS:-5}
MEMGATE=${MEMGATE:-$ROOT/target/release/memgate}
TIME_BIN=/usr/bin/time
WORK=$(mktemp -d /tmp/memgate-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [[ ! -x $TIME_BIN ]]; then
    echo "error: $TIME_BIN (GNU time) is required for peak RSS (apt-get install time)" >&2
    exit 2
fi

if [[ ${ONLY_PYTHON:-0} != 1 && ${SKIP_BUILD:-0} != 1 ]]; then
    echo "== cargo build --release"
    cargo build --release
fi

if [[ ! -f $FILE ]]; then
    echo "== generating $FILE"
    python3 "$ROOT/bench/gen_large.py" "$FILE"
fi
echo "== snapshot: $FILE ($(stat -c %s "$FILE") bytes), $RUNS runs per command"

# Elapsed "h:mm:ss" or "m:ss.ss" -> seconds
to_seconds() {
    awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }' <<<"$1"
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

HAVE_HYPERFINE=0
command -v hyperfine >/dev/null 2>&1 && HAVE_HYPERFINE=1

NAMES=()
declare -A WALL RSS STATUS

# measure NAME CMD...
measure() {
    local name=$1
    shift
    local times=() rss_max=0 status=ok i
    for ((i = 0; i < RUNS; i++)); do
        if ! $TIME_BIN -v -o "$WORK/time.txt" "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"; then
            status="FAILED (exit $(grep -oP 'Exit status: \K[0-9]+' "$WORK/time.txt" || echo '?'))"
            echo "   $name failed; stderr:" >&2
            head -n 5 "$WORK/err.txt" >&2 || true
        fi
        local el rss
        el=$(grep -oP 'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): \K\S+' "$WORK/time.txt")
        rss=$(grep -oP 'Maximum resident set size \(kbytes\): \K[0-9]+' "$WORK/time.txt")
        times+=("$(to_seconds "$el")")
        ((rss > rss_max)) && rss_max=$rss
        [[ $status == ok ]] || break
    done
    local wall
    if [[ $HAVE_HYPERFINE == 1 && $status == ok ]]; then
        local qcmd
        qcmd=$(printf '%q ' "$@")
        hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$WORK/hf.json" "$qcmd" >/dev/null
        wall=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["median"])' "$WORK/hf.json")
    else
        wall=$(printf '%s\n' "${times[@]}" | median)
    fi
    NAMES+=("$name")
    WALL[$name]=$wall
    RSS[$name]=$rss_max
    STATUS[$name]=$status
    printf '   %-18s median %8.3f s   peak RSS %9.1f MiB   %s\n' "$name" "$wall" "$(awk -v k="$rss_max" 'BEGIN{print k/1024}')" "$status"
}

echo "== timing ($([[ $HAVE_HYPERFINE == 1 ]] && echo hyperfine || echo '/usr/bin/time loop'))"
measure "python pickle.load" python3 -c "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))" "$FILE"
if [[ ${ONLY_PYTHON:-0} != 1 ]]; then
    if [[ ! -x $MEMGATE ]]; then
        echo "error: $MEMGATE not found (build failed?)" >&2
        exit 1
    fi
    measure "memgate inspect" "$MEMGATE" inspect "$FILE"
    measure "memgate profile" "$MEMGATE" profile "$FILE"
fi

echo
echo "== summary"
printf '%-20s %12s %14s %14s %14s\n' command "wall (s)" "peak RSS MiB" "wall/python" "RSS/python"
PY="python pickle.load"
for n in "${NAMES[@]}"; do
    awk -v n="$n" -v w="${WALL[$n]}" -v r="${RSS[$n]}" -v pw="${WALL[$PY]}" -v pr="${RSS[$PY]}" -v s="${STATUS[$n]}" 'BEGIN {
        printf "%-20s %12.3f %14.1f %14.3f %14.3f %s\n", n, w, r / 1024, (pw > 0 ? w / pw : 0), (pr > 0 ? r / pr : 0), (s == "ok" ? "" : s)
    }'
done
