"""`perfgate comment --no-baseline`: what a PR gets when nothing could be compared yet (compare
exited 4): a one-line comment saying what to do, a neutral check run, a status that does not
fail. Over HTTP against the fake GitHub, like test_comment_cli.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from fake_github import BOT, FakeGitHub
from ghhelpers import BASE_SHA, HEAD_SHA, body_of

from perfgate.github.no_baseline import NoBaseline, no_baseline_markdown
from perfgate.github.publish import MARKER

Invoke = Callable[..., Result]
Env = dict[str, str | None]
NO_BASELINE = ("--no-baseline", "--base", BASE_SHA, "--base-branch", "main")


def test_the_pr_gets_a_neutral_check_and_a_line_saying_what_to_do(
    github: FakeGitHub, actions_env: Env, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    result = comment(*NO_BASELINE, env=actions_env)
    assert result.exit_code == 0, result.output

    body = body_of(github)
    marker, line = body.splitlines()
    assert marker == MARKER
    assert line == (
        "**perfgate: no baseline yet.** The store has no runs of the merge-base `aaaaaaaaaaaa` "
        "or of `main` before it, so nothing was compared. Merge to `main` once so its perfgate "
        "workflow stores the history PRs are compared with, or set `alternate: true` to measure "
        "the merge-base in this job (about twice the benchmark time)."
    )
    (check,) = github.check_runs
    assert (check["conclusion"], check["head_sha"]) == ("neutral", HEAD_SHA)
    assert check["output"]["title"] == "No baseline yet: nothing compared"
    assert check["output"]["summary"] == line + "\n"
    (status,) = github.statuses
    assert (status["state"], status["sha"], status["context"]) == ("success", HEAD_SHA, "perfgate")
    assert status["description"] == (
        "No baseline yet: nothing compared (no runs of main in the store)"
    )
    assert status["target_url"] == "https://github.example/acme/models/actions/runs/99"
    summary = Path(str(actions_env["GITHUB_STEP_SUMMARY"])).read_text()
    assert summary.startswith(line)
    assert "check run: neutral" in result.stdout


def test_alternate_says_the_base_could_not_be_measured(
    github: FakeGitHub, actions_env: Env, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    result = comment(*NO_BASELINE, "--alternate", env=actions_env)
    assert result.exit_code == 0, result.output
    line = body_of(github).splitlines()[1]
    assert "The benchmark job could not measure the merge-base `aaaaaaaaaaaa`" in line
    assert "`alternate: true`" not in line  # it was on already
    assert "Once this PR is merged, `main`'s perfgate workflow stores the history" in line


def test_a_push_gets_status_and_check_only(
    github: FakeGitHub, actions_env: Env, comment: Invoke, tmp_path: Path
) -> None:
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"before": BASE_SHA, "after": HEAD_SHA}))
    env = {**actions_env, "GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(event)}
    result = comment(*NO_BASELINE, env=env)
    assert result.exit_code == 0, result.output
    assert not github.comments
    (check,) = github.check_runs
    assert check["conclusion"] == "neutral"
    assert check["output"]["summary"].startswith(
        "**perfgate: no baseline yet.** The store has no earlier run of `main`"
    )
    assert [s["state"] for s in github.statuses] == ["success"]


def test_modes_other_than_always_only_update_an_existing_comment(
    github: FakeGitHub, actions_env: Env, comment: Invoke
) -> None:
    github.add_pull(7, HEAD_SHA)
    quiet = comment(*NO_BASELINE, "--mode", "on-regression", env=actions_env)
    assert quiet.exit_code == 0, quiet.output
    assert not github.perfgate_comments(7)
    assert [c["conclusion"] for c in github.check_runs] == ["neutral"]
    github.add_comment(7, f"{MARKER}\nan earlier verdict", user=BOT)
    kept = comment(*NO_BASELINE, "--mode", "on-change", env=actions_env)
    assert kept.exit_code == 0, kept.output
    assert body_of(github).splitlines()[1].startswith("**perfgate: no baseline yet.**")


def test_either_a_comparison_or_no_baseline(
    actions_env: Env, comment: Invoke, tmp_path: Path
) -> None:
    neither = comment(env=actions_env)
    assert neither.exit_code == 2
    assert "pass either a COMPARISON file or --no-baseline" in neither.stderr
    both = comment(str(tmp_path / "c.json"), "--no-baseline", env=actions_env)
    assert both.exit_code == 2
    assert "pass either a COMPARISON file or --no-baseline" in both.stderr


def test_the_branch_name_renders_inert() -> None:
    line = no_baseline_markdown(
        NoBaseline(base_branch="ma`in <b>@all", base="not-a-sha"), pull_request=True
    )
    assert "``ma`in <b>@all``" in line
    assert "merge-base `" not in line  # a base that is not a commit id is not shown
    assert line.count("\n") == 1
