#!/usr/bin/env bash
# Step "compare": the results against the base, into comparison.json.
#
# The base is INPUT_BASE when given; else, on a pull request, the merge-base of the PR's head
# and its base branch (computed with git, deepening a shallow clone as needed); on a push, the
# previous tip. A base commit without runs in the store falls back (with a warning in the
# comment) to the nearest earlier run of the base branch; an empty store means nothing to
# compare yet, which is a notice, not a failure.
#
# INPUT_RESULTS_FILE, INPUT_BASE, INPUT_BASE_BRANCH, INPUT_HEAD_SHA, INPUT_PR, INPUT_DB,
# INPUT_SERVER, INPUT_SERVER_TOKEN, INPUT_THRESHOLD
# Outputs: comparison (path, empty when nothing was compared), regressions (count), base, pr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

results="${INPUT_RESULTS_FILE:?no results document}"
out="$(pg_out_dir)"
mkdir -p "$out"
comparison="$out/comparison.json"
pg_store_env

nothing() {
  pg_notice "$1"
  pg_output comparison ""
  pg_output regressions 0
  exit 0
}

# What the results document says about itself (data only).
doc_field() {
  "$PERFGATE_PY" - "$results" "$1" <<'PY'
import json, sys
run = json.load(open(sys.argv[1], encoding="utf-8")).get("run", {})
value = run.get(sys.argv[2])
print("" if value is None else value)
PY
}

head_sha="${INPUT_HEAD_SHA:-$(pg_event pull_request head sha)}"
head_sha="${head_sha:-$(pg_event workflow_run head_sha)}"
head_sha="${head_sha:-${GITHUB_SHA:-}}"
measured="$(doc_field commit)"
if [ -n "${INPUT_HEAD_SHA:-}" ] && [ "${measured,,}" != "${INPUT_HEAD_SHA,,}" ]; then
  pg_error "the results are for commit ${measured:-?}, not ${INPUT_HEAD_SHA}: refusing to report them"
  exit 2
fi
head_sha="${measured:-$head_sha}"

pr="${INPUT_PR:-}"
if [ -z "$pr" ] && [ -n "${INPUT_RESULTS:-}" ] && [ -f "$(dirname "$INPUT_RESULTS")/pr.json" ]; then
  # A PR number shipped next to someone else's results is only a claim: `perfgate comment`
  # checks it against GitHub (the PR's head must be the measured commit) before using it.
  pr="$("$PERFGATE_PY" - "$(dirname "$INPUT_RESULTS")/pr.json" <<'PY'
import json, sys
value = json.load(open(sys.argv[1], encoding="utf-8")).get("pr")
print(value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else "")
PY
)"
fi
if [ -n "$pr" ] && ! [[ "$pr" =~ ^[1-9][0-9]{0,9}$ ]]; then
  pg_error "pr: '$pr' is not a pull request number"
  exit 2
fi
pg_output pr "$pr"

base_branch="${INPUT_BASE_BRANCH:-$(pg_event pull_request base ref)}"
base_branch="${base_branch:-${GITHUB_BASE_REF:-main}}"

merge_base() {  # the PR's merge-base with origin/$base_branch, fetching what is missing
  git rev-parse --git-dir > /dev/null 2>&1 || return 1
  git fetch --no-tags --quiet origin "+refs/heads/$base_branch:refs/remotes/origin/$base_branch" || true
  if ! git cat-file -e "$head_sha^{commit}" 2> /dev/null; then
    git fetch --no-tags --quiet origin "$head_sha" ||
      { [ -n "$pr" ] && git fetch --no-tags --quiet origin "+refs/pull/$pr/head"; } || true
  fi
  local found depth
  for depth in 50 500 5000; do
    if found="$(git merge-base "origin/$base_branch" "$head_sha" 2> /dev/null)"; then
      printf '%s\n' "$found"
      return 0
    fi
    [ "$(git rev-parse --is-shallow-repository)" = true ] || return 1
    git fetch --no-tags --quiet --deepen="$depth" origin "$base_branch" || return 1
  done
  git fetch --no-tags --quiet --unshallow origin || return 1
  git merge-base "origin/$base_branch" "$head_sha"
}

base="${INPUT_BASE:-}"
if [ -z "$base" ]; then
  if [ -n "$pr" ] || [ -n "$(pg_event pull_request number)" ]; then
    if ! base="$(merge_base)"; then
      base="$(pg_event pull_request base sha)"
      [ -n "$base" ] || nothing "cannot compute the merge-base with $base_branch (check out with fetch-depth: 0); nothing compared"
      pg_warning "cannot compute the merge-base with $base_branch: comparing with the base branch's tip $base"
    fi
  else
    base="$(pg_event before)"
    if [ -z "$base" ] || [[ "$base" =~ ^0+$ ]]; then
      nothing "no base to compare with (not a pull request, no previous commit)"
    fi
  fi
fi
pg_output base "$base"
echo "comparing $results (head ${head_sha:0:12}) with base ${base:0:12} (branch $base_branch)"

if [ -n "${INPUT_SERVER:-}" ] && [ -z "${INPUT_DB:-}" ]; then
  # The server compares with its store's history; the head was uploaded by the previous step.
  project="$(doc_field project)"
  status="$(curl --silent --show-error --location --output "$comparison" --write-out '%{http_code}' \
    --get "${INPUT_SERVER%/}/api/v1/compare" \
    --data-urlencode "project=$project" --data-urlencode "base=$base" \
    --data-urlencode "head=$head_sha" \
    -H "Authorization: Bearer ${INPUT_SERVER_TOKEN:-}" || echo 000)"
  case "$status" in
    200) ;;
    404) nothing "the server has no runs for base ${base:0:12} yet; nothing compared" ;;
    *)
      pg_error "perfgate server answered $status for the comparison: $(head -c 300 "$comparison" 2> /dev/null)"
      exit 3
      ;;
  esac
else
  args=(compare "$base" "$results" --format json --out "$comparison" --base-branch "$base_branch")
  if [ -n "${INPUT_THRESHOLD:-}" ]; then args+=(--threshold "$INPUT_THRESHOLD"); fi
  set +e
  "$PERFGATE_BIN" "${args[@]}" 2> "$out/compare.err"
  code=$?
  set -e
  cat "$out/compare.err" >&2
  # Exit 2 naming the store as empty for this project or base is "no baseline yet".
  if [ "$code" -eq 2 ] && grep -Eq "neither a results file nor a commit or branch|store has no runs yet|is not in the store|has no readable runs" "$out/compare.err"; then
    nothing "the store has no runs of ${base:0:12} or of $base_branch yet; nothing compared (main-branch runs build the baseline)"
  fi
  [ "$code" -eq 0 ] || exit "$code"
fi

regressions="$("$PERFGATE_PY" - "$comparison" <<'PY'
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
common = data.get("common_factor") or {}
print(data["summary"]["regression"] + (common.get("verdict") == "regression"))
PY
)"
pg_output comparison "$comparison"
pg_output regressions "$regressions"
echo "$regressions regression(s); comparison in $comparison"
