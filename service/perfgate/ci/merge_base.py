"""The merge-base of a pull request's head with its base branch, from a possibly shallow clone.

actions/checkout fetches one commit by default: the base branch is fetched, then the history is
deepened step by step (50, 500, 5000 commits, then all of it) until git finds the merge-base, so
a long-lived branch costs more fetching only when it needs it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DEEPEN_STEPS = (50, 500, 5000)


def _git(cwd: Path, *args: str, quiet_errors: bool = False) -> subprocess.CompletedProcess[str]:
    # Fetch failures are shown (a missing remote, no network); probes are silent.
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet_errors else None,
        text=True,
    )


def _fetch(cwd: Path, *refs: str, option: str = "") -> bool:
    options = [option] if option else []
    return _git(cwd, "fetch", "--no-tags", "--quiet", *options, "origin", *refs).returncode == 0


def _merge_base(cwd: Path, branch: str, head_sha: str) -> str | None:
    done = _git(cwd, "merge-base", f"origin/{branch}", head_sha, quiet_errors=True)
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else None


def merge_base(cwd: Path, *, head_sha: str, base_branch: str, pr: str = "") -> str | None:
    """The merge-base of `head_sha` with origin/`base_branch` (PR number `pr`, may be empty),
    fetching what a shallow checkout lacks; None when `cwd` is no checkout or there is none.

    The arguments must have been checked (a commit id, a branch name that is not an option).
    """
    if not head_sha or _git(cwd, "rev-parse", "--git-dir", quiet_errors=True).returncode != 0:
        return None
    _fetch(cwd, f"+refs/heads/{base_branch}:refs/remotes/origin/{base_branch}")
    missing = _git(cwd, "cat-file", "-e", f"{head_sha}^{{commit}}", quiet_errors=True).returncode
    if missing and not _fetch(cwd, head_sha) and pr:
        _fetch(cwd, f"+refs/pull/{pr}/head")
    for depth in DEEPEN_STEPS:
        found = _merge_base(cwd, base_branch, head_sha)
        if found:
            return found
        shallow = _git(cwd, "rev-parse", "--is-shallow-repository", quiet_errors=True)
        if shallow.stdout.strip() != "true":
            return None
        if not _fetch(cwd, base_branch, option=f"--deepen={depth}"):
            return None
    if not _fetch(cwd, option="--unshallow"):
        return None
    return _merge_base(cwd, base_branch, head_sha)
