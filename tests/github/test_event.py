"""Event payloads (pull_request, workflow_run, push), the job summary file, workflow commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ghhelpers import BASE_SHA, HEAD_SHA

from perfgate.errors import InputError, UsageError
from perfgate.github.actions import warning_command, write_step_summary
from perfgate.github.event import EventInfo, parse_event, read_event
from perfgate.github.publish import resolve_target
from perfgate.report.checks import STEP_SUMMARY_LIMIT, Annotation

# Trimmed from real payloads: only the fields perfgate reads, in GitHub's shapes.
PULL_REQUEST = {
    "action": "synchronize",
    "number": 42,
    "pull_request": {
        "number": 42,
        "head": {
            "sha": HEAD_SHA,
            "ref": "speedup",
            "repo": {"full_name": "forker/models", "owner": {"login": "forker"}},
        },
        "base": {"sha": BASE_SHA, "ref": "main", "repo": {"full_name": "acme/models"}},
    },
    "repository": {"full_name": "acme/models"},
}
WORKFLOW_RUN_FORK = {
    "action": "completed",
    "workflow_run": {
        "id": 123,
        "event": "pull_request",
        "conclusion": "success",
        "head_sha": HEAD_SHA,
        "head_branch": "speedup",
        "head_repository": {"full_name": "forker/models", "owner": {"login": "forker"}},
        "pull_requests": [],  # always empty for PRs from forks
    },
}
WORKFLOW_RUN_SAME_REPO = {
    "action": "completed",
    "workflow_run": {
        "id": 124,
        "event": "pull_request",
        "head_sha": HEAD_SHA,
        "head_branch": "speedup",
        "head_repository": {"full_name": "acme/models", "owner": {"login": "acme"}},
        "pull_requests": [
            {"number": 3, "head": {"sha": "0" * 40, "ref": "old"}, "base": {"ref": "main"}},
            {
                "number": 42,
                "head": {"sha": HEAD_SHA, "ref": "speedup"},
                "base": {"sha": BASE_SHA, "ref": "main"},
            },
        ],
    },
}


def test_pull_request_shape() -> None:
    event = parse_event(PULL_REQUEST, name="pull_request")
    assert event == EventInfo(
        name="pull_request",
        pr=42,
        head_sha=HEAD_SHA,
        base_sha=BASE_SHA,
        base_ref="main",
        head_owner="forker",
        head_branch="speedup",
    )
    assert parse_event(PULL_REQUEST) == event  # the name is guessed from the shape
    assert parse_event(PULL_REQUEST, name="pull_request_target").pr == 42


def test_workflow_run_shapes() -> None:
    fork = parse_event(WORKFLOW_RUN_FORK, name="workflow_run")
    assert fork.is_workflow_run and fork.pr is None
    assert (fork.head_sha, fork.head_owner, fork.head_branch) == (HEAD_SHA, "forker", "speedup")
    same = parse_event(WORKFLOW_RUN_SAME_REPO)
    assert same.name == "workflow_run" and same.pr == 42 and same.base_sha == BASE_SHA


def test_push_and_odd_payloads() -> None:
    push = parse_event({"before": BASE_SHA, "after": HEAD_SHA, "ref": "refs/heads/main"})
    assert push == EventInfo(name="push", head_sha=HEAD_SHA, base_sha=BASE_SHA)
    assert parse_event([], name="schedule") == EventInfo(name="schedule")
    bogus = {"pull_request": {"number": True, "head": "nope", "base": None}}
    assert parse_event(bogus) == EventInfo(name="pull_request")


def test_read_event_files(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(WORKFLOW_RUN_FORK))
    assert read_event(str(path), name="workflow_run").head_branch == "speedup"
    assert read_event(None) == EventInfo()
    path.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        read_event(str(path))
    with pytest.raises(InputError, match="cannot read it"):
        read_event(str(tmp_path / "absent.json"))


def test_target_resolution() -> None:
    pull = parse_event(PULL_REQUEST)
    target = resolve_target(repo="acme/models", pr=None, sha=None, event=pull, github_sha="c" * 40)
    assert (target.pr, target.sha, target.claimed) == (42, HEAD_SHA, False)
    # In a workflow_run job GITHUB_SHA is the default branch's tip: never the measured commit.
    run = parse_event({"workflow_run": {"pull_requests": []}})
    with pytest.raises(UsageError, match="no head commit"):
        resolve_target(repo="acme/models", pr=5, sha=None, event=run, github_sha="c" * 40)
    same = parse_event(WORKFLOW_RUN_SAME_REPO)
    with pytest.raises(InputError, match="disagrees with the workflow_run event"):
        resolve_target(repo="acme/models", pr=5, sha=None, event=same, github_sha=None)
    with pytest.raises(UsageError, match="owner/name"):
        resolve_target(repo="models", pr=5, sha=HEAD_SHA, event=EventInfo(), github_sha=None)
    with pytest.raises(UsageError, match="GITHUB_REPOSITORY"):
        resolve_target(repo=None, pr=5, sha=HEAD_SHA, event=EventInfo(), github_sha=None)


def test_step_summary_appends_and_stays_under_1_mib(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("earlier step output\n")
    write_step_summary(str(path), "### perfgate\n")
    assert path.read_text() == "earlier step output\n### perfgate\n"
    write_step_summary(str(path), "x" * (2 * STEP_SUMMARY_LIMIT))
    assert path.stat().st_size <= STEP_SUMMARY_LIMIT
    assert path.read_text().endswith("_Cut to fit the job summary's 1 MiB limit._\n")


def test_warning_commands_are_escaped() -> None:
    line = warning_command(Annotation(title="a: b, c", message="50% slower\nsee: x"))
    assert line == "::warning title=a%3A b%2C c::50%25 slower%0Asee: x"
