#!/usr/bin/env bash
# Step "gate": fail the job when the gate failed and fail-on-regression is set. It runs last, so
# the comment, the status and the artifact are in place before the job goes red. INPUT_GATE (the
# compare step's fail or pass, by the project's policy: informational benchmarks never fail it,
# fail_on may add possible regressions and missing benchmarks) decides; without it, any of the
# INPUT_REGRESSIONS does.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

count="${INPUT_REGRESSIONS:-0}"
gate="${INPUT_GATE:-}"
if [ -z "$gate" ]; then
  gate=pass
  if [ "${count:-0}" -gt 0 ] 2> /dev/null; then gate=fail; fi
fi
if [ "$gate" = fail ] && pg_true "${INPUT_FAIL_ON_REGRESSION:-true}"; then
  if [ "${count:-0}" -gt 0 ] 2> /dev/null; then
    pg_error "$count performance regression(s): see the pull-request comment or the job summary"
  else
    pg_error "the gate failed on what the policy's fail_on adds (possible regressions, missing benchmarks): see the pull-request comment or the job summary"
  fi
  exit 1
fi
echo "perfgate: ${count:-0} regression(s), gate $gate"
