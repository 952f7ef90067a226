"""Environment fingerprint and git metadata resolution (explicit > GitHub > local git)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

pytest.importorskip("torch")

from perfgate.config import GitHubContext
from perfgate.errors import UsageError
from perfgate.harness.environment import collect_environment, fingerprint
from perfgate.harness.gitinfo import project_from_remote, resolve_git

SHA_A = "a" * 40
SHA_B = "b" * 40
SHA_C = "c" * 40


def test_environment_has_the_documented_fields():
    env = collect_environment("cpu")
    for field in (
        "python",
        "torch",
        "torch_git",
        "cuda",
        "cudnn",
        "nccl",
        "triton",
        "devices",
        "driver",
        "gpus",
        "cpu",
        "cores",
        "torch_threads",
        "os",
        "hostname",
    ):
        assert field in env
    assert env["fingerprint"] == fingerprint(env)
    json.dumps(env)  # JSON-ready


def test_fingerprint_is_stable_and_ignores_hostname():
    env = collect_environment("cpu")
    again = collect_environment("cpu")
    assert fingerprint(env) == fingerprint(again)
    moved = {**env, "hostname": "some-other-runner"}
    assert fingerprint(moved) == fingerprint(env)
    reordered = dict(reversed(list(env.items())))
    assert fingerprint(reordered) == fingerprint(env)
    assert fingerprint({**env, "torch_threads": env["torch_threads"] + 1}) != fingerprint(env)
    assert fingerprint({**env, "devices": ["NVIDIA H100"]}) != fingerprint(env)


def _event(tmp_path, payload):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return str(path)


def _pr_payload():
    return {
        "pull_request": {
            "number": 42,
            "head": {"sha": SHA_B, "ref": "feature"},
            "base": {"sha": SHA_C, "ref": "main"},
        }
    }


def test_explicit_arguments_win(tmp_path):
    github = GitHubContext(
        sha=SHA_A, ref_name="42/merge", repository="o/r", event_path=_event(tmp_path, _pr_payload())
    )
    info = resolve_git(
        commit="D" * 40,
        branch="mine",
        project="me/p",
        pr=7,
        base_commit="e" * 40,
        github=github,
        cwd=tmp_path,
    )
    assert (info.commit, info.branch, info.project, info.pr, info.base_commit) == (
        "d" * 40,
        "mine",
        "me/p",
        7,
        "e" * 40,
    )


def test_github_pull_request_prefers_head_sha_over_merge_sha(tmp_path):
    github = GitHubContext(
        sha=SHA_A,
        ref_name="42/merge",
        repository="o/r",
        event_path=_event(tmp_path, _pr_payload()),
        run_url="https://github.com/o/r/actions/runs/1",
    )
    info = resolve_git(github=github, cwd=tmp_path)
    assert info.commit == SHA_B
    assert info.branch == "feature"
    assert info.project == "o/r"
    assert info.pr == 42
    assert info.base_commit == SHA_C
    assert info.ci["run_url"].endswith("/runs/1")
    assert info.ci["github_sha"] == SHA_A


def test_github_push_uses_github_sha_and_ref(tmp_path):
    github = GitHubContext(
        sha=SHA_A,
        ref_name="main",
        repository="o/r",
        event_path=_event(tmp_path, {"ref": "refs/heads/main"}),
    )
    info = resolve_git(github=github, cwd=tmp_path)
    assert (info.commit, info.branch, info.project, info.pr) == (SHA_A, "main", "o/r", None)


def test_no_commit_anywhere_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="--commit"):
        resolve_git(github=GitHubContext(), cwd=tmp_path)


def test_bad_commit_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not a commit id"):
        resolve_git(commit="main", github=GitHubContext(), cwd=tmp_path)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_local_git_checkout(tmp_path):
    repo = tmp_path / "myproject"
    repo.mkdir()

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q", "-b", "trunk")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "x")
    head = git("rev-parse", "HEAD")
    info = resolve_git(github=GitHubContext(), cwd=repo)
    assert (info.commit, info.branch, info.project) == (head, "trunk", "myproject")
    git("remote", "add", "origin", "git@github.com:owner/name.git")
    assert resolve_git(github=GitHubContext(), cwd=repo).project == "owner/name"
    # GitHub's variables come before the local checkout.
    github = GitHubContext(sha=SHA_A, ref_name="ci", repository="gh/repo")
    info = resolve_git(github=github, cwd=repo)
    assert (info.commit, info.branch, info.project) == (SHA_A, "ci", "gh/repo")
    git("checkout", "-q", "--detach")
    assert resolve_git(github=GitHubContext(), cwd=repo).branch is None


@pytest.mark.parametrize(
    ("url", "project"),
    [
        ("https://github.com/owner/name.git", "owner/name"),
        ("https://github.com/owner/name", "owner/name"),
        ("git@github.com:owner/name.git", "owner/name"),
        ("ssh://git@example.com:22/owner/name.git", "owner/name"),
        ("", None),
    ],
)
def test_project_from_remote(url, project):
    assert project_from_remote(url) == project
