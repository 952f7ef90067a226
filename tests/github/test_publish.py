"""The publish use case with an injected sleep: backoff schedule, budgets, modes, fork safety."""

from __future__ import annotations

import time

import pytest
from fake_github import FakeGitHub
from ghhelpers import HEAD_SHA, make_comparison

from perfgate.errors import GitHubError, InputError, UsageError
from perfgate.github.client import GitHub3API, bot_login, graphql_url
from perfgate.github.event import EventInfo
from perfgate.github.publish import MARKER, Outcome, Target, publish, resolve_target
from perfgate.github.retry import Backoff
from perfgate.report.markdown import render_markdown
from perfgate.stats.model import Comparison


def _api(github: FakeGitHub, backoff: Backoff, token: str = "ghs_actions") -> GitHub3API:
    return GitHub3API(api_url=github.url, token=token, repo="acme/models", backoff=backoff)


def _publish(
    github: FakeGitHub,
    comparison: Comparison,
    *,
    backoff: Backoff | None = None,
    target: Target | None = None,
    mode: str = "always",
) -> tuple[list[float], Outcome]:
    waits: list[float] = []
    backoff = backoff or Backoff(sleep=waits.append)
    outcome = publish(
        _api(github, backoff),
        comparison,
        target or Target(repo="acme/models", sha=HEAD_SHA, pr=7),
        markdown=render_markdown(comparison),
        mode=mode,
        details_url=None,
        backoff=backoff,
    )
    return waits, outcome


def test_backoff_doubles_between_retries(github: FakeGitHub, regressed: Comparison) -> None:
    github.add_pull(7, HEAD_SHA)
    github.fail("GET", r"^/repos/acme/models$", status=502, times=2)
    github.fail("POST", r"/statuses/", status=503, times=1)
    github.fail("GET", r"/issues/7/comments$", drop=True, times=1)
    waits, _ = _publish(github, regressed)
    assert waits == [1.0, 2.0, 1.0, 1.0]
    assert len(github.statuses) == 1 and len(github.perfgate_comments(7)) == 1


def test_total_wait_is_bounded(github: FakeGitHub, regressed: Comparison) -> None:
    github.add_pull(7, HEAD_SHA)
    github.fail("GET", r"^/repos/acme/models$", status=502, times=100)
    waits: list[float] = []
    backoff = Backoff(sleep=waits.append, retries=10, max_delay=30.0, max_total=45.0)
    with pytest.raises(GitHubError) as caught:
        _publish(github, regressed, backoff=backoff)
    assert caught.value.exit_code == 3
    assert "GitHub kept failing (502" in str(caught.value)
    assert sum(waits) <= 45.0 and waits == [1.0, 2.0, 4.0, 8.0, 16.0]


def test_exhausted_rate_limit_fails_without_waiting_an_hour(
    github: FakeGitHub, regressed: Comparison
) -> None:
    github.add_pull(7, HEAD_SHA)
    reset = int(time.time()) + 3600
    github.fail(
        "GET",
        r"^/repos/acme/models$",
        status=403,
        body={"message": "API rate limit exceeded for installation ID 1."},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
    )
    waits: list[float] = []
    with pytest.raises(GitHubError, match="rate limit is used up until") as caught:
        _publish(github, regressed, backoff=Backoff(sleep=waits.append))
    assert waits == []
    assert time.strftime("%H:%M UTC", time.gmtime(reset)) in str(caught.value)


def test_on_regression_mode(github: FakeGitHub, regressed: Comparison) -> None:
    github.add_pull(7, HEAD_SHA)
    clean = make_comparison(slow=1.0)
    _, outcome = _publish(github, clean, mode="on-regression")
    assert outcome.comment.startswith("skipped (--mode on-regression")
    assert not github.perfgate_comments(7) and len(github.statuses) == 1
    _publish(github, regressed, mode="on-regression")
    assert len(github.perfgate_comments(7)) == 1
    # Fixed later: the existing comment is brought up to date rather than left stale.
    _, outcome = _publish(github, clean, mode="on-regression")
    assert outcome.comment == "updated"
    assert "### ✅" in github.perfgate_comments(7)[0]["body"]


def test_on_change_mode(github: FakeGitHub, regressed: Comparison) -> None:
    github.add_pull(7, HEAD_SHA)
    _, outcome = _publish(github, make_comparison(slow=1.0), mode="on-change")
    assert outcome.comment.startswith("skipped (--mode on-change")
    _, outcome = _publish(github, make_comparison(slow=0.4), mode="on-change")
    assert outcome.comment == "created"  # an improvement is a change


