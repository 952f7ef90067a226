"""`perfgate bisect` on throwaway git repositories: arguments, aborts, cleanup, git's answers
(docs/bisect.md; the planted commit found end to end is test_bisect_planted.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from bisect_repos import BENCHMARK, git, left_behind, repository
from click.testing import CliRunner

from perfgate.bisect.driver import filter_for, follow
from perfgate.bisect.gitops import parse_candidates, parse_first_bad, temporary_worktrees
from perfgate.bisect.step import ResultLine, StepRecord, main
from perfgate.cli import cli


def _invoke(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "bisect", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


FAST = ("--rounds", "2", "--extra-rounds", "0", "--max-time", "0.05", "--threads", "1")


@pytest.mark.slow
def test_a_range_without_a_regression_names_no_commit(tmp_path: Path) -> None:
    # Same code at both ends: BAD is measured first, is no regression, and git never starts.
    repo = tmp_path / "repo"
    ids = repository(repo, commits=3, slow_from=None)
    done = _invoke(repo, ids[0], ids[-1], *FAST, "--threshold", "19", "--device", "cpu")
    assert done.returncode == 1, done.stdout + done.stderr
    # Good, or on a very busy machine still unclear (skip): never bad, and nothing is bisected.
    assert re.search(
        rf"no first bad commit named: BAD {ids[-1][:12]} is (good|skip) against GOOD", done.stdout
    ), done.stdout
    assert "no regression to bisect in this range" in done.stdout
    assert "git bisect" not in done.stdout and "Bisecting:" not in done.stdout
    assert left_behind(repo) == []


def test_a_good_commit_that_cannot_be_measured_aborts_and_cleans_up(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repository(repo, commits=3, slow_from=None)
    # GOOD is a commit without benchmarks/ (removed, then brought back before BAD): no step
    # could compare anything with it.
    git(repo, "rm", "--quiet", "-r", "benchmarks")
    git(repo, "commit", "--quiet", "-m", "drop the benchmarks")
    no_benchmarks = git(repo, "rev-parse", "HEAD")
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "bench_work.py").write_text(BENCHMARK)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "bring them back")
    done = _invoke(repo, no_benchmarks, "HEAD", *FAST, "--device", "cpu")
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: bisect aborted at BAD {git(repo, 'rev-parse', 'HEAD')[:12]}")
    assert f"GOOD {no_benchmarks[:12]} cannot be measured" in line
    assert "benchmarks' does not exist" in line
    assert left_behind(repo) == []


def _processes_in(folder: Path) -> list[str]:
    """Processes whose working directory is inside `folder` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cwd = (entry / "cwd").resolve()
        except OSError:
            continue
        if entry.name.isdigit() and cwd.is_relative_to(folder.resolve()):
            found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()[:200]!r}")
    return found


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="needs Linux /proc")
def test_sigterm_mid_step_cleans_up_and_exits_130(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ids = repository(repo, commits=3)
    with subprocess.Popen(
        [sys.executable, "-m", "perfgate", "bisect", ids[0], ids[-1], *FAST, "--device", "cpu"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            if "first, BAD" in line:
                break
        trees = [
            Path(line.split(" ", 1)[1])
            for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ") and line != f"worktree {repo}"
        ]
        assert len(trees) == 2
        folder = trees[0].parent
        proc.terminate()
        _, errors = proc.communicate(timeout=60)
    assert proc.returncode == 130, errors
    assert "interrupted; the bisect was reset and its worktrees removed" in errors
    assert left_behind(repo) == []
    assert not folder.exists()
    # The step and its workers ran in their own process group, ended with the session.
    assert _processes_in(folder) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("{bad}", "{good}"), "is not an ancestor of BAD"),
        (("{good}", "{good}"), "are the same commit"),
        (("nosuchref", "{bad}"), "GOOD 'nosuchref' is not a commit of the repository"),
        (("{good}", "nosuchref"), "BAD 'nosuchref' is not a commit of the repository"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: tuple[str, str], message: str
) -> None:
    repo = tmp_path / "repo"
    ids = repository(repo, commits=3)
    monkeypatch.chdir(repo)
    given = [a.format(good=ids[0], bad=ids[-1]) for a in arguments]
    result = CliRunner().invoke(cli, ["bisect", *given])
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: ") and message in line
    assert left_behind(repo) == []


def test_outside_a_repository_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["bisect", "HEAD~1", "HEAD"])
    assert result.exit_code == 2
    assert "not inside a git working tree" in result.output


def test_paths_outside_the_repository_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    ids = repository(repo, commits=2)
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(cli, ["bisect", ids[0], ids[1], str(tmp_path)])
    assert result.exit_code == 2
    assert "outside the repository" in result.output


def test_worktrees_are_removed_when_the_session_fails(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ids = repository(repo, commits=3)
    with pytest.raises(KeyboardInterrupt), temporary_worktrees(repo, ids[0], ids[-1]) as trees:
        assert (trees.good / "work.py").read_text().startswith("REVISION = 1\n")
        assert (trees.bisect / "work.py").read_text().startswith("REVISION = 3\n")
        git(trees.bisect, "bisect", "start", ids[-1], ids[0])
        raise KeyboardInterrupt
    assert left_behind(repo) == []
    assert not trees.folder.exists()


# What git 2.39 printed at the end of `git bisect run` (bisect_repos.py's repository).
FOUND = """running  'sh' '-c' 'exit 1'
8f4287d3195aa5a39f8d614b253fa3bef734fb24 is the first bad commit
commit 8f4287d3195aa5a39f8d614b253fa3bef734fb24
Author: a <a@b>

    c11
bisect found first bad commit"""
SKIPPED = """There are only 'skip'ped commits left to test.
The first bad commit could be any of:
4648bf1c8ad32d776c3f2b5807eec244253d8a63
8f4287d3195aa5a39f8d614b253fa3bef734fb24
We cannot bisect more!"""


def test_git_answers_are_parsed() -> None:
    assert parse_first_bad(FOUND) == "8f4287d3195aa5a39f8d614b253fa3bef734fb24"
    assert parse_candidates(FOUND) == ()
    assert parse_first_bad(SKIPPED) is None
    assert parse_candidates(SKIPPED) == (
        "4648bf1c8ad32d776c3f2b5807eec244253d8a63",
        "8f4287d3195aa5a39f8d614b253fa3bef734fb24",
    )


def _line(key: str, verdict: str, ratio: float) -> ResultLine:
    return ResultLine(
        key=key, metric="time", verdict=verdict, ratio=ratio, ci=(ratio, ratio), reason=""
    )


def test_the_first_step_chooses_the_keys_and_their_thresholds() -> None:
    first = StepRecord(
        commit="f" * 40,
        answer="bad",
        exit_code=1,
        reason="a regressed",
        rounds=3,
        results=[_line("a", "regression", 1.21), _line("b", "unchanged", 1.0)],
        slower=["a"],
    )
    keys, thresholds = follow(first, keys=None, threshold=None)
    assert keys == ("a",)
    assert thresholds == pytest.approx({"a": 0.10})
    assert follow(first, keys=["b"], threshold=None) == (("b",), {})
    assert follow(first, keys=None, threshold=0.05) == (("a",), {})
    assert StepRecord.from_json(first.to_json()) == first


def test_filter_for_selects_just_the_keys() -> None:
    assert filter_for(None) is None
    assert filter_for(["checksum"]) == "checksum"
    assert filter_for(["a[n=1]", "b"]) == "a[n=1] or b"
    assert filter_for(["odd key"]) is None


def test_a_step_that_cannot_start_abortsgit(tmp_path: Path) -> None:
    # Exit 1 would mark a commit bad: a step that cannot even read its request answers 128.
    assert main([]) == 128
    assert main([str(tmp_path / "missing.json")]) == 128
