#!/usr/bin/env bash
# Step "compare": the results against the base, into comparison.json, and the step's outputs
# (comparison, regressions, gate, base, base-branch, pr, no-baseline). The logic is
# `perfgate ci compare` (service/perfgate/ci/compare_step.py): it reads the INPUT_* variables
# that action.yml sets and writes $GITHUB_OUTPUT; `perfgate ci compare --help` describes it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"
exec "$PERFGATE_PY" -m perfgate ci compare
