#!/usr/bin/env bash
# Step "comment": the PR comment (one, edited in place), the commit status and the check run,
# plus the job summary and warning annotations. With no baseline (compare found nothing in the
# store for the base), a one-line comment saying what to do, a neutral check run and a status
# that does not fail. Skipped when nothing was compared for any other reason.
#
# INPUT_COMPARISON, INPUT_NO_BASELINE, INPUT_BASE, INPUT_BASE_BRANCH, INPUT_ALTERNATE,
# INPUT_GITHUB_TOKEN, INPUT_COMMENT_MODE, INPUT_PR, INPUT_HEAD_SHA, INPUT_SERVER (the dashboard link)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

if pg_true "${INPUT_NO_BASELINE:-false}"; then
  # Values from the compare step's outputs, which it checked (a commit is hex, a branch one line).
  args=(comment --no-baseline --base-branch "${INPUT_BASE_BRANCH:-main}")
  if [ -n "${INPUT_BASE:-}" ]; then args+=(--base "$INPUT_BASE"); fi
  if pg_true "${INPUT_ALTERNATE:-false}"; then args+=(--alternate); fi
elif [ -n "${INPUT_COMPARISON:-}" ]; then
  args=(comment "$INPUT_COMPARISON")
else
  echo "nothing was compared; no comment"
  exit 0
fi
args+=(--mode "${INPUT_COMMENT_MODE:-always}")
if [ -n "${INPUT_PR:-}" ]; then args+=(--pr "$INPUT_PR"); fi
if [ -n "${INPUT_HEAD_SHA:-}" ]; then args+=(--sha "$INPUT_HEAD_SHA"); fi
if [ -n "${INPUT_SERVER:-}" ]; then export PERFGATE_SERVER="$INPUT_SERVER"; fi
GITHUB_TOKEN="${INPUT_GITHUB_TOKEN:-${GITHUB_TOKEN:-}}" "$PERFGATE_BIN" "${args[@]}"
