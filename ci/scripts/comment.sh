#!/usr/bin/env bash
# Step "comment": the PR comment (one, edited in place), the commit status and the check run,
# plus the job summary and warning annotations. Skipped when nothing was compared.
#
# INPUT_COMPARISON, INPUT_GITHUB_TOKEN, INPUT_COMMENT_MODE, INPUT_PR, INPUT_HEAD_SHA,
# INPUT_SERVER (the dashboard link)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

if [ -z "${INPUT_COMPARISON:-}" ]; then
  echo "nothing was compared; no comment"
  exit 0
fi
args=(comment "$INPUT_COMPARISON" --mode "${INPUT_COMMENT_MODE:-always}")
if [ -n "${INPUT_PR:-}" ]; then args+=(--pr "$INPUT_PR"); fi
if [ -n "${INPUT_HEAD_SHA:-}" ]; then args+=(--sha "$INPUT_HEAD_SHA"); fi
if [ -n "${INPUT_SERVER:-}" ]; then export PERFGATE_SERVER="$INPUT_SERVER"; fi
GITHUB_TOKEN="${INPUT_GITHUB_TOKEN:-${GITHUB_TOKEN:-}}" "$PERFGATE_BIN" "${args[@]}"
