#!/usr/bin/env bash
# Step "run": run the benchmarks into the output folder (results.json, traces/, pr.json).
# Nothing is stored here; the upload step does that. With INPUT_RESULTS (an existing results
# document, e.g. a fork's artifact) nothing runs: that document is reported on instead.
#
# INPUT_BENCHMARKS, INPUT_DEVICE, INPUT_ROUNDS, INPUT_MAX_TIME, INPUT_FILTER, INPUT_RESULTS
# Outputs: results (the results document), dir (the folder the artifact step uploads).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

out="$(pg_out_dir)"
mkdir -p "$out"
pg_output dir "$out"

if [ -n "${INPUT_RESULTS:-}" ]; then
  if [ ! -f "$INPUT_RESULTS" ]; then
    pg_error "results: $INPUT_RESULTS does not exist"
    exit 2
  fi
  echo "reporting on $INPUT_RESULTS (not running benchmarks)"
  pg_output results "$INPUT_RESULTS"
  exit 0
fi

args=(run "${INPUT_BENCHMARKS:-benchmarks}" --no-store --out "$out/results.json"
  --trace-dir "$out/traces" --device "${INPUT_DEVICE:-auto}" --rounds "${INPUT_ROUNDS:-1}")
if [ -n "${INPUT_MAX_TIME:-}" ]; then args+=(--max-time "$INPUT_MAX_TIME"); fi
if [ -n "${INPUT_FILTER:-}" ]; then args+=(-k "$INPUT_FILTER"); fi
"$PERFGATE_BIN" "${args[@]}"

# The PR this run was for, as plain data for the fork-safe report workflow (which re-checks it).
pr="$(pg_event pull_request number)"
if [ -n "$pr" ]; then
  "$PERFGATE_PY" - "$pr" "$(pg_event pull_request head sha)" "$out/pr.json" <<'PY'
import json, sys
json.dump({"pr": int(sys.argv[1]), "head_sha": sys.argv[2]}, open(sys.argv[3], "w"))
PY
fi
pg_output results "$out/results.json"
