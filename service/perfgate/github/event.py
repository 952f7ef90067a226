"""The GitHub event payload ($GITHUB_EVENT_PATH): which pull request and commit a job is about.

`pull_request` (and `pull_request_target`) events name the PR and its head directly. A
`workflow_run` event (the privileged half of the fork-safe pair) names the head commit that the
untrusted workflow ran on; the PR number GitHub lists there is empty for forks, so a number from
elsewhere (an artifact) is only a claim that must be checked against the API.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import InputError

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
# A workflow run's page; anything else in the payload's `html_url` is not used as a link.
_RUN_URL = re.compile(r"https?://[^\s()<>\[\]]+/actions/runs/[0-9]+")


@dataclass(frozen=True)
class EventInfo:
    name: str | None = None
    pr: int | None = None
    head_sha: str | None = None
    base_sha: str | None = None
    base_ref: str | None = None
    # The owner of the head repository and its branch: how a fork's PR is found again.
    head_owner: str | None = None
    head_branch: str | None = None
    # workflow_run: the page of the run that measured (and uploaded the artifact), which is what
    # the report links to, not the report's own run.
    run_url: str | None = None

    @property
    def is_workflow_run(self) -> bool:
        return self.name == "workflow_run"


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _run_url(value: object) -> str | None:
    url = _text(value)
    return url if url and _RUN_URL.fullmatch(url) else None


def parse_event(payload: object, *, name: str | None = None) -> EventInfo:
    """What a payload says; `name` is GITHUB_EVENT_NAME (else guessed from the payload's shape)."""
    data = _mapping(payload)
    if name is None:
        name = (
            "workflow_run"
            if "workflow_run" in data
            else "pull_request"
            if "pull_request" in data
            else "push"
            if "after" in data
            else None
        )
    if name in PULL_REQUEST_EVENTS:
        pull = _mapping(data.get("pull_request"))
        head, base = _mapping(pull.get("head")), _mapping(pull.get("base"))
        return EventInfo(
            name=name,
            pr=_number(pull.get("number")) or _number(data.get("number")),
            head_sha=_text(head.get("sha")),
            base_sha=_text(base.get("sha")),
            base_ref=_text(base.get("ref")),
            head_owner=_text(_mapping(_mapping(head.get("repo")).get("owner")).get("login")),
            head_branch=_text(head.get("ref")),
        )
    if name == "workflow_run":
        run = _mapping(data.get("workflow_run"))
        head_sha = _text(run.get("head_sha"))
        pulls = [_mapping(p) for p in run.get("pull_requests") or [] if isinstance(p, dict)]
        # GitHub lists the PRs whose head is this commit (same-repository PRs only).
        matching = [p for p in pulls if _mapping(p.get("head")).get("sha") == head_sha]
        pull = matching[0] if matching else {}
        base = _mapping(pull.get("base"))
        return EventInfo(
            name=name,
            pr=_number(pull.get("number")),
            head_sha=head_sha,
            base_sha=_text(base.get("sha")),
            base_ref=_text(base.get("ref")),
            head_owner=_text(
                _mapping(_mapping(run.get("head_repository")).get("owner")).get("login")
            ),
            head_branch=_text(run.get("head_branch")),
            run_url=_run_url(run.get("html_url")),
        )
    if name == "push":
        return EventInfo(
            name=name, head_sha=_text(data.get("after")), base_sha=_text(data.get("before"))
        )
    return EventInfo(name=name)


def read_event(path: str | None, *, name: str | None = None) -> EventInfo:
    """Parse the event file at `path` (no file: an empty EventInfo)."""
    if not path:
        return EventInfo(name=name)
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"GITHUB_EVENT_PATH {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise InputError(f"GITHUB_EVENT_PATH {path}: not JSON ({exc})") from None
    return parse_event(payload, name=name)
