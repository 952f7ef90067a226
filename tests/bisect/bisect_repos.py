"""Throwaway git repositories for the bisect tests: a pure-Python benchmark whose work grows
from a planted commit on."""

from __future__ import annotations

import subprocess
from pathlib import Path

BENCHMARK = """import perfgate

import work


@perfgate.benchmark
def checksum():
    return lambda: work.checksum(100)
"""

# Pure-Python arithmetic: the same instructions every call, nothing to cache or sleep on.
WORK = """REVISION = {revision}
FACTOR = {factor}


def checksum(n):
    total = 0
    for i in range(n * FACTOR):
        total = (total * 31 + i) % 1000003
    return total
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=perfgate", "-c", "user.email=perfgate@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def repository(
    root: Path, *, commits: int = 16, slow_from: int | None = 11, factor: int = 100
) -> list[str]:
    """A repository of `commits` commits (ids oldest first); from `slow_from` on, `checksum`
    does `factor` times the work. Commit 1 has the benchmark; every commit changes work.py."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "bench_work.py").write_text(BENCHMARK)
    ids = []
    for number in range(1, commits + 1):
        slow = slow_from is not None and number >= slow_from
        (root / "work.py").write_text(WORK.format(revision=number, factor=factor if slow else 1))
        git(root, "add", "--all")
        git(root, "commit", "--quiet", "-m", f"commit {number}")
        ids.append(git(root, "rev-parse", "HEAD"))
    return ids


def left_behind(repo: Path) -> list[str]:
    """Worktrees and bisect refs a session left in `repo` (none after any session)."""
    trees = [line for line in git(repo, "worktree", "list", "--porcelain").splitlines() if line]
    refs = git(repo, "for-each-ref", "refs/bisect")
    return [t for t in trees if t.startswith("worktree ") and t != f"worktree {repo}"] + (
        [refs] if refs else []
    )
