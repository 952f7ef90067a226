"""The fork-safe report half of the action: a fork's artifact is data, its claims are checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from action_env import (
    Actions,
    Repo,
    clone,
    documents,
    fork_artifact,
    git,
    report,
    workflow_run_event,
)
from fake_github import FakeGitHub


@pytest.mark.slow
def test_fork_report_treats_the_artifact_as_data(
    tmp_path: Path, repo: Repo, github: FakeGitHub
) -> None:
    job = Actions(tmp_path, event=workflow_run_event(repo), event_name="workflow_run")
    job.env.update(GITHUB_API_URL=github.url, GITHUB_SHA=repo.main_tip)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", "--branch", "main", f"file://{repo.origin}", "work")
    base_doc, _ = documents(tmp_path, repo)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc), INPUT_DB=db).code == 0
    github.add_pull(7, repo.head, head_owner="forker")

    compared, commented = report(job, work, fork_artifact(tmp_path, repo, pr=7), repo, db)
    assert compared.code == 0, compared.stderr
    assert compared.outputs["base"] == repo.merge_base and compared.outputs["pr"] == "7"
    assert commented.code == 0, commented.stderr
    assert len(github.perfgate_comments(7)) == 1 and github.statuses[0]["sha"] == repo.head
    # Links go to the benchmark run that produced the artifact, not to this report's run 77.
    measured = "https://github.example/acme/models/actions/runs/5"
    assert github.statuses[0]["target_url"] == measured
    assert github.check_runs[0]["details_url"] == measured
    body = github.perfgate_comments(7)[0]["body"]
    assert measured in body and "/actions/runs/77" not in body
    # Nothing from the fork entered the store: only the base run is there.
    from perfgate.store.connect import open_store
    from perfgate.store.row_writes import count_rows

    with open_store(db) as store, store.sessions() as session:
        assert count_rows(session)["runs"] == 1


@pytest.mark.slow
def test_fork_report_refuses_a_forged_pr_number(
    tmp_path: Path, repo: Repo, github: FakeGitHub
) -> None:
    job = Actions(tmp_path, event=workflow_run_event(repo), event_name="workflow_run")
    job.env.update(GITHUB_API_URL=github.url)
    work = clone(repo, tmp_path / "work")
    base_doc, _ = documents(tmp_path, repo)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc), INPUT_DB=db).code == 0
    github.add_pull(8, "9" * 40)  # someone else's PR, which the artifact names
    _, commented = report(job, work, fork_artifact(tmp_path, repo, pr=8), repo, db)
    assert commented.code == 2
    assert "refusing to comment on it" in commented.stderr
    assert not github.comments[8] and not github.statuses


def test_fork_report_refuses_results_of_another_commit(tmp_path: Path, repo: Repo) -> None:
    job = Actions(tmp_path, event=workflow_run_event(repo), event_name="workflow_run")
    work = clone(repo, tmp_path / "work")
    forged = fork_artifact(tmp_path, repo, pr=7, commit="d" * 40)
    compared, _ = report(job, work, forged, repo, f"sqlite:///{tmp_path / 'store.db'}")
    assert compared.code == 2
    assert f"the results are for commit {'d' * 40}, not {repo.head}" in compared.stdout


@pytest.mark.slow
def test_a_non_integer_pr_claim_is_dropped(tmp_path: Path, repo: Repo) -> None:
    job = Actions(tmp_path, event=workflow_run_event(repo), event_name="workflow_run")
    work = clone(repo, tmp_path / "work")
    base_doc, _ = documents(tmp_path, repo)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc), INPUT_DB=db).code == 0
    results = fork_artifact(tmp_path, repo, pr="7; rm -rf /")
    compared, _ = report(job, work, results, repo, db)
    assert compared.code == 0 and compared.outputs["pr"] == ""
    bad = job.run(
        "compare.sh", work, INPUT_RESULTS_FILE=str(results), INPUT_PR="7 --token x", INPUT_DB=db
    )
    assert bad.code == 2 and "is not a pull request number" in bad.stdout


@pytest.mark.slow
def test_fork_report_of_an_artifact_folder_with_no_baseline(
    tmp_path: Path, repo: Repo, github: FakeGitHub
) -> None:
    """The report gets the artifact folder; with an empty store it posts the neutral notice on
    the fork's PR (whose number is still checked against GitHub), linking the measuring run."""
    job = Actions(tmp_path, event=workflow_run_event(repo), event_name="workflow_run")
    job.env.update(GITHUB_API_URL=github.url, GITHUB_SHA=repo.main_tip)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", "--branch", "main", f"file://{repo.origin}", "work")
    github.add_pull(7, repo.head, head_owner="forker")
    folder = fork_artifact(tmp_path, repo, pr=7).parent

    compared, commented = report(job, work, folder, repo, f"sqlite:///{tmp_path / 'empty.db'}")
    assert compared.code == 0, compared.stderr
    assert compared.outputs["no-baseline"] == "true" and compared.outputs["pr"] == "7"
    assert commented.code == 0, commented.stderr
    assert [c["conclusion"] for c in github.check_runs] == ["neutral"]
    assert [(s["state"], s["sha"]) for s in github.statuses] == [("success", repo.head)]
    assert github.statuses[0]["target_url"] == "https://github.example/acme/models/actions/runs/5"
    (comment,) = github.perfgate_comments(7)
    assert comment["body"].splitlines()[1].startswith("**perfgate: no baseline yet.**")