def test_fork_pr_number_is_checked_against_the_head(
    github: FakeGitHub, regressed: Comparison
) -> None:
    event = EventInfo(
        name="workflow_run", head_sha=HEAD_SHA, head_owner="forker", head_branch="feature"
    )
    github.add_pull(7, "e" * 40, head_owner="forker")  # the artifact claims #7, whose head differs
    claimed = resolve_target(repo="acme/models", pr=7, sha=None, event=event, github_sha="c" * 40)
    assert claimed == Target(repo="acme/models", sha=HEAD_SHA, pr=7, claimed=True)
    with pytest.raises(InputError, match="refusing to comment on it"):
        _publish(github, regressed, target=claimed)
    assert not github.statuses and not github.comments[7]

    github.add_pull(8, HEAD_SHA, head_owner="forker")
    _publish(github, regressed, target=claimed.__class__(**{**claimed.__dict__, "pr": 8}))
    assert len(github.perfgate_comments(8)) == 1


def test_fork_pr_found_by_its_head(github: FakeGitHub, regressed: Comparison) -> None:
    github.add_pull(5, "f" * 40, head_owner="forker", head_branch="other")
    github.add_pull(9, HEAD_SHA, head_owner="forker", head_branch="feature")
    event = EventInfo(
        name="workflow_run", head_sha=HEAD_SHA, head_owner="forker", head_branch="feature"
    )
    target = resolve_target(repo="acme/models", pr=None, sha=None, event=event, github_sha=None)
    assert target.find_by_head == "forker:feature"
    _publish(github, regressed, target=target)
    assert len(github.perfgate_comments(9)) == 1 and not github.perfgate_comments(5)


def test_push_event_posts_status_and_check_only(github: FakeGitHub, regressed: Comparison) -> None:
    event = EventInfo(name="push", head_sha=HEAD_SHA)
    target = resolve_target(repo="acme/models", pr=None, sha=None, event=event, github_sha=None)
    _, outcome = _publish(github, regressed, target=target)
    assert outcome.comment == "skipped (no pull request)"
    assert len(github.statuses) == 1 and len(github.check_runs) == 1


def test_long_suites_fit_github_limits(github: FakeGitHub) -> None:
    github.add_pull(7, HEAD_SHA)
    huge = make_comparison(slow=1.0, benchmarks=400)
    _publish(github, huge)
    body = github.perfgate_comments(7)[0]["body"]
    assert body.startswith(MARKER) and len(body) <= 65536
    assert len(github.check_runs[0]["output"]["summary"]) <= 65535
    assert len(github.statuses[0]["description"]) <= 140


def test_graphql_endpoint_and_bot_names() -> None:
    assert graphql_url("https://api.github.com") == "https://api.github.com/graphql"
    assert graphql_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com/api/graphql"
    assert bot_login("perfgate-app") == "perfgate-app[bot]"
    assert bot_login("github-actions[bot]") == "github-actions[bot]"


def test_without_knowing_who_it_is_nothing_is_commented(
    github: FakeGitHub, regressed: Comparison
) -> None:
    """Neither adopt a marked comment nor add one more each run: report it, post the rest."""
    github.add_pull(7, HEAD_SHA)
    github.add_comment(7, f"{MARKER}\nsomeone's", user="github-actions[bot]")
    github.fail("POST", r"^/graphql$", status=200, body={"errors": [{"message": "no"}]})
    with pytest.raises(GitHubError, match="cannot tell its own comment from someone else's"):
        _publish(github, regressed)
    assert [c["body"] for c in github.comments[7]] == [f"{MARKER}\nsomeone's"]
    assert len(github.statuses) == 1 and len(github.check_runs) == 1


def test_a_commit_or_repository_with_a_trailing_newline_is_refused() -> None:
    event = EventInfo(name="push")
    with pytest.raises(UsageError, match="is not a commit id"):
        resolve_target(
            repo="acme/models", pr=None, sha=HEAD_SHA + "\n", event=event, github_sha=None
        )
    with pytest.raises(UsageError, match="is not owner/name"):
        resolve_target(repo="acme/models\n", pr=None, sha=HEAD_SHA, event=event, github_sha=None)
