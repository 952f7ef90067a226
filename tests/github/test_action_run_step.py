"""The action's run step (`run.sh`), run as GitHub runs it (see action_env.py): real benchmarks
measured, and `alternate`: the merge-base measured in the same job, rounds interleaved with the
head's, or the head alone where there is no base to measure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from action_env import Actions, Repo, clone, git, make_bench_repo, pr_event

from perfgate.results import parse_document


@pytest.mark.slow
def test_run_step_runs_real_benchmarks(tmp_path: Path, repo: Repo) -> None:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "bench_tiny.py").write_text(
        "import perfgate\n\n"
        "@perfgate.benchmark(params={'n': [8]})\n"
        "def add(n: int):\n"
        "    import torch\n"
        "    a = torch.ones(n)\n"
        "    return lambda: a + a\n"
    )
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    job.env.update(GITHUB_SHA="c" * 40, GITHUB_REF_NAME="7/merge", PERFGATE_THREADS="1")
    ran = job.run(
        "run.sh",
        INPUT_BENCHMARKS=str(bench),
        INPUT_DEVICE="cpu",
        INPUT_ROUNDS="1",
        INPUT_MAX_TIME="0.05",
    )
    assert ran.code == 0, ran.stderr
    out = Path(ran.outputs["dir"])
    document = parse_document(json.loads(Path(ran.outputs["results"]).read_text()))
    assert document.run.commit == repo.head and document.run.pr == 7  # the PR head, not c*40
    assert [b.key for b in document.benchmarks] == ["add[n=8]"]
    assert json.loads((out / "pr.json").read_text()) == {"pr": 7, "head_sha": repo.head}
    assert (out / "traces").is_dir()


@pytest.mark.slow
def test_alternating_rounds_measure_the_merge_base_in_the_same_job(tmp_path: Path) -> None:
    """alternate: the merge-base is checked out and measured, its rounds interleaved with the
    head's, each side importing its own copy of the project; compare reads the two folders."""
    (tmp_path / "origin").mkdir()
    repo = make_bench_repo(tmp_path / "origin", slower=30)
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    job.env.update(PERFGATE_THREADS="1")
    work = clone(repo, tmp_path / "work")
    ran = job.run(
        "run.sh",
        work,
        INPUT_BENCHMARKS="benchmarks",
        INPUT_DEVICE="cpu",
        INPUT_ROUNDS="2",
        INPUT_MAX_TIME="0.05",
        INPUT_ALTERNATE="true",
    )
    assert ran.code == 0, ran.stderr
    out = Path(ran.outputs["dir"])
    assert ran.outputs["results"] == str(out / "head")
    assert ran.outputs["base-results"] == str(out / "base")
    assert ran.stdout.index("round 1/2: base") < ran.stdout.index("round 1/2: head")
    assert ran.stdout.index("round 1/2: head") < ran.stdout.index("round 2/2: base")
    bases = [parse_document(json.loads(p.read_text())) for p in sorted((out / "base").iterdir())]
    heads = [parse_document(json.loads(p.read_text())) for p in sorted((out / "head").iterdir())]
    assert {d.run.commit for d in bases} == {repo.merge_base}
    assert {(d.run.branch, d.run.pr) for d in bases} == {("main", None)}
    assert {(d.run.commit, d.run.pr) for d in heads} == {(repo.head, 7)}
    # The profile pass runs once a side, in the last round.
    assert [d.benchmarks[0].profile is not None for d in heads] == [False, True]
    assert len(git(work, "worktree", "list").splitlines()) == 1  # the base's worktree is gone

    db = f"sqlite:///{tmp_path / 'store.db'}"
    stored = job.run("upload.sh", work, INPUT_RESULTS_FILE=ran.outputs["results"], INPUT_DB=db)
    assert stored.code == 0, stored.stderr
    compared = job.run(
        "compare.sh",
        work,
        INPUT_RESULTS_FILE=ran.outputs["results"],
        INPUT_BASE_RESULTS=ran.outputs["base-results"],
        INPUT_DB=db,
    )
    assert compared.code == 0, compared.stderr
    assert compared.outputs["base"] == repo.merge_base
    comparison = json.loads(Path(compared.outputs["comparison"]).read_text())
    assert len(comparison["base"]["runs"]) == 2 and len(comparison["head"]["runs"]) == 2
    # The head's own mylib (30 additions instead of 1): exactly 30 ops a call, the base's 1.
    # (Time is compared but not asserted: a 2 µs call timed for 0.05 s on a shared machine is
    # sometimes too spread to decide, and live timings are no test's evidence.)
    ops = next(r for r in comparison["results"] if r["metric"] == "op_count")
    assert (ops["base"]["median"], ops["head"]["median"]) == (1, 30)
    assert ops["verdict"] == "regression"
    time = next(r for r in comparison["results"] if r["metric"] == "time")
    assert time["base"]["median"] > 0 and time["head"]["median"] > 0
    flagged = sum(r["verdict"] == "regression" for r in comparison["results"])
    assert compared.outputs["regressions"] == str(flagged)


def test_alternate_with_a_base_that_has_no_benchmarks_measures_the_head_only(
    tmp_path: Path, repo: Repo
) -> None:
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = clone(repo, tmp_path / "work")
    ran = job.run(
        "run.sh",
        work,
        INPUT_BENCHMARKS="benchmarks",
        INPUT_ALTERNATE="true",
        PERFGATE_BIN="true",  # nothing is measured here: only the decision is under test
    )
    assert ran.code == 0, ran.stderr
    assert f"the base {repo.merge_base[:12]} has no benchmarks" in ran.stdout
    assert "base-results" not in ran.outputs


def test_alternate_on_a_push_measures_the_head_only_quietly(tmp_path: Path) -> None:
    """alternate is the default, and main's pushes measure the head alone without a warning."""
    job = Actions(tmp_path, event={"before": "0" * 40}, event_name="push")
    ran = job.run(
        "run.sh",
        INPUT_BENCHMARKS=str(tmp_path / "none"),
        INPUT_ALTERNATE="true",
        PERFGATE_BIN="true",  # nothing is measured here: only the decision is under test
    )
    assert ran.code == 0, ran.stderr
    assert "alternate: not a pull request and no base given" in ran.stdout
    assert "::warning" not in ran.stdout
    assert "base-results" not in ran.outputs and "alternate" not in ran.outputs


def test_alternate_on_a_pr_without_a_merge_base_warns(tmp_path: Path, repo: Repo) -> None:
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    ran = job.run(
        "run.sh",
        INPUT_BENCHMARKS=str(tmp_path / "none"),
        INPUT_ALTERNATE="true",
        PERFGATE_BIN="true",  # nothing is measured here: only the decision is under test
    )  # tmp_path is no git checkout: there is no merge-base
    assert ran.code == 0, ran.stderr
    assert "::warning title=perfgate::alternate: no base commit to measure" in ran.stdout
    assert ran.outputs["alternate"] == "true" and "base-results" not in ran.outputs
