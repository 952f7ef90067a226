"""GitHub test fixtures: a fake GitHub on 127.0.0.1, comparisons, an Actions environment."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from action_env import Repo, make_repo
from click.testing import CliRunner, Result
from fake_github import FakeGitHub, FakeGitHubServer
from ghhelpers import ACTIONS_VARIABLES, BASE_SHA, HEAD_SHA, make_comparison

from perfgate.cli import cli
from perfgate.report.comparison_document import comparison_to_json
from perfgate.stats.model import Comparison


@pytest.fixture(scope="session")
def regressed() -> Comparison:
    return make_comparison()


@pytest.fixture
def comparison_file(tmp_path: Path, regressed: Comparison) -> Path:
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps(comparison_to_json(regressed)))
    return path


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    server = FakeGitHubServer(fake).start()
    try:
        yield fake
    finally:
        server.stop()


def pull_request_event(path: Path, *, number: int = 7, head: str = HEAD_SHA) -> Path:
    path.write_text(
        json.dumps(
            {
                "action": "synchronize",
                "number": number,
                "pull_request": {
                    "number": number,
                    "head": {"sha": head, "ref": "feature", "repo": {"owner": {"login": "acme"}}},
                    "base": {"sha": BASE_SHA, "ref": "main"},
                },
            }
        )
    )
    return path


@pytest.fixture
def actions_env(tmp_path: Path, github: FakeGitHub) -> dict[str, str | None]:
    """A pull_request job's environment pointing at the fake GitHub."""
    env: dict[str, str | None] = dict.fromkeys(ACTIONS_VARIABLES)
    env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_TOKEN": "ghs_actions",
            "GITHUB_REPOSITORY": "acme/models",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(pull_request_event(tmp_path / "event.json")),
            "GITHUB_API_URL": github.url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": "99",
            "GITHUB_SHA": "c" * 40,  # the merge commit GitHub made; never the one reported on
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        }
    )
    return env


@pytest.fixture
def comment() -> Callable[..., Result]:
    def invoke(*args: str, env: dict[str, str | None]) -> Result:
        return CliRunner().invoke(cli, ["comment", *args], env=env, catch_exceptions=False)

    return invoke


@pytest.fixture(scope="session")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return make_repo(tmp_path_factory.mktemp("origin"))
