#!/usr/bin/env bash
# Step "issues": after main's results are stored, sync the GitHub issues of the branch's change
# points (`perfgate changes --sync-issues`: one issue per benchmark slowdown, updated, closed when
# the step is dismissed or no longer detected; docs/github.md, Change-point issues). Runs on
# pushes, schedules and manual runs only (a pull request's results are not main's history), and
# reads the store, so it needs `db` or the embedded store (a `server`-only job skips it).
#
# INPUT_CHANGE_ISSUES, INPUT_UPLOAD, INPUT_DB, INPUT_SERVER, INPUT_SERVER_TOKEN,
# INPUT_GITHUB_TOKEN; the branch is GITHUB_REF_NAME.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

if ! pg_true "${INPUT_CHANGE_ISSUES:-false}"; then
  exit 0
fi
case "${GITHUB_EVENT_NAME:-}" in
  push | schedule | workflow_dispatch) ;;
  *)
    echo "change-point issues: only on main's own runs (push, schedule, workflow_dispatch), not on ${GITHUB_EVENT_NAME:-this event}"
    exit 0
    ;;
esac
if ! pg_true "${INPUT_UPLOAD:-true}"; then
  echo "change-point issues: nothing was stored (upload: false)"
  exit 0
fi
if [ -z "${INPUT_DB:-}" ] && [ -n "${INPUT_SERVER:-}" ]; then
  pg_notice "change-issues reads the store's change points: it needs db (a server-only job has no store to read), so no issues were synced"
  exit 0
fi
branch="${GITHUB_REF_NAME:?GITHUB_REF_NAME is not set}"
pg_require_name "branch" "$branch"
pg_store_env
GITHUB_TOKEN="${INPUT_GITHUB_TOKEN:-${GITHUB_TOKEN:-}}" \
  "$PERFGATE_BIN" changes --sync-issues --branch "$branch"
