#!/usr/bin/env bash
# Step "compare": the results against the base, into comparison.json.
#
# The base is INPUT_BASE when given; else, on a pull request, the merge-base of the PR's head
# and its base branch (computed with git, deepening a shallow clone as needed); on a push, the
# previous tip. A base commit without runs in the store falls back (with a warning in the
# comment) to the nearest earlier run of the base branch. When nothing can stand in for the base
# (`perfgate compare` exits 4, or a server answers 404: a first PR, an empty store) there is no
# baseline yet: not a failure, and the report step says so on the PR (output no-baseline=true).
# It is told by the exit code alone, never by the wording of a message.
#
# With INPUT_BASE_RESULTS (a folder of base rounds the run step measured alternately with the
# head's, `alternate: true`), the two folders are compared directly (with the store's history when
# there is a database) and no merge-base is needed.
#
# In the fork-safe report the results (and a `base` folder beside them) are a fork's artifact:
# every value read from them is checked (a commit id is hex, a PR number digits) before it is
# printed, written to $GITHUB_OUTPUT or passed on, and refused with exit 2 otherwise.
#
# The project's policy (pyproject.toml's [tool.perfgate] or perfgate.toml in this checkout) is
# read by `perfgate compare` itself: its threshold and alpha unless INPUT_THRESHOLD is given, each
# benchmark's threshold, the ignored and informational benchmarks, and fail_on, which decides the
# gate (exit 1 of --fail-on-regression, never a message). A perfgate server compares with the
# policy's threshold and alpha (when it sets them); the rest of the policy stays local to compare.
#
# INPUT_RESULTS_FILE, INPUT_BASE_RESULTS, INPUT_BASE, INPUT_BASE_BRANCH, INPUT_HEAD_SHA, INPUT_PR,
# INPUT_DB, INPUT_SERVER, INPUT_SERVER_TOKEN, INPUT_THRESHOLD
# Outputs: comparison (path, empty when nothing was compared), regressions (count, informational
# benchmarks included), gate (fail or pass: what the gate step acts on), base, base-branch, pr,
# no-baseline (true when the store had nothing for the base).
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
  pg_output gate pass
  exit 0
}

# perfgate's exit code for "the store has nothing for the base side" (docs/architecture.md §7, errors.py).
EXIT_NO_BASELINE=4
no_baseline() {
  pg_output no-baseline true
  nothing "no baseline: the store has no runs of ${base:0:12} or of $base_branch before it; nothing compared (runs of $base_branch build the baseline, or use alternate: true)"
}

# What a results document (or the first of a folder of rounds) says about itself, read as data:
# doc_field FIELD [PATH]
doc_field() {
  "$PERFGATE_PY" - "${2:-$results}" "$1" <<'PY'
import json, sys
from pathlib import Path
path = Path(sys.argv[1])
if path.is_dir():
    path = min(path.glob("*.json"))
run = json.load(open(path, encoding="utf-8")).get("run", {})
value = run.get(sys.argv[2])
print("" if value is None else value)
PY
}

if [ -n "${INPUT_HEAD_SHA:-}" ]; then pg_require_commit head-sha "$INPUT_HEAD_SHA"; fi
head_sha="${INPUT_HEAD_SHA:-$(pg_event pull_request head sha)}"
head_sha="${head_sha:-$(pg_event workflow_run head_sha)}"
head_sha="${head_sha:-${GITHUB_SHA:-}}"
measured="$(doc_field commit)"
if [ -n "$measured" ]; then pg_require_commit "results run.commit" "$measured"; fi
if [ -n "${INPUT_HEAD_SHA:-}" ] && [ "${measured,,}" != "${INPUT_HEAD_SHA,,}" ]; then
  pg_error "the results are for commit ${measured:-?}, not ${INPUT_HEAD_SHA}: refusing to report them"
  exit 2
fi
head_sha="${measured:-$head_sha}"
if [ -n "$head_sha" ]; then pg_require_commit "head commit" "$head_sha"; fi

pr="${INPUT_PR:-}"
if [ -z "$pr" ] && [ -n "${INPUT_RESULTS:-}" ] && [ -f "$(dirname "$results")/pr.json" ]; then
  # A PR number shipped next to someone else's results is only a claim: `perfgate comment`
  # checks it against GitHub (the PR's head must be the measured commit) before using it.
  pr="$("$PERFGATE_PY" - "$(dirname "$results")/pr.json" <<'PY'
