#!/usr/bin/env bash
# Step "gate": fail the job when regressions were found and fail-on-regression is set. It runs
# last, so the comment, the status and the artifact are in place before the job goes red.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

count="${INPUT_REGRESSIONS:-0}"
if [ "${count:-0}" -gt 0 ] 2> /dev/null && pg_true "${INPUT_FAIL_ON_REGRESSION:-true}"; then
  pg_error "$count performance regression(s): see the pull-request comment or the job summary"
  exit 1
fi
echo "perfgate: ${count:-0} regression(s)"
