"""pr.json: the pull request a benchmark run was for, as plain data beside its results.

The run step writes it; the fork-safe report reads it back from a fork's artifact, where it is
only a claim: `perfgate comment` checks it against GitHub (the PR's head must be the measured
commit) before using it.
"""

from __future__ import annotations

import json
from pathlib import Path

from perfgate.errors import InputError


def write_pr_claim(path: Path, *, pr: int, head_sha: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pr": pr, "head_sha": head_sha}), encoding="utf-8")


def read_pr_claim(path: Path) -> str:
    """The PR number the file claims: "" unless a positive integer."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise InputError(f"{path}: not a JSON object with a pull request number") from None
    value = data.get("pr") if isinstance(data, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return str(value)
    return ""
