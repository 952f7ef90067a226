"""Change points on main become GitHub issues: `perfgate changes --sync-issues` end to end.

A real store (SQLite file and PostgreSQL) filled with synthetic main runs through the upload use
case, github3.py speaking HTTP to the fake GitHub on 127.0.0.1. Seeds are fixed; nothing is timed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from action_env import Actions
from click.testing import CliRunner, Result
from fake_github import BOT, FakeGitHub
from sqlalchemy import select, update

from perfgate.cli import cli
from perfgate.github.issues import TRACKING_LABEL
from perfgate.report.change_issue import parse_marker
from perfgate.results import parse_document
from perfgate.store import models
from perfgate.store.connect import Store, open_store
from perfgate.store.trends import list_changes, set_change_status
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

KEY = "kernel[n=128,variant=0]"
PLANTED_OP = "aten::softmax"
START = datetime(2026, 3, 1, tzinfo=timezone.utc)
SERVER = "https://perf.example"


def commit_of(i: int) -> str:
    return hashlib.sha1(f"main commit {i}".encode()).hexdigest()


def main_run(i: int, *, slow_from: int, slow_until: int | None = None) -> dict[str, Any]:
    """Main's run i: KEY 25% slower, and its softmax 60 µs/call slower, from run `slow_from`
    (until `slow_until`, exclusive, when given)."""
    slow = i >= slow_from and (slow_until is None or i < slow_until)
    doc = synthetic_document(
        benchmarks=3,
        samples=12,
        seed=700 + i,
        commit=commit_of(i),
        slowdown={KEY: 1.25} if slow else None,
        started_at=START + timedelta(hours=i),
    )
    if slow:
        (bench,) = [b for b in doc["benchmarks"] if b["key"] == KEY]
        for op in bench["profile"]["ops"]:
            if op["op"] == PLANTED_OP:
                op["self_cpu_us"] += 60.0
    return doc


def upload(store: Store, runs: range, **kw: int | None) -> None:
    for i in runs:
        store_document(store.sessions, parse_document(main_run(i, **kw)))  # type: ignore[arg-type]


@pytest.fixture
def policy_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose policy asks for labels and an assignee on change-point issues."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "perfgate.toml").write_text(
        '[issues]\nlabels = ["performance"]\nassignees = ["perf-oncall"]\n'
    )
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def main_store(db_url: str, policy_dir: Path) -> Iterator[Store]:
    with open_store(db_url) as store:
        yield store


def sync(github: FakeGitHub, db_url: str, *extra: str, token: str = "ghs_actions") -> Result:
    env = {"GITHUB_REPOSITORY": None, "GITHUB_TOKEN": None, "PERFGATE_SERVER": None}
    return CliRunner().invoke(
        cli,
        [
            "changes",
            "--sync-issues",
            "--db",
            db_url,
            "--repo",
            "acme/models",
            "--token",
            token,
            "--api-url",
            github.url,
            *extra,
        ],
        env=env,
        catch_exceptions=False,
    )


def only_issue(github: FakeGitHub) -> Any:
    (issue,) = github.issues.values()
    return issue


def bodies(github: FakeGitHub, number: int) -> list[str]:
    return [c["body"] for c in github.comments[number]]


def test_a_planted_step_opens_one_issue_that_more_quiet_runs_never_duplicate(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    result = sync(github, db_url, "--server", SERVER)
    assert result.exit_code == 0, result.output
    issue = only_issue(github)
    assert result.output.startswith(f"opened: #{issue.number} {KEY} (time)")
    assert issue.state == "open" and issue.user == BOT
    assert issue.labels == [TRACKING_LABEL, "performance"]
    assert issue.assignees == ["perf-oncall"]
    marker = parse_marker(issue.body)
    assert marker is not None
    assert (marker.series.key, marker.series.metric, marker.series.branch) == (KEY, "time", "main")
    # The commit range: the last run before the step .. the first run after it.
    assert (marker.good, marker.bad) == (commit_of(19), commit_of(20))
    assert f"`{commit_of(19)[:12]}..{commit_of(20)[:12]}`" in issue.body
    assert f"perfgate bisect {commit_of(19)} {commit_of(20)} --benchmark '{KEY}'" in issue.body
    # The planted op leads the ops that moved, +60 µs per call.
    ops = [line for line in issue.body.splitlines() if line.startswith("| `aten::")]
    assert ops[0].startswith(f"| `{PLANTED_OP}` |") and "| +60.0 |" in ops[0]
    step = re.search(r"\*\*\+(\d+\.\d)%\*\* \(95% CI \+(\d+\.\d)% … \+(\d+\.\d)%\)", issue.body)
    assert step is not None
    size, low, high = (float(g) for g in step.groups())
    assert 20 < low <= size <= high < 30
    assert f"{SERVER}/p/acme/models/trend?key=kernel%5Bn%3D128%2Cvariant%3D0%5D" in issue.body
    assert issue.title.startswith(f"perfgate: {KEY} time +2")

    # Re-running the sync changes nothing, in three reads: the repository, who the token is,
    # one page of the labelled issues.
    sent = len(github.requests)
    again = sync(github, db_url, "--server", SERVER)
    assert [(r.method, r.path) for r in github.requests[sent:]] == [
        ("GET", "/repos/acme/models"),
        ("POST", "/graphql"),
        ("GET", "/repos/acme/models/issues"),
    ]
    assert again.exit_code == 0, again.output
    assert again.output.startswith(f"unchanged: #{issue.number}")
    assert len(github.issues) == 1 and bodies(github, issue.number) == []

    # 40 more runs at the new level (A/A): no new issue, the same one kept up to date.
    for start in range(40, 80, 10):
        upload(main_store, range(start, start + 10), slow_from=20)
        step_sync = sync(github, db_url, "--server", SERVER)
        assert step_sync.exit_code == 0, step_sync.output
    assert len(github.issues) == 1
    assert only_issue(github).state == "open"
    marker_now = parse_marker(only_issue(github).body)
    assert marker_now is not None and marker_now.run == marker.run
    assert "and 60 since" in only_issue(github).body
    assert bodies(github, issue.number) == []
    posts = github.calls("POST", r"^/repos/acme/models/issues$")
    assert len(posts) == 1


def test_a_dismissed_step_closes_its_issue_with_a_comment(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    assert sync(github, db_url).exit_code == 0
    issue = only_issue(github)
    with main_store.sessions() as session:
        (change,) = list_changes(session, project=None, branch="main", metric="time")
    set_change_status(main_store.sessions, change_id=change.id or 0, status="dismissed")
    result = sync(github, db_url)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"closed: #{issue.number} {KEY} (time): dismissed")
    assert issue.state == "closed"
    (comment,) = bodies(github, issue.number)
    assert "dismissed in perfgate" in comment
    assert f"`{commit_of(19)[:12]}..{commit_of(20)[:12]}`" in comment
    # Closed stays closed: the next sync neither reopens nor duplicates it.
    assert sync(github, db_url).exit_code == 0
    assert len(github.issues) == 1 and issue.state == "closed"


def test_a_step_no_longer_detected_closes_and_a_moved_step_updates(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    assert sync(github, db_url).exit_code == 0
    issue = only_issue(github)
    # Detection moves the cut one run later (what a re-detection over more runs may do).
    with main_store.sessions() as session, session.begin():
        run_21 = session.scalar(select(models.Run.id).where(models.Run.commit == commit_of(21)))
        session.execute(
            update(models.ChangePoint)
            .where(models.ChangePoint.metric == "time")
            .values(run_id=run_21, commit=commit_of(21))
        )
    moved = sync(github, db_url)
    assert moved.exit_code == 0, moved.output
    assert moved.output.startswith(f"moved: #{issue.number}")
    assert len(github.issues) == 1 and issue.state == "open"
    (comment,) = bodies(github, issue.number)
    assert "the step moved" in comment
    assert f"`{commit_of(20)[:12]}..{commit_of(21)[:12]}`" in comment
    marker = parse_marker(issue.body)
    assert marker is not None and (marker.good, marker.bad) == (commit_of(20), commit_of(21))
    # Detection drops it (an open change point the detector no longer sees is deleted).
    with main_store.sessions() as session, session.begin():
        session.execute(
            models.ChangePoint.__table__.delete().where(models.ChangePoint.metric == "time")
        )
    closed = sync(github, db_url)
    assert closed.exit_code == 0, closed.output
    assert issue.state == "closed"
    assert "no longer detects a slowdown" in bodies(github, issue.number)[-1]


def test_a_step_that_is_undone_closes_as_recovered(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    assert sync(github, db_url).exit_code == 0
    issue = only_issue(github)
    upload(main_store, range(40, 70), slow_from=20, slow_until=40)
    result = sync(github, db_url)
    assert result.exit_code == 0, result.output
    assert issue.state == "closed", result.output
    assert "brought the level back" in bodies(github, issue.number)[-1]
    assert f"`{commit_of(39)[:12]}..{commit_of(40)[:12]}`" in bodies(github, issue.number)[-1]


def test_a_first_sync_over_a_long_history_opens_nothing_for_old_steps(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(70), slow_from=20)
    result = sync(github, db_url, "--format", "json")
    assert result.exit_code == 0, result.output
    (action,) = json.loads(result.stdout)["issues"]
    assert action["action"] == "skipped" and "horizon" in action["detail"]
    assert github.issues == {}


def test_acknowledged_steps_update_their_issue_but_never_open_one(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    with main_store.sessions() as session:
        (change,) = list_changes(session, project=None, branch="main", metric="time")
    set_change_status(main_store.sessions, change_id=change.id or 0, status="acknowledged")
    result = sync(github, db_url)
    assert result.exit_code == 0, result.output
    assert "skipped" in result.output and github.issues == {}
    set_change_status(main_store.sessions, change_id=change.id or 0, status="open")
    assert sync(github, db_url).exit_code == 0
    issue = only_issue(github)
    set_change_status(main_store.sessions, change_id=change.id or 0, status="acknowledged")
    updated = sync(github, db_url)
    assert updated.exit_code == 0, updated.output
    assert issue.state == "open" and "**Status in perfgate**: acknowledged." in issue.body


def test_issues_closed_by_a_person_or_written_by_others_are_left_alone(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    assert sync(github, db_url).exit_code == 0
    issue = only_issue(github)
    forged = github.add_issue(
        "forged", issue.body, user="octocat", labels=[TRACKING_LABEL, "performance"]
    )
    issue.state = "closed"  # a person closed it
    result = sync(github, db_url)
    assert result.exit_code == 0, result.output
    assert "not reopened" in result.output
    assert len(github.issues) == 2 and issue.state == "closed"
    assert forged.state == "open" and forged.title == "forged"


def test_a_duplicate_from_a_race_is_closed_pointing_at_the_first(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    assert sync(github, db_url).exit_code == 0
    first = only_issue(github)
    twin = github.add_issue(first.title, first.body, labels=[TRACKING_LABEL])
    result = sync(github, db_url)
    assert result.exit_code == 0, result.output
    assert first.state == "open" and twin.state == "closed"
    assert bodies(github, twin.number) == [
        f"Closing as a duplicate of #{first.number}, which perfgate keeps up to date for this "
        "series."
    ]


def test_label_option_adds_labels_and_missing_ones_are_added_to_open_issues(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    assert sync(github, db_url).exit_code == 0
    issue = only_issue(github)
    result = sync(github, db_url, "--label", "regression")
    assert result.exit_code == 0, result.output
    assert issue.labels == [TRACKING_LABEL, "performance", "regression"]
    bad = sync(github, db_url, "--label", "a,b")
    assert bad.exit_code == 2
    assert "--label: 'a,b' is not a label name" in bad.output


def test_a_token_without_issues_write_is_one_line_and_exit_3(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    github.no_issues.add("ghs_actions")
    result = sync(github, db_url)
    assert result.exit_code == 3
    assert "`issues: write`" in result.output
    assert "Traceback" not in result.output


def test_the_action_step_syncs_on_main_pushes_only(tmp_path: Path, github: FakeGitHub) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        upload(store, range(40), slow_from=20)
    inputs = {
        "INPUT_CHANGE_ISSUES": "true",
        "INPUT_DB": db,
        "INPUT_GITHUB_TOKEN": "ghs_actions",
        "GITHUB_API_URL": github.url,
        "GITHUB_REF_NAME": "main",
    }
    for job in ("pr", "server", "push"):
        (tmp_path / job).mkdir()
    pull = Actions(tmp_path / "pr", event={"number": 7}, event_name="pull_request")
    skipped = pull.run("issues.sh", **inputs)
    assert skipped.code == 0 and "not on pull_request" in skipped.stdout
    server_only = Actions(tmp_path / "server", event={}, event_name="push")
    notice = server_only.run("issues.sh", **{**inputs, "INPUT_DB": "", "INPUT_SERVER": SERVER})
    assert notice.code == 0 and notice.stdout.startswith("::notice title=perfgate::")
    assert github.issues == {}

    push = Actions(tmp_path / "push", event={"after": commit_of(39)}, event_name="push")
    done = push.run("issues.sh", **inputs)
    assert done.code == 0, done.stderr
    issue = only_issue(github)
    assert done.stdout.startswith(f"opened: #{issue.number} {KEY} (time)")
    assert (parse_marker(issue.body) or pytest.fail("no marker")).bad == commit_of(20)
    again = push.run("issues.sh", **inputs)
    assert again.code == 0 and len(github.issues) == 1


def test_labels_dropped_by_github_are_a_warning(
    github: FakeGitHub, main_store: Store, db_url: str
) -> None:
    upload(main_store, range(40), slow_from=20)
    github.no_push.add("ghs_actions")
    result = sync(github, db_url)
    assert result.exit_code == 0, result.output
    issue = only_issue(github)
    assert issue.labels == []
    assert f"warning: GitHub dropped the label {TRACKING_LABEL} from #{issue.number}" in (
        result.stderr
    )
