#!/usr/bin/env bash
# Step "upload": store the results document in the database (INPUT_DB) or on a perfgate server
# (INPUT_SERVER + INPUT_SERVER_TOKEN). INPUT_UPLOAD=false skips it (e.g. a fork's results, which
# must never enter the store's history).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

if ! pg_true "${INPUT_UPLOAD:-true}"; then
  echo "not storing $INPUT_RESULTS_FILE (upload: false)"
  exit 0
fi
pg_store_env
results="${INPUT_RESULTS_FILE:?no results document}"
if [ -d "$results" ]; then
  # The head's rounds of an alternating run (the base's rounds are not stored: main's own jobs
  # build its history).
  files=("$results"/*.json)
  "$PERFGATE_BIN" upload "${files[@]}"
else
  "$PERFGATE_BIN" upload "$results"
fi