import json, sys
value = json.load(open(sys.argv[1], encoding="utf-8")).get("pr")
print(value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else "")
PY
)"
fi
if [ -n "$pr" ]; then pg_require_pr pr "$pr"; fi
pg_output pr "$pr"

base_branch="${INPUT_BASE_BRANCH:-$(pg_event pull_request base ref)}"
base_branch="${base_branch:-${GITHUB_BASE_REF:-main}}"
pg_require_name base-branch "$base_branch"
pg_output base-branch "$base_branch"

base_results="${INPUT_BASE_RESULTS:-}"
base="${INPUT_BASE:-}"
if [ -n "$base" ]; then pg_require_name base "$base"; fi
if [ -n "$base_results" ]; then
  # Alternating mode: the run step measured the base itself, in rounds alternating with the head's
  # (or, in the fork-safe report, the fork's artifact says it did).
  base="$(doc_field commit "$base_results")"
  pg_require_commit "base results run.commit" "$base"
elif [ -z "$base" ]; then
  if [ -n "$pr" ] || [ -n "$(pg_event pull_request number)" ]; then
    if ! base="$(pg_merge_base "$head_sha" "$base_branch" "$pr")"; then
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

if [ -z "$base_results" ] && [ -n "${INPUT_SERVER:-}" ] && [ -z "${INPUT_DB:-}" ]; then
  # The server compares with its store's history; the head was uploaded by the previous step.
  project="$(doc_field project)"
  # The policy's (or the input's) threshold and alpha; perfgate's defaults are the server's too.
  config=(config --json)
  if [ -n "${INPUT_THRESHOLD:-}" ]; then config+=(--threshold "$INPUT_THRESHOLD"); fi
  effective="$("$PERFGATE_BIN" "${config[@]}")" # a bad policy stops here (exit 2)
  settings=()
  while IFS= read -r line; do settings+=(--data-urlencode "$line"); done < <(
    "$PERFGATE_PY" - "$effective" <<'PY'
import json, sys
found = json.loads(sys.argv[1])["settings"]
for name in ("threshold", "alpha"):
    if found[name]["source"] != "default":
        print(f"{name}={found[name]['value']}")
PY
  )
  token="${INPUT_SERVER_TOKEN:-}"
  if [[ "$token" == *[[:cntrl:]]* ]]; then
    pg_error "server-token: holds a line break or control character (check the secret)"
    exit 2
  fi
  # The header goes in on stdin: curl's argv is visible to every process on the runner.
  status="$(printf 'Authorization: Bearer %s\n' "$token" |
    curl --silent --show-error --location --output "$comparison" --write-out '%{http_code}' \
      --get "${INPUT_SERVER%/}/api/v1/compare" \
      --data-urlencode "project=$project" --data-urlencode "base=$base" \
      --data-urlencode "head=$head_sha" "${settings[@]}" --header @- || echo 000)"
  case "$status" in
    200) ;;
    404) no_baseline ;; # the server's NoBaselineError (or an unknown project): nothing to compare
    *)
      pg_error "perfgate server answered $status for the comparison: $(head -c 300 "$comparison" 2> /dev/null)"
      exit 3
      ;;
  esac
else
  # Both sides as folders of rounds when the run step alternated; the store (if any) adds history.
  args=(compare "${base_results:-$base}" "$results" --format json --out "$comparison"
    --base-branch "$base_branch" --fail-on-regression)
  if [ -n "${INPUT_THRESHOLD:-}" ]; then args+=(--threshold "$INPUT_THRESHOLD"); fi
  set +e
  "$PERFGATE_BIN" "${args[@]}" 2> "$out/compare.err"
  code=$?
  set -e
  cat "$out/compare.err" >&2
  if [ "$code" -eq "$EXIT_NO_BASELINE" ]; then no_baseline; fi
  # Exit 1: compared, and the gate failed (the report and the gate step come later).
  if [ "$code" -eq 1 ]; then gate=fail; elif [ "$code" -eq 0 ]; then gate=pass; else exit "$code"; fi
fi

regressions="$("$PERFGATE_PY" - "$comparison" <<'PY'
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
common = data.get("common_factor") or {}
print(data["summary"]["regression"] + (common.get("verdict") == "regression"))
PY
)"
# Through a server the gate is its regressions (the policy's gate needs a local compare).
if [ -z "${gate:-}" ]; then gate="$([ "$regressions" -gt 0 ] && echo fail || echo pass)"; fi
pg_output comparison "$comparison"
pg_output regressions "$regressions"
pg_output gate "$gate"
echo "$regressions regression(s); comparison in $comparison"
