"""A simulated GitHub Actions job for the action's step scripts: event file, GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY and RUNNER_TEMP set to files, a temporary git repository for the merge-base."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synthetic import synthetic_document

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "ci" / "scripts"
BIN = Path(sys.executable).parent
SLOW_KEY = "kernel[n=128,variant=0]"


@dataclass
class Step:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60
    )
    return done.stdout.strip()


@dataclass
class Repo:
    origin: Path
    merge_base: str
    head: str
    main_tip: str


def make_repo(origin: Path) -> Repo:
    """origin: main with 3 commits, `feature` forked after the 2nd with 2 of its own."""
    git(origin, "init", "-q", "-b", "main")

    def commit(name: str) -> str:
        (origin / f"{name}.txt").write_text(name)
        git(origin, "add", ".")
        git(origin, "commit", "-q", "-m", name)
        return git(origin, "rev-parse", "HEAD")

    commit("one")
    fork = commit("two")
    git(origin, "checkout", "-q", "-b", "feature")
    commit("f1")
    head = commit("f2")
    git(origin, "checkout", "-q", "main")
    tip = commit("three")
    return Repo(origin=origin, merge_base=fork, head=head, main_tip=tip)


BENCH_FILE = """import perfgate
import mylib


@perfgate.benchmark(params={"n": [8]})
def work(n: int):
    import torch

    a = torch.ones(n)
    return lambda: mylib.work(a)
"""


def make_bench_repo(origin: Path, *, slower: int) -> Repo:
    """Like make_repo, with a benchmark of the project's own `mylib`, which the PR makes
    `slower` times as much work; each side must import its own checkout's copy."""
    git(origin, "init", "-q", "-b", "main")

    def commit(message: str, ops: int | None = None) -> str:
        if ops is not None:
            (origin / "mylib.py").write_text(
                f"def work(a):\n    for _ in range({ops}):\n        a = a + 1\n    return a\n"
            )
        git(origin, "add", ".")
        git(origin, "commit", "-q", "-m", message)
        return git(origin, "rev-parse", "HEAD")

    (origin / "benchmarks").mkdir()
    (origin / "benchmarks" / "bench_lib.py").write_text(BENCH_FILE)
    fork = commit("benchmark mylib", ops=1)
    git(origin, "checkout", "-q", "-b", "feature")
    head = commit("slower mylib", ops=slower)
    git(origin, "checkout", "-q", "main")
    (origin / "README").write_text("later on main")
    tip = commit("later")
    return Repo(origin=origin, merge_base=fork, head=head, main_tip=tip)


class Actions:
    """One job's environment: files GitHub provides, and a way to run a step script."""

    def __init__(self, tmp: Path, *, event: dict[str, Any], event_name: str) -> None:
        self.tmp = tmp
        (tmp / "runner").mkdir(exist_ok=True)
        self.event_path = tmp / "event.json"
        self.event_path.write_text(json.dumps(event))
        self.summary = tmp / "summary.md"
        self.env: dict[str, str] = {
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(tmp),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(self.event_path),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_REPOSITORY": "acme/models",
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": "77",
            "RUNNER_TEMP": str(tmp / "runner"),
            "PERFGATE_BIN": str(BIN / "perfgate"),
            "PERFGATE_PY": str(BIN / "python"),
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        }
        self.steps = 0

    def run(self, script: str, cwd: Path | None = None, **inputs: str) -> Step:
        self.steps += 1
        output = self.tmp / f"output-{self.steps}"
        output.write_text("")
        env = {**self.env, "GITHUB_OUTPUT": str(output), **inputs}
        done = subprocess.run(
            ["bash", str(SCRIPTS / script)],
            cwd=cwd or self.tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        outputs = dict(
            line.split("=", 1) for line in output.read_text().splitlines() if "=" in line
        )
        return Step(done.returncode, done.stdout, done.stderr, outputs)


def pr_event(repo: Repo, number: int = 7) -> dict[str, Any]:
    return {
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"sha": repo.head, "ref": "feature", "repo": {"owner": {"login": "acme"}}},
            "base": {"sha": repo.main_tip, "ref": "main"},
        },
    }


def clone(repo: Repo, where: Path, *, shallow: bool = False) -> Path:
    args = ["clone", "-q", "--branch", "feature"]
    if shallow:
        args += ["--depth", "1"]
    git(where.parent, *args, f"file://{repo.origin}", where.name)
    return where


def documents(tmp: Path, repo: Repo, *, slow: float = 2.5) -> tuple[Path, Path]:
    base = synthetic_document(benchmarks=10, samples=30, seed=1, commit=repo.merge_base)
    head = synthetic_document(
        benchmarks=10,
        samples=30,
        seed=2,
        commit=repo.head,
        branch="feature",
        slowdown={SLOW_KEY: slow},
    )
    head["run"]["pr"] = 7
    (tmp / "base.json").write_text(json.dumps(base))
    (tmp / "head.json").write_text(json.dumps(head))
    return tmp / "base.json", tmp / "head.json"


def fork_artifact(tmp: Path, repo: Repo, *, pr: object, commit: str | None = None) -> Path:
    folder = tmp / "fork-results"
    folder.mkdir()
    head = synthetic_document(
        benchmarks=10,
        samples=30,
        seed=2,
        commit=commit or repo.head,
        branch="main",
        slowdown={SLOW_KEY: 2.5},
    )
    (folder / "results.json").write_text(json.dumps(head))
    (folder / "pr.json").write_text(json.dumps({"pr": pr, "head_sha": repo.head}))
    return folder / "results.json"


def workflow_run_event(repo: Repo) -> dict[str, Any]:
    return {
        "workflow_run": {
            "id": 5,
            # The benchmark run that uploaded the artifact: what the report links to.
            "html_url": "https://github.example/acme/models/actions/runs/5",
            "event": "pull_request",
            "conclusion": "success",
            "head_sha": repo.head,
            "head_branch": "feature",
            "head_repository": {"full_name": "forker/models", "owner": {"login": "forker"}},
            "pull_requests": [],
        }
    }


def report(job: Actions, work: Path, results: Path, repo: Repo, db: str) -> tuple[Step, Step]:
    """The fork-report job: run.sh (report mode), upload.sh (skipped), compare.sh, comment.sh."""
    ran = job.run("run.sh", work, INPUT_RESULTS=str(results))
    assert ran.code == 0, ran.stderr
    skipped = job.run(
        "upload.sh",
        work,
        INPUT_RESULTS_FILE=ran.outputs["results"],
        INPUT_UPLOAD="false",
        INPUT_DB=db,
    )
    assert skipped.code == 0 and "not storing" in skipped.stdout
    compared = job.run(
        "compare.sh",
        work,
        INPUT_RESULTS_FILE=ran.outputs["results"],
        INPUT_RESULTS=str(results),
        INPUT_HEAD_SHA=repo.head,
        INPUT_BASE_BRANCH="main",
        INPUT_DB=db,
    )
    if compared.code != 0:
        return compared, compared
    commented = job.run(
        "comment.sh",
        work,
        # Wired as action.yml wires the report step.
        INPUT_COMPARISON=compared.outputs["comparison"],
        INPUT_NO_BASELINE=compared.outputs.get("no-baseline", ""),
        INPUT_BASE=compared.outputs.get("base", ""),
        INPUT_BASE_BRANCH=compared.outputs.get("base-branch", ""),
        INPUT_ALTERNATE=ran.outputs.get("alternate", ""),
        INPUT_GITHUB_TOKEN="ghs_actions",
        INPUT_PR=compared.outputs["pr"],
        INPUT_HEAD_SHA=repo.head,
    )
    return compared, commented
