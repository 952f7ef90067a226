"""Commit, branch, project and PR of a run: options, else GitHub Actions, else local git."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfgate.config import GitHubContext
from perfgate.errors import UsageError

_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")
_REMOTE = re.compile(r"[:/]([^/:]+)/([^/]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class GitInfo:
    commit: str
    branch: str | None
    project: str
    pr: int | None = None
    base_commit: str | None = None
    ci: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _PullRequest:
    number: int | None = None
    head_sha: str | None = None
    base_sha: str | None = None
    head_ref: str | None = None


def read_event(event_path: str | None) -> _PullRequest:
    """The pull request in a GitHub event payload (empty outside pull_request events)."""
    if not event_path:
        return _PullRequest()
    try:
        payload = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _PullRequest()
    pr = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pr, dict):
        return _PullRequest()
    head = _mapping(pr.get("head"))
    base = _mapping(pr.get("base"))
    number = pr.get("number")
    return _PullRequest(
        number=number if isinstance(number, int) and not isinstance(number, bool) else None,
        head_sha=head.get("sha") if isinstance(head.get("sha"), str) else None,
        base_sha=base.get("sha") if isinstance(base.get("sha"), str) else None,
        head_ref=head.get("ref") if isinstance(head.get("ref"), str) else None,
    )


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def project_from_remote(url: str | None) -> str | None:
    """'git@github.com:owner/name.git' or 'https://host/owner/name' -> 'owner/name'."""
    if not url:
        return None
    match = _REMOTE.search(url.strip())
    return f"{match.group(1)}/{match.group(2)}" if match else None


def _check_commit(value: str, source: str) -> str:
    if not _HEX.match(value):
        raise UsageError(f"{source}: {value!r} is not a commit id (7 to 64 hex digits)")
    return value.lower()


def resolve_git(
    *,
    commit: str | None = None,
    branch: str | None = None,
    project: str | None = None,
    pr: int | None = None,
    base_commit: str | None = None,
    github: GitHubContext | None = None,
    cwd: Path | None = None,
) -> GitInfo:
    """Fill each field from the first source that has it: the arguments, GitHub, local git.

    On pull_request events GITHUB_SHA is the merge commit GitHub made, so the PR's head sha from
    the event payload is preferred, and the PR's branch over GITHUB_REF_NAME ('123/merge').
    """
    github = github or GitHubContext()
    event = read_event(github.event_path)
    where = cwd or Path.cwd()

    def local(*args: str) -> str | None:
        return _git(where, *args)

    found_commit = commit or event.head_sha or github.sha or local("rev-parse", "HEAD")
    if not found_commit:
        raise UsageError(
            "no commit to record: not a git checkout and no GITHUB_SHA; pass --commit SHA"
        )
    source = "--commit" if commit else "commit"
    found_branch = branch or event.head_ref or github.ref_name
    if found_branch is None:
        local_branch = local("rev-parse", "--abbrev-ref", "HEAD")
        found_branch = local_branch if local_branch != "HEAD" else None  # detached head
    found_project = (
        project or github.repository or project_from_remote(local("remote", "get-url", "origin"))
    )
    if not found_project:
        toplevel = local("rev-parse", "--show-toplevel")
        found_project = Path(toplevel).name if toplevel else where.resolve().name
    found_pr = pr if pr is not None else event.number
    if found_pr is not None and found_pr <= 0:
        raise UsageError(f"--pr: {found_pr} is not a pull request number")
    found_base = base_commit or event.base_sha
    ci: dict[str, Any] = {}
    if github.sha or github.repository:
        ci = {"provider": "github", **github.extra}
        if github.run_url:
            ci["run_url"] = github.run_url
        if github.sha:
            ci["github_sha"] = github.sha
    return GitInfo(
        commit=_check_commit(found_commit, source),
        branch=found_branch,
        project=found_project,
        pr=found_pr,
        base_commit=_check_commit(found_base, "--base-commit") if found_base else None,
        ci=ci,
    )
