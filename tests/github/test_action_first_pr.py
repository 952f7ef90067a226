"""End to end, the PR default (`alternate: true`) from an empty store, through the action's
scripts against the fake GitHub: the first PR (it adds the benchmarks, so its base has nothing
to measure) gets a neutral check and a comment saying what to do; once merged, a PR that makes
the code 25x slower goes red on a direct comparison with its merge-base measured in the same
job; reverting it turns the same PR green, with a headline that says so.

The benchmark sleeps (2 ms, then 50 ms) and the threshold is +400% (a ratio of 5), so neither
verdict is close on a busy machine: the slowdown stays a regression unless the base's median
call grew by 8 ms, and the revert stays unchanged unless one side's median grew by 8 ms more
than the other's. A sleep's median overshoot measured 0.1 ms on the 2-core development machine
at a load of 5: both margins are some 80x that. Each round takes the harness's default 20
samples: a verdict also needs each side's median pinned down (its 95% CI within +-15%, the
comparator's noisy check), and with 5 samples a round a few late wake-ups of the 1 ms sleep at
a load of 9 made the base 'too spread' and the slowdown only a possible regression.
The store is the embedded one (no `db`), which lives outside the workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from action_env import Actions, Step, git
from fake_github import FakeGitHub

BENCH = """import perfgate
import mylib


@perfgate.benchmark(params={"n": [1]})
def nap(n: int):
    return lambda: mylib.work()
