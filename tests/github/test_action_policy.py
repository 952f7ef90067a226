"""The action under a project's policy file: nothing in it overrides the policy, whose gate decides
the status, the check run and the job's exit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from action_env import SLOW_KEY, Actions, Repo, documents, pr_event
from fake_github import FakeGitHub

from perfgate.results import parse_document

INFORMATIONAL = f'[tool.perfgate.overrides."{SLOW_KEY}"]\ninformational = true\n'


def checkout(tmp_path: Path, policy: str | None) -> Path:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    if policy is not None:
        (work / "pyproject.toml").write_text(
            f'[project]\nname = "acme"\n\n[tool.perfgate]\n{policy}'
        )
    return work


@pytest.mark.parametrize(("policy", "gate"), [(None, "fail"), (INFORMATIONAL, "pass")])
def test_an_informational_regression_is_reported_and_passes_the_gate(
    tmp_path: Path, repo: Repo, github: FakeGitHub, policy: str | None, gate: str
) -> None:
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    job.env.update(GITHUB_API_URL=github.url)
    github.add_pull(7, repo.head)
    work = checkout(tmp_path, policy)
    base_doc, head_doc = documents(tmp_path, repo)

    compared = job.run(
        "compare.sh", work, INPUT_RESULTS_FILE=str(head_doc), INPUT_BASE_RESULTS=str(base_doc)
    )
    assert compared.code == 0, compared.stderr
    assert compared.outputs["regressions"] == "1"  # reported either way
    assert compared.outputs["gate"] == gate

    commented = job.run(
        "comment.sh",
        work,
        INPUT_COMPARISON=compared.outputs["comparison"],
        INPUT_GITHUB_TOKEN="ghs_actions",
        INPUT_PR="7",
    )
    assert commented.code == 0, commented.stderr
    conclusion = "failure" if gate == "fail" else "success"
    assert [s["state"] for s in github.statuses] == [conclusion]
    assert github.check_runs[0]["conclusion"] == conclusion
    assert job.summary.read_text().startswith("### ⚠️ 1 regression")

    gated = job.run(
        "gate.sh",
        work,
        INPUT_REGRESSIONS=compared.outputs["regressions"],
        INPUT_GATE=compared.outputs["gate"],
        INPUT_FAIL_ON_REGRESSION="true",
    )
    assert gated.code == (1 if gate == "fail" else 0), gated.stdout


def test_fail_on_missing_fails_the_gate_step(tmp_path: Path, repo: Repo) -> None:
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = checkout(tmp_path, 'fail_on = ["regression", "missing"]\n')
    base_doc, head_doc = documents(tmp_path, repo, slow=1.0)
    head = json.loads(head_doc.read_text())
    head["benchmarks"] = head["benchmarks"][1:]
    head_doc.write_text(json.dumps(head))

    compared = job.run(
        "compare.sh", work, INPUT_RESULTS_FILE=str(head_doc), INPUT_BASE_RESULTS=str(base_doc)
    )
    assert compared.code == 0, compared.stderr
    assert (compared.outputs["regressions"], compared.outputs["gate"]) == ("0", "fail")
    gated = job.run("gate.sh", work, INPUT_REGRESSIONS="0", INPUT_GATE="fail")
    assert gated.code == 1 and "fail_on" in gated.stdout


def test_a_bad_policy_stops_the_compare_step_with_exit_2(tmp_path: Path, repo: Repo) -> None:
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = checkout(tmp_path, "treshold = 0.1\n")
    base_doc, head_doc = documents(tmp_path, repo)
    compared = job.run(
        "compare.sh", work, INPUT_RESULTS_FILE=str(head_doc), INPUT_BASE_RESULTS=str(base_doc)
    )
    assert compared.code == 2
    assert "pyproject.toml: tool.perfgate.treshold: unknown key" in compared.stderr


@pytest.mark.slow
def test_the_run_step_takes_benchmarks_device_and_rounds_from_the_policy(
    tmp_path: Path,
) -> None:
    work = checkout(tmp_path, 'benchmarks = "perf"\ndevice = "cpu"\nrounds = 2\n')
    (work / "perf").mkdir()
    (work / "perf" / "bench_tiny.py").write_text(
        "import perfgate\n\n"
        "@perfgate.benchmark(params={'n': [8]})\n"
        "def add(n: int):\n"
        "    import torch\n"
        "    a = torch.ones(n)\n"
        "    return lambda: a + a\n"
    )
    job = Actions(tmp_path, event={}, event_name="push")
    job.env.update(GITHUB_SHA="c" * 40, GITHUB_REF_NAME="main", PERFGATE_THREADS="1")
    ran = job.run("run.sh", work, INPUT_MAX_TIME="0.05")
    assert ran.code == 0, ran.stderr
    document = parse_document(json.loads(Path(ran.outputs["results"]).read_text()))
    assert [b.key for b in document.benchmarks] == ["add[n=8]"]
    assert document.benchmarks[0].device == "cpu"
    assert len(document.benchmarks[0].metrics["time"].round_slices()) == 2
