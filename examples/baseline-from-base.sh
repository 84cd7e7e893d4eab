#!/bin/sh
# Baseline summaries from the base branch's last successful run, else the
# committed goldens (docs/ci.md#baselines-from-the-base-branch).
#
#   sh baseline-from-base.sh DEST GOLDEN
#
# DEST: a new (or empty) folder for the downloaded summaries. GOLDEN: the
# committed golden summaries, the fallback. Prints the folder to pass as
# `memgate check --baseline` (the action's `baseline` input) and says on
# stderr where it came from; on GitHub Actions it also writes `dir=` and
# `source=` (artifact or golden) to $GITHUB_OUTPUT. Exit 2 when neither
# exists. It never executes what it downloads and copies only regular
# *.json files; an artifact with a link in it is refused.
#
# GitHub Actions (needs `gh`, GH_TOKEN and `actions: read`): the artifact
# $MEMGATE_ARTIFACT (default memgate-summaries) of the last successful
# `push` run of workflow $MEMGATE_WORKFLOW (default: this one) on branch
# $MEMGATE_BASE_BRANCH (default: the pull request's base, $GITHUB_BASE_REF).
#
# GitLab CI (needs curl and unzip; CI_JOB_TOKEN): the artifacts of job
# $MEMGATE_JOB (default memory-gate) in the latest successful pipeline
# of $MEMGATE_BASE_BRANCH (default: the merge request's target branch, else
# the default branch), the summaries in its folder $MEMGATE_ARTIFACT_PATH
# (default memgate-summaries).
set -u

dest=${1:?usage: baseline-from-base.sh DEST GOLDEN}
golden=${2:?usage: baseline-from-base.sh DEST GOLDEN}

say() { printf 'memgate baseline: %s\n' "$*" >&2; }

output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'dir=%s\nsource=%s\n' "$1" "$2" >> "$GITHUB_OUTPUT"
  fi
  printf '%s\n' "$1"
}

fallback() {
  say "$1; using the committed goldens in $golden"
  if [ ! -d "$golden" ]; then
    say "no golden folder $golden either: nothing to compare against"
    exit 2
  fi
  output "$golden" golden
  exit 0
}

if [ -e "$dest" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
  say "$dest is not empty: refusing to write the summaries over it"
  exit 2
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

if [ "${GITHUB_ACTIONS:-}" = true ]; then
  base=${MEMGATE_BASE_BRANCH:-${GITHUB_BASE_REF:-}}
  base=${base#refs/heads/}
  [ -n "$base" ] || fallback "no base branch (set MEMGATE_BASE_BRANCH)"
  workflow=${MEMGATE_WORKFLOW:-${GITHUB_WORKFLOW:-}}
  artifact=${MEMGATE_ARTIFACT:-memgate-summaries}
  run=$(gh run list --repo "${GITHUB_REPOSITORY:-}" --workflow "$workflow" --branch "$base" \
    --event push --status success --limit 1 --json databaseId --jq '.[0].databaseId // empty') \
    || fallback "gh could not list the runs of $base"
  [ -n "$run" ] || fallback "no successful run of $workflow on $base"
  gh run download "$run" --repo "${GITHUB_REPOSITORY:-}" --name "$artifact" --dir "$tmp/got" \
    || fallback "run $run of $base has no artifact $artifact (expired?)"
  found="$tmp/got"
  from="artifact $artifact of run $run on $base"
elif [ "${GITLAB_CI:-}" = true ]; then
  base=${MEMGATE_BASE_BRANCH:-${CI_MERGE_REQUEST_TARGET_BRANCH_NAME:-${CI_DEFAULT_BRANCH:-}}}
  [ -n "$base" ] || fallback "no base branch (set MEMGATE_BASE_BRANCH)"
  job=${MEMGATE_JOB:-memory-gate}
  # The ref goes in the URL's path: its `/` and `%` escaped.
  ref=$(printf '%s' "$base" | sed -e 's/%/%25/g' -e 's|/|%2F|g')
  url="${CI_API_V4_URL:-}/projects/${CI_PROJECT_ID:-}/jobs/artifacts/$ref/download?job=$job"
  curl --fail --silent --show-error --location --header "JOB-TOKEN: ${CI_JOB_TOKEN:-}" \
    -o "$tmp/artifacts.zip" "$url" \
    || fallback "no artifacts of job $job in the last successful pipeline of $base"
  unzip -q "$tmp/artifacts.zip" -d "$tmp/got" || fallback "the artifacts of $job are no zip"
  found="$tmp/got/${MEMGATE_ARTIFACT_PATH:-memgate-summaries}"
  from="job $job of the last successful pipeline of $base"
else
  fallback "neither GitHub Actions nor GitLab CI"
fi

[ -d "$found" ] || fallback "the $from holds no summaries folder"
if [ -n "$(find "$found" -type l | head -n 1)" ]; then
  fallback "the $from holds a symbolic link: refused"
fi
count=$(find "$found" -maxdepth 1 -type f -name '*.json' | wc -l)
[ "$count" -gt 0 ] || fallback "the $from holds no summary (*.json)"
mkdir -p "$dest" || exit 2
find "$found" -maxdepth 1 -type f -name '*.json' -exec cp -- {} "$dest/" \;
say "$count summaries from the $from"
output "$dest" artifact
