"""`perfgate comment` end to end: real github3.py over HTTP against a fake GitHub on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result
from fake_github import BOT, FakeGitHub
from ghhelpers import BASE_SHA, HEAD_SHA, body_of, make_comparison

from perfgate.github.publish import MARKER
from perfgate.report.comparison_document import comparison_to_json

Invoke = Callable[..., Result]
Env = dict[str, str | None]


def test_first_run_creates_comment_status_and_check_run(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 0, result.output

    body = body_of(github)
    assert body.startswith(MARKER + "\n### ⚠️ 1 regression")
    assert "base `aaaaaaa` → head `bbbbbbb`" in body.splitlines()[1]
    assert "[CI run](https://github.example/acme/models/actions/runs/99)" in body
    assert len(github.calls("POST", r"/issues/7/comments$")) == 1

    (status,) = github.statuses
    assert status["sha"] == HEAD_SHA and status["context"] == "perfgate"
    assert status["state"] == "failure"
    assert status["description"].startswith("1 regression, ")
    assert len(status["description"]) <= 140
    assert status["target_url"] == "https://github.example/acme/models/actions/runs/99"

    (check,) = github.check_runs
    assert check["name"] == "perfgate" and check["head_sha"] == HEAD_SHA
    assert check["status"] == "completed" and check["conclusion"] == "failure"
    assert check["output"]["summary"].startswith("### ⚠️ 1 regression")
    assert check["output"]["title"].startswith("1 regression")

    # Installation-token auth, sent on every request, and nothing sent anywhere else.
    assert {r.headers["authorization"] for r in github.requests} == {"token ghs_actions"}
    summary = Path(str(actions_env["GITHUB_STEP_SUMMARY"])).read_text()
    assert summary.startswith("### ⚠️ 1 regression")
    warnings = [line for line in result.stdout.splitlines() if line.startswith("::warning ")]
    assert len(warnings) == 1 and "kernel[n=128%2Cvariant=0] time regressed" in warnings[0]
    assert "comment: created http://127.0.0.1:" in result.stdout
    assert "check run: failure" in result.stdout


def test_second_run_edits_the_same_comment(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke, tmp_path: Path
) -> None:
    github.add_pull(7, HEAD_SHA)
    assert comment(str(comparison_file), env=actions_env).exit_code == 0
    first_id = github.perfgate_comments(7)[0]["id"]

    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(comparison_to_json(make_comparison(slow=1.0))))
    again = comment(str(fixed), env=actions_env)
    assert again.exit_code == 0, again.output
    assert "comment: updated" in again.stdout

    (only,) = github.perfgate_comments(7)
    assert only["id"] == first_id
    assert only["body"].startswith(MARKER + "\n### ✅ ")
    assert len(github.calls("POST", r"/issues/7/comments$")) == 1
    assert len(github.calls("PATCH", rf"/issues/comments/{first_id}$")) == 1
    assert [s["state"] for s in github.statuses] == ["failure", "success"]
    assert [c["conclusion"] for c in github.check_runs] == ["failure", "success"]

    # The same verdict again changes nothing on the comment.
    third = comment(str(fixed), env=actions_env)
    assert "comment: unchanged" in third.stdout
    assert len(github.calls("PATCH", r"/issues/comments/")) == 1


FORGED = f"{MARKER}\n### ✅ all good\n\n[Looks good - click to approve](https://evil.example)"


def _by(github: FakeGitHub, login: str, number: int = 7) -> list[dict[str, Any]]:
    return [c for c in github.comments[number] if c["user"]["login"] == login]


def test_a_marker_comment_by_someone_else_is_never_adopted(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke, tmp_path: Path
) -> None:
    github.add_pull(7, HEAD_SHA)
    forged = github.add_comment(7, FORGED, user="mallory")  # first, where the old search looked
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 0, result.output
    assert "comment: created" in result.stdout
    (ours,) = _by(github, BOT)
    assert ours["body"].startswith(MARKER + "\n### ⚠️ 1 regression")

    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(comparison_to_json(make_comparison(slow=1.0))))
    again = comment(str(fixed), env=actions_env)
    assert again.exit_code == 0, again.output
    assert "comment: updated" in again.stdout
    assert _by(github, BOT) == [ours] and ours["body"].startswith(MARKER + "\n### ✅ ")
    assert [c["id"] for c in github.comments[7]] == [forged["id"], ours["id"]]
    assert forged["body"] == FORGED and forged["user"]["login"] == "mallory"
    assert not github.calls("PATCH", rf"/issues/comments/{forged['id']}$")
    assert len(github.calls("PATCH", rf"/issues/comments/{ours['id']}$")) == 1
    # An installation token learns it is github-actions[bot] from GraphQL, once a run.
    assert len(github.calls("POST", r"^/graphql$")) == 2 and not github.calls("GET", r"^/user$")


def test_a_personal_token_adopts_only_its_own_users_comment(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    forged = github.add_comment(7, FORGED, user="mallory")
    own = github.add_comment(7, f"{MARKER}\nan older verdict", user="octocat")
    env = {**actions_env, "GITHUB_TOKEN": "ghp_personal", "GITHUB_ACTIONS": None}
    result = comment(str(comparison_file), env=env)
    assert result.exit_code == 0, result.output
    assert "comment: updated" in result.stdout
    assert own["body"].startswith(MARKER + "\n### ⚠️ 1 regression")
    assert forged["body"] == FORGED and len(github.comments[7]) == 2
    assert not github.calls("POST", r"/issues/7/comments$")
    assert len(github.calls("GET", r"^/user$")) == 1 and not github.calls("POST", r"^/graphql$")


def test_a_pr_with_150_other_comments_still_gets_one(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    for i in range(150):
        github.add_comment(7, f"review note {i}")
    github.add_comment(7, f"> {MARKER}\n> quoting perfgate is not perfgate")
    for _ in range(2):
        result = comment(str(comparison_file), env=actions_env)
        assert result.exit_code == 0, result.output
    assert len(github.perfgate_comments(7)) == 1
    assert len(github.comments[7]) == 152
    assert len(github.calls("POST", r"/issues/7/comments$")) == 1
    # The second run found it on page 2, through the Link header GitHub-style URL.
    assert github.calls("GET", r"^/repositories/4242/issues/7/comments$")


def test_two_502s_in_a_row_are_retried(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    # Zero-second Retry-After keeps the test fast; 502s are also retried without it (see
    # test_publish.py for the backoff schedule with an injected sleep).
    github.fail(
        "GET", r"^/repos/acme/models/pulls/7$", status=502, times=2, headers={"Retry-After": "0"}
    )
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 0, result.output
    assert len(github.calls("GET", r"^/repos/acme/models/pulls/7$")) == 3
    assert "got HTTP 502; retrying in 0s (retry 1 of 5)" in result.stderr
    assert "retrying in 0s (retry 2 of 5)" in result.stderr
    assert len(github.perfgate_comments(7)) == 1


def test_bad_credentials_exit_3_with_one_line(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    result = comment(str(comparison_file), env={**actions_env, "GITHUB_TOKEN": "ghs_revoked"})
    assert result.exit_code == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "GitHub rejected the token (401 Bad credentials)" in errors[0]
    assert "GITHUB_TOKEN" in errors[0]
    assert not github.statuses and not github.check_runs and not github.perfgate_comments(7)
    # The results were not lost: the job summary was written before GitHub was called.
    assert "1 regression" in Path(str(actions_env["GITHUB_STEP_SUMMARY"])).read_text()


def test_missing_pull_request_exit_3(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    result = comment(str(comparison_file), "--pr", "999", env=actions_env)
    assert result.exit_code == 3
    assert "error: pull request #999 not found in acme/models: check --pr" in result.stderr
    assert not github.statuses


def test_check_run_refused_by_github_degrades(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    github.no_checks.add("ghs_actions")  # e.g. `permissions:` without `checks: write`
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 0, result.output
    assert "::warning::check run not created (GitHub answered 403" in result.stdout
    assert "check run: skipped" in result.stdout
    assert len(github.calls("POST", r"/check-runs$")) == 1
    assert not github.check_runs
    assert len(github.statuses) == 1 and len(github.perfgate_comments(7)) == 1


def test_personal_token_skips_the_check_run_locally(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    env = {**actions_env, "GITHUB_TOKEN": "ghp_personal", "GITHUB_ACTIONS": None}
    result = comment(str(comparison_file), env=env)
    assert result.exit_code == 0, result.output
    assert "warning: check run not created (github3.py refused" in result.stderr
    assert not github.calls("POST", r"/check-runs$")  # github3.py never sent it
    assert len(github.statuses) == 1 and len(github.perfgate_comments(7)) == 1
    assert "::warning" not in result.stdout  # outside Actions: no workflow commands


def test_secondary_rate_limits_are_waited_out(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    limited = {"message": "You have exceeded a secondary rate limit. Please wait."}
    github.fail("POST", r"/statuses/", status=403, headers={"Retry-After": "0"}, body=limited)
    github.fail(
        "POST",
        r"/check-runs$",
        status=403,
        body={"message": "API rate limit exceeded"},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) - 5)},
    )
    github.fail("POST", r"/issues/7/comments$", status=429, headers={"Retry-After": "0"})
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 0, result.output
    assert len(github.statuses) == 1 and len(github.check_runs) == 1
    assert len(github.perfgate_comments(7)) == 1
    assert len(github.calls("POST", r"/statuses/")) == 2
    assert len(github.calls("POST", r"/check-runs$")) == 2


def test_a_create_that_failed_but_landed_is_not_repeated(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    github.fail("POST", r"/issues/7/comments$", status=502, after=True)
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 0, result.output
    assert len(github.perfgate_comments(7)) == 1
    assert len(github.calls("POST", r"/issues/7/comments$")) == 1
    assert "comment: unchanged" in result.stdout  # found again, already up to date


def test_github_enterprise_api_root_is_used_exactly(
    actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    from fake_github import FakeGitHubServer

    fake = FakeGitHub(prefix="/api/v3")
    server = FakeGitHubServer(fake).start()
    try:
        fake.add_pull(7, HEAD_SHA)
        result = comment(str(comparison_file), "--api-url", fake.url + "/", env=actions_env)
        assert result.exit_code == 0, result.output
        # REST under the root as given; GraphQL (who the token is) where GHES serves it.
        rest = [r for r in fake.requests if r.raw_path != "/api/graphql"]
        assert rest and all(r.raw_path.startswith("/api/v3/") for r in rest)
        assert len(fake.requests) - len(rest) == 1
        assert len(fake.perfgate_comments(7)) == 1 and len(fake.check_runs) == 1
    finally:
        server.stop()


def test_options_instead_of_the_environment(
    github: FakeGitHub, comparison_file: Path, comment: Invoke
) -> None:
    from ghhelpers import ACTIONS_VARIABLES

    github.add_pull(12, HEAD_SHA)
    env: Env = dict.fromkeys(ACTIONS_VARIABLES)
    result = comment(
        str(comparison_file),
        "--repo",
        "acme/models",
        "--pr",
        "12",
        "--sha",
        HEAD_SHA,
        "--token",
        "ghs_actions",
        "--api-url",
        github.url,
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert len(github.perfgate_comments(12)) == 1
    assert "[CI run]" not in body_of(github, 12)  # no run outside Actions


def test_dashboard_link_when_a_server_is_configured(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    env = {**actions_env, "PERFGATE_SERVER": "https://perf.example/"}
    assert comment(str(comparison_file), env=env).exit_code == 0
    link = (
        f"[dashboard](https://perf.example/compare?project=acme%2Fmodels&base={BASE_SHA}"
        f"&head={HEAD_SHA})"
    )
    assert link in body_of(github)
    assert github.statuses[0]["target_url"].startswith("https://perf.example/compare?")


def test_head_mismatch_is_refused(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, "d" * 40)
    result = comment(str(comparison_file), "--sha", "d" * 40, env=actions_env)
    assert result.exit_code == 2
    assert "the comparison's head is bbbbbbbbbbbb but the commit to report on is dddd" in (
        result.stderr
    )
    assert not github.requests


def test_no_token_and_bad_file_exit_2(
    actions_env: Env, comparison_file: Path, comment: Invoke, tmp_path: Path
) -> None:
    result = comment(str(comparison_file), env={**actions_env, "GITHUB_TOKEN": None})
    assert result.exit_code == 2 and "no GitHub token" in result.stderr
    # ... and the summary was still written.
    assert Path(str(actions_env["GITHUB_STEP_SUMMARY"])).read_text().startswith("### ⚠️")
    missing = comment(str(tmp_path / "nope.json"), env=actions_env)
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    (tmp_path / "bad.json").write_text('{"schema": "perfgate/results@1"}')
    bad = comment(str(tmp_path / "bad.json"), env=actions_env)
    assert bad.exit_code == 2 and "not a perfgate/comparison@1 document" in bad.stderr


def test_a_missing_permission_names_it_and_the_rest_is_still_posted(
    github: FakeGitHub, actions_env: Env, comparison_file: Path, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    github.fail(
        "POST",
        r"/issues/7/comments$",
        status=403,
        body={"message": "Resource not accessible by integration"},
    )
    result = comment(str(comparison_file), env=actions_env)
    assert result.exit_code == 3
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "GitHub refused the comment on #7 (403 Resource not accessible by integration)" in line
    assert "`pull-requests: write`" in line and line.endswith("(status set, check run created)")
    assert len(github.statuses) == 1 and len(github.check_runs) == 1
    assert len(github.calls("POST", r"/issues/7/comments$")) == 1  # a 403 is not retried
