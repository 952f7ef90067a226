#!/usr/bin/env bash
# Step "install": perfgate in its own virtual environment that still sees the runner's Python
# packages, so the runner's torch (CUDA build and all) is the one benchmarks use. perfgate is
# installed without its `torch` extra and with the runner's torch version as a constraint, so
# pip can never swap torch for another build.
#
# INPUT_PYTHON         the runner's Python (default python3)
# INPUT_PERFGATE_SPEC  what to pip-install (default: this action's own checkout)
# pip reads its own settings from the environment (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL,
# PIP_NO_INDEX, ...): set them in the job's `env:` to install from a mirror.
# Outputs: perfgate (the executable), python (the environment's interpreter).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$here/lib.sh"

python="${INPUT_PYTHON:-python3}"
spec="${INPUT_PERFGATE_SPEC:-$(cd "$here/../.." && pwd)}"
venv="${RUNNER_TEMP:-/tmp}/perfgate-venv"

"$python" -m venv --clear "$venv"
runner_sites="$("$python" -c 'import sysconfig; p = sysconfig.get_paths(); print("\n".join(dict.fromkeys([p["purelib"], p["platlib"]])))')"
venv_site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# `import site; site.addsitedir(...)` (not a bare path) so .pth files in there are honoured too.
while IFS= read -r dir; do
  printf 'import site; site.addsitedir(%s)\n' "$("$python" -c 'import sys; print(repr(sys.argv[1]))' "$dir")"
done <<< "$runner_sites" > "$venv_site/zz-runner-python.pth"

constraints="$venv/constraints.txt"
: > "$constraints"
if torch_version="$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"; then
  printf 'torch==%s\n' "$torch_version" > "$constraints"
  echo "keeping the runner's torch $torch_version"
elif [ -z "${INPUT_RESULTS:-}" ]; then  # reporting on existing results needs no torch
  pg_warning "torch is not importable with $python: install it on the runner before benchmarks run"
fi

"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --constraint "$constraints" "$spec"
"$venv/bin/perfgate" --version
pg_output perfgate "$venv/bin/perfgate"
pg_output python "$venv/bin/python"
