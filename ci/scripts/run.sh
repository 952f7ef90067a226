#!/usr/bin/env bash
# Step "run": run the benchmarks into the output folder (results.json, traces/, pr.json).
# Nothing is stored here; the upload step does that. With INPUT_RESULTS (an existing results
# document, or a folder of head rounds with a `base` folder beside it, e.g. a fork's artifact)
# nothing runs: that is reported on instead.
#
# With INPUT_ALTERNATE=true on a pull request, the PR's merge-base (or INPUT_BASE) is checked out
# in a worktree and measured too, in rounds that alternate with the head's (base, head, base, ...,
# each round a fresh `perfgate run`): whatever else the runner does then falls on both sides alike,
# and the comparison does not depend on a base measured on another machine at another time. Each
# side imports its own checkout first (PYTHONPATH); native extensions are not rebuilt per side.
#
# INPUT_BENCHMARKS, INPUT_DEVICE, INPUT_ROUNDS (each empty: the project's policy, else benchmarks,
# auto and 3), INPUT_MAX_TIME, INPUT_FILTER, INPUT_RESULTS, INPUT_ALTERNATE, INPUT_BASE,
# INPUT_BASE_BRANCH
# Outputs: results (the results document, or the folder of head rounds when alternating),
# base-results (the folder of base rounds, only when alternating), dir (what the artifact keeps),
# alternate (true when this job tried to measure a PR's base itself, measured or not).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

out="$(pg_out_dir)"
mkdir -p "$out"
pg_output dir "$out"

if [ -n "${INPUT_RESULTS:-}" ]; then
  given="$INPUT_RESULTS"
  # A whole artifact folder (the fork-safe pair's): its head/ rounds, else its results.json.
  if [ -d "$given/head" ]; then
    given="$given/head"
  elif [ -f "$given/results.json" ]; then
    given="$given/results.json"
  fi
  if [ ! -e "$given" ]; then
    pg_error "results: $INPUT_RESULTS does not exist"
    exit 2
  fi
  echo "reporting on $given (not running benchmarks)"
  pg_output results "$given"
  beside="$(dirname "$given")/base"
  if [ -d "$given" ]; then
    # Rounds of an alternating run: the job that measured tried the base too.
    pg_output alternate true
    if [ -d "$beside" ]; then pg_output base-results "$beside"; fi
  fi
  exit 0
fi

# An input left empty falls to the project's policy (pyproject.toml's [tool.perfgate] or
# perfgate.toml), then to perfgate's default, resolved as `perfgate run` would (but 3 rounds
# unless something set them); both sides get the values explicitly (the base's checkout may hold
# another policy).
resolved="$("$PERFGATE_PY" -m perfgate ci run-settings)"
{
  IFS= read -r benchmarks
  IFS= read -r device
  IFS= read -r rounds
} <<< "$resolved"
common=(--no-store --device "$device")
if [ -n "${INPUT_MAX_TIME:-}" ]; then common+=(--max-time "$INPUT_MAX_TIME"); fi
if [ -n "${INPUT_FILTER:-}" ]; then common+=(-k "$INPUT_FILTER"); fi

pr="$(pg_event pull_request number)"
base=""
if pg_true "${INPUT_ALTERNATE:-false}"; then
  if [ -n "$pr" ] || [ -n "${INPUT_BASE:-}" ]; then pg_output alternate true; fi
  base_branch="${INPUT_BASE_BRANCH:-$(pg_event pull_request base ref)}"
  base_branch="${base_branch:-${GITHUB_BASE_REF:-main}}"
  base="${INPUT_BASE:-}"
  if [ -z "$base" ] && [ -n "$pr" ]; then
    base="$(pg_merge_base "$(pg_event pull_request head sha)" "$base_branch" "$pr")" || base=""
  fi
  if [ -z "$base" ] && [ -z "$pr" ] && [ -z "${INPUT_BASE:-}" ]; then
    # A push (main's history runs): alternating is for pull requests, where it is the default.
    echo "alternate: not a pull request and no base given; measuring the head only"
  elif [ -z "$base" ]; then
    pg_warning "alternate: no base commit to measure (no merge-base with $base_branch; check out with fetch-depth: 0); measuring the head only"
  elif ! base="$(git rev-parse --verify --quiet "$base^{commit}")"; then
    pg_error "base: ${INPUT_BASE:-merge-base} is not a commit in this checkout"
    exit 2
  elif [ "${benchmarks#/}" = "$benchmarks" ] && ! git cat-file -e "$base:${benchmarks%/}" 2> /dev/null; then
    # The PR that adds the benchmarks: its base has nothing to measure.
    pg_warning "alternate: the base ${base:0:12} has no $benchmarks; measuring the head only"
    base=""
  fi
fi

if [ -z "$base" ]; then
  "$PERFGATE_BIN" run "$benchmarks" "${common[@]}" --rounds "$rounds" --out "$out/results.json" \
    --trace-dir "$out/traces"
  results="$out/results.json"
else
  workspace="$(pwd)"
  tree="$out/base-src"
  rm -rf "$tree" "$out/base" "$out/head"
  git worktree prune
  git worktree add --detach --quiet "$tree" "$base"
  trap 'git -C "$workspace" worktree remove --force "$tree" > /dev/null 2>&1 || true' EXIT
  case "$benchmarks" in
    /*) base_benchmarks="$benchmarks" ;;
    *) base_benchmarks="$tree/$benchmarks" ;;
  esac
  # Python puts PYTHONPATH before site-packages and editable installs, so each side imports the
  # project from its own checkout (a src/ layout included).
  side_path() { printf '%s:%s%s' "$1/src" "$1" "${PYTHONPATH:+:$PYTHONPATH}"; }
  echo "alternating $rounds round(s) a side: base ${base:0:12} ($base_branch), head $(git rev-parse --short=12 HEAD)"
  for ((round = 1; round <= rounds; round++)); do
    # One profile a side (the last round) is enough for attribution and saves time.
    profile=(--no-profile)
    if [ "$round" -eq "$rounds" ]; then profile=(); fi
    echo "== round $round/$rounds: base"
    # The event describes the head: the base's rounds must not claim its PR or commit.
    (cd "$tree" && PYTHONPATH="$(side_path "$tree")" GITHUB_EVENT_PATH="" "$PERFGATE_BIN" run \
      "$base_benchmarks" "${common[@]}" "${profile[@]}" --rounds 1 --commit "$base" \
      --branch "$base_branch" --out "$out/base/round-$round.json")
    echo "== round $round/$rounds: head"
    PYTHONPATH="$(side_path "$workspace")" "$PERFGATE_BIN" run "$benchmarks" "${common[@]}" \
      "${profile[@]}" --rounds 1 --out "$out/head/round-$round.json" --trace-dir "$out/traces"
  done
  results="$out/head"
  pg_output base-results "$out/base"
fi

# The PR this run was for, as plain data for the fork-safe report workflow (which re-checks it).
if [ -n "$pr" ]; then
  "$PERFGATE_PY" -m perfgate ci pr-claim "$pr" "$(pg_event pull_request head sha)" "$out/pr.json"
fi
pg_output results "$results"