"""


# What one call sleeps before and after the slowdown.
FAST_S = 0.002
SLOW_S = 0.05


def _mylib(seconds: float) -> str:
    return f"import time\n\n\ndef work():\n    time.sleep({seconds})\n"


def _commit(origin: Path, message: str) -> str:
    git(origin, "add", ".")
    git(origin, "commit", "-q", "-m", message)
    return git(origin, "rev-parse", "HEAD")


def _event(number: int, head: str, base: str) -> dict[str, Any]:
    return {
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"sha": head, "ref": f"pr-{number}", "repo": {"owner": {"login": "acme"}}},
            "base": {"sha": base, "ref": "main"},
        },
    }


def _pr_job(
    tmp: Path, origin: Path, github: FakeGitHub, *, number: int, head: str, name: str
) -> tuple[Actions, dict[str, Step]]:
    """One run of the action on PR `number` at `head`, with its inputs' defaults (alternate
    on, the embedded store): run, upload, compare, comment, gate, as action.yml chains them."""
    base_tip = git(origin, "rev-parse", "main")
    (tmp / name).mkdir()
    job = Actions(tmp / name, event=_event(number, head, base_tip), event_name="pull_request")
    # One runner: the same home (the embedded store's), a fresh workspace each job.
    job.env.update(
        HOME=str(tmp / "runner-home"),
        GITHUB_API_URL=github.url,
        GITHUB_SHA="c" * 40,
        PERFGATE_THREADS="1",
    )
    work = tmp / name / "work"
    git(tmp / name, "clone", "-q", f"file://{origin}", "work")
    git(work, "checkout", "-q", head)
    steps: dict[str, Step] = {}
    steps["run"] = job.run(
        "run.sh",
        work,
        INPUT_BENCHMARKS="benchmarks",
        INPUT_DEVICE="cpu",
        INPUT_ROUNDS="2",
        INPUT_MAX_TIME="0.05",
        INPUT_ALTERNATE="true",  # action.yml's default
    )
    assert steps["run"].code == 0, steps["run"].stderr
    ran = steps["run"].outputs
    steps["upload"] = job.run("upload.sh", work, INPUT_RESULTS_FILE=ran["results"])
    assert steps["upload"].code == 0, steps["upload"].stderr
    steps["compare"] = job.run(
        "compare.sh",
        work,
        INPUT_RESULTS_FILE=ran["results"],
        INPUT_BASE_RESULTS=ran.get("base-results", ""),
        # +400%: the slowdown is +2400%, the revert 0% (margins in the module's docstring).
        INPUT_THRESHOLD="4",
    )
    assert steps["compare"].code == 0, steps["compare"].stderr
    compared = steps["compare"].outputs
    steps["comment"] = job.run(
        "comment.sh",
        work,
        INPUT_COMPARISON=compared["comparison"],
        INPUT_NO_BASELINE=compared.get("no-baseline", ""),
        INPUT_BASE=compared["base"],
        INPUT_BASE_BRANCH=compared["base-branch"],
        INPUT_ALTERNATE=ran.get("alternate", ""),
        INPUT_GITHUB_TOKEN="ghs_actions",
        INPUT_COMMENT_MODE="always",
        INPUT_PR=compared["pr"],
    )
    assert steps["comment"].code == 0, steps["comment"].stderr
    steps["gate"] = job.run(
        "gate.sh", work, INPUT_REGRESSIONS=compared["regressions"], INPUT_FAIL_ON_REGRESSION="true"
    )
    return job, steps


@pytest.mark.slow
def test_first_pr_slowdown_and_revert_with_the_default_action(
    tmp_path: Path, github: FakeGitHub
) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    (origin / "README").write_text("a project without benchmarks yet\n")
    _commit(origin, "start")

    # PR 1 adds the benchmarks: its merge-base has none to measure, and the store is empty.
    git(origin, "checkout", "-q", "-b", "pr-1")
    (origin / "benchmarks").mkdir()
    (origin / "benchmarks" / "bench_lib.py").write_text(BENCH)
    (origin / "mylib.py").write_text(_mylib(FAST_S))
    first_head = _commit(origin, "add benchmarks")
    git(origin, "checkout", "-q", "main")
    github.add_pull(1, first_head)
    job, steps = _pr_job(tmp_path, origin, github, number=1, head=first_head, name="pr1")

    assert steps["run"].outputs["alternate"] == "true"
    assert "base-results" not in steps["run"].outputs  # nothing to measure on the base
    assert steps["compare"].outputs["no-baseline"] == "true"
    assert steps["compare"].outputs["comparison"] == ""
    (check,) = github.check_runs
    assert (check["head_sha"], check["conclusion"]) == (first_head, "neutral")
    (status,) = github.statuses
    assert (status["sha"], status["state"]) == (first_head, "success")
    assert status["description"].startswith("No baseline yet: nothing compared")
    (comment,) = github.perfgate_comments(1)
    line = comment["body"].splitlines()[1]
    assert line.startswith("**perfgate: no baseline yet.** The benchmark job could not measure the")
    assert "Once this PR is merged, `main`'s perfgate workflow stores the history" in line
    assert steps["gate"].code == 0
    assert job.summary.read_text().startswith("**perfgate: no baseline yet.**")
    store = tmp_path / "runner-home" / ".local" / "share" / "perfgate" / "acme" / "models"
    assert (store / "perfgate.db").is_file()  # outside every job's workspace

    # Merged. PR 2 makes the code 25x slower: alternate measures the merge-base in the job.
    git(origin, "merge", "-q", "--ff-only", "pr-1")
    git(origin, "checkout", "-q", "-b", "pr-2")
    (origin / "mylib.py").write_text(_mylib(SLOW_S))
    slow_head = _commit(origin, "slower")
    git(origin, "checkout", "-q", "main")
    github.add_pull(2, slow_head)
    job, steps = _pr_job(tmp_path, origin, github, number=2, head=slow_head, name="pr2")

    assert steps["compare"].outputs["base"] == first_head  # the merge-base, measured here
    assert "no-baseline" not in steps["compare"].outputs
    assert int(steps["compare"].outputs["regressions"]) >= 1
    check = github.check_runs[-1]
    assert (check["head_sha"], check["conclusion"]) == (slow_head, "failure")
    status = github.statuses[-1]
    assert (status["sha"], status["state"]) == (slow_head, "failure")
    (comment,) = github.perfgate_comments(2)
    headline = comment["body"].splitlines()[1]
    assert headline.startswith("### ⚠️ 1 regression"), headline
    assert f"base `{first_head[:7]}`" in headline and f"head `{slow_head[:7]}`" in headline
    assert "`nap[n=1]`" in comment["body"] and "regression" in comment["body"]
    assert steps["gate"].code == 1
    assert "::error title=perfgate::" in steps["gate"].stdout
    assert job.summary.read_text().startswith("### ⚠️ 1 regression")

    # A new push to PR 2 reverts the slowdown: the same comment turns green.
    git(origin, "checkout", "-q", "pr-2")
    (origin / "mylib.py").write_text(_mylib(FAST_S))
    fixed_head = _commit(origin, "revert the slowdown")
    git(origin, "checkout", "-q", "main")
    github.pulls[2].head_sha = fixed_head
    _, steps = _pr_job(tmp_path, origin, github, number=2, head=fixed_head, name="pr2-fixed")

    assert steps["compare"].outputs["regressions"] == "0"
    check = github.check_runs[-1]
    assert (check["head_sha"], check["conclusion"]) == (fixed_head, "success")
    status = github.statuses[-1]
    assert (status["sha"], status["state"]) == (fixed_head, "success")
    (comment,) = github.perfgate_comments(2)  # edited in place, not a second one
    headline = comment["body"].splitlines()[1]
    assert headline.startswith("### ✅ 1 unchanged"), headline
    assert f"base `{first_head[:7]}`" in headline and f"head `{fixed_head[:7]}`" in headline
    assert steps["gate"].code == 0
