"""ci/action.yml and the example workflows: valid YAML with the keys GitHub requires, inputs wired
through `env:` (composite actions export no INPUT_* variables), and the fork-safe pair's rules."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "ci"
WORKFLOWS = sorted((CI / "workflows").glob("*.yml"))
# Inputs a script reads that have a sensible default and need not come from action.yml.
OPTIONAL_SCRIPT_INPUTS = {"INPUT_OUT_DIR"}
# The first major version of each action that runs on Node 24 (Node 20 is deprecated on runners).
NODE24_MAJOR = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/upload-artifact": 6,
    "actions/download-artifact": 7,
    "actions/github-script": 8,
    "actions/cache": 5,
}


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def _on(workflow: dict[str, Any]) -> dict[str, Any]:
    # YAML 1.1 reads a bare `on` key as the boolean True.
    trigger = workflow.get("on", workflow.get(True))
    assert isinstance(trigger, dict), "`on:` must map events to their settings"
    return trigger


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    return _load(CI / "action.yml")


def test_action_has_the_keys_github_requires(action: dict[str, Any]) -> None:
    assert action["name"] and action["description"]
    for name, spec in action["inputs"].items():
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name), name
        assert spec.get("description"), f"input {name} needs a description"
        assert "default" in spec or spec.get("required"), name
    for name, spec in action["outputs"].items():
        assert spec.get("description") and spec.get("value"), f"output {name}"
    assert set(action["outputs"]) >= {"regressions", "comparison"}
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        assert ("run" in step) != ("uses" in step), step.get("name")
        if "run" in step:
            assert step.get("shell") == "bash", f"composite run steps need a shell: {step}"


def test_action_names_the_inputs_the_issue_asks_for(action: dict[str, Any]) -> None:
    wanted = {
        "benchmarks",
        "device",
        "rounds",
        "max-time",
        "db",
        "server",
        "server-token",
        "github-token",
        "base",
        "fail-on-regression",
        "comment-mode",
    }
    assert wanted <= set(action["inputs"])
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"


def test_every_step_gets_its_inputs_through_env(action: dict[str, Any]) -> None:
    inputs = set(action["inputs"])
    text = (CI / "action.yml").read_text()
    used = set(re.findall(r"\binputs\.([a-z0-9-]+)", text))
    assert used <= inputs, f"unknown inputs referenced: {used - inputs}"
    assert inputs <= used, f"inputs never used: {inputs - used}"
    outputs_by_step = {s.get("id") for s in action["runs"]["steps"]}
    for step in action["runs"]["steps"]:
        if "run" not in step:
            continue
        # Inputs reach the script only through env (no ${{ }} inside the script text itself).
        assert "${{" not in step["run"], f"interpolation in a run script: {step['name']}"
        script = re.search(r"scripts/([a-z-]+\.sh)", step["run"])
        assert script, step["run"]
        path = CI / "scripts" / script.group(1)
        assert path.is_file() and os.access(path, os.X_OK), path
        source = path.read_text() + (CI / "scripts" / "lib.sh").read_text()
        read = set(re.findall(r"\bINPUT_[A-Z_]+\b", source))
        given = set(step.get("env", {}))
        missing = {v for v in read if v not in given} - OPTIONAL_SCRIPT_INPUTS
        # lib.sh's helpers read store inputs only in the steps that call pg_store_env.
        if "pg_store_env" not in path.read_text():
            missing -= {"INPUT_DB", "INPUT_SERVER", "INPUT_SERVER_TOKEN"}
        assert not missing, f"{path.name} reads {sorted(missing)} that action.yml never sets"
        for value in step.get("env", {}).values():
            for ref in re.findall(r"steps\.([a-z]+)\.outputs", str(value)):
                assert ref in outputs_by_step, f"{step['name']} uses unknown step {ref}"


def test_the_artifact_step_keeps_results_even_on_failure(action: dict[str, Any]) -> None:
    (upload,) = [s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["uses"].startswith("actions/upload-artifact@v")
    assert "always()" in upload["if"]
    gate = action["runs"]["steps"][-1]
    assert "gate.sh" in gate["run"]  # the job goes red only after everything was reported


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_have_the_keys_github_requires(path: Path) -> None:
    workflow = _load(path)
    assert workflow["name"]
    assert _on(workflow)
    assert isinstance(workflow.get("permissions"), dict), "every example sets least permissions"
    for name, job in workflow["jobs"].items():
        assert job.get("runs-on"), f"{path.name}: job {name} needs runs-on"
        assert job["steps"], name
        for step in job["steps"]:
            assert ("run" in step) != ("uses" in step), step
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+|\./[\w./-]+", step["uses"])


def _steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every step of a workflow's jobs, or of a composite action."""
    if "runs" in document:
        steps: list[dict[str, Any]] = document["runs"].get("steps", [])
        return steps
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


@pytest.mark.parametrize("path", [*WORKFLOWS, CI / "action.yml"], ids=lambda p: p.name)
def test_no_checkout_leaves_its_token_behind(path: Path) -> None:
    """The benchmarks run the checked-out code; a token in .git/config would be theirs to read."""
    for step in _steps(_load(path)):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, (
                f"{path.name}: {step.get('name', step['uses'])} needs persist-credentials: false"
            )


def _job(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    workflow = _load(CI / "workflows" / path)
    (job,) = workflow["jobs"].values()
    return workflow, job


def _perfgate_step(job: dict[str, Any]) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if s.get("uses", "").endswith("/perfgate/ci@v1")]
    return step


def test_pr_and_main_workflows() -> None:
    pr, job = _job(Path("perfgate-pr.yml"))
    assert "pull_request" in _on(pr) and "pull_request_target" not in _on(pr)
    assert pr["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "statuses": "write",
        "checks": "write",
    }
    assert "self-hosted" in job["runs-on"] and "gpu" in job["runs-on"]
    checkout = job["steps"][0]
    assert checkout["with"]["fetch-depth"] == 0  # the merge-base needs history
    assert _perfgate_step(job)["with"]["db"] == "${{ secrets.PERFGATE_DB }}"

    main, job = _job(Path("perfgate-main.yml"))
    assert _on(main)["push"]["branches"] == ["main"]
    assert main["concurrency"]["cancel-in-progress"] is False  # every main run is history
    # GitHub keeps one pending run per group and cancels the rest: one group for all of main
    # would drop queued commits from the history; one per commit drops none.
    assert "github.sha" in main["concurrency"]["group"]
    assert "pull-requests" not in main["permissions"]
    assert _perfgate_step(job)["with"]["alternate"] == "false"  # main's history: the head only


def test_alternate_is_the_pull_request_default(action: dict[str, Any]) -> None:
    """Alternating rounds are the only verdict independent of another job's machine."""
    alternate = action["inputs"]["alternate"]
    assert alternate["default"] == "true"
    # The description says what each choice costs.
    assert "twice the benchmark time" in alternate["description"]
    assert "main's history" in alternate["description"]
    _, job = _job(Path("perfgate-pr.yml"))
    assert _perfgate_step(job)["with"]["alternate"] == "true"
    _, fork_job = _job(Path("perfgate-fork-benchmarks.yml"))
    assert _perfgate_step(fork_job)["with"]["alternate"] == "true"
    assert fork_job["steps"][0]["with"]["fetch-depth"] == 0  # the merge-base to measure


@pytest.mark.parametrize("path", [*WORKFLOWS, CI / "action.yml"], ids=lambda p: p.name)
def test_actions_run_on_node_24(path: Path) -> None:
    for step in _steps(_load(path)):
        uses = str(step.get("uses", ""))
        if not uses.startswith("actions/"):
            continue
        name, _, version = uses.partition("@")
        assert name in NODE24_MAJOR, f"{path.name}: add {name}'s first Node 24 major to the table"
        major = re.fullmatch(r"v(\d+)(\.\d+)*", version)
        assert major, f"{path.name}: {uses} is not pinned to a version tag"
        assert int(major.group(1)) >= NODE24_MAJOR[name], f"{path.name}: {uses} runs on Node 20"


def test_artifact_names_do_not_collide(action: dict[str, Any]) -> None:
    """upload-artifact refuses a second artifact of the same name in one workflow run."""
    (upload,) = [s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["with"]["name"] == "${{ inputs.artifact-name }}"
    assert "github.job" in action["inputs"]["artifact-name"]["default"]
    for path in WORKFLOWS:
        for job in _load(path)["jobs"].values():
            matrix = job.get("strategy", {}).get("matrix")
            for step in job["steps"]:
                if str(step.get("uses", "")).endswith("/perfgate/ci@v1") and matrix:
                    assert "matrix." in step.get("with", {}).get("artifact-name", ""), path.name


def test_the_embedded_store_is_documented_as_per_runner(action: dict[str, Any]) -> None:
    db = action["inputs"]["db"]["description"]
    assert "outside the workspace" in db and "`db` or `server`" in db


def test_fork_safe_pair() -> None:
    bench, bench_job = _job(Path("perfgate-fork-benchmarks.yml"))
    report, report_job = _job(Path("perfgate-fork-report.yml"))
    # Half 1 runs untrusted code: pull_request (never _target), read-only token, no secrets.
    assert set(_on(bench)) == {"pull_request"}
    assert bench["permissions"] == {"contents": "read"}
    # Forks only: a same-repository PR is measured by perfgate-pr.yml, and twice would race on
    # the one comment.
    assert bench_job["if"] == "github.event.pull_request.head.repo.full_name != github.repository"
    assert "secrets." not in (CI / "workflows" / "perfgate-fork-benchmarks.yml").read_text()
    step = _perfgate_step(bench_job)
    assert step["with"]["run-only"] == "true"
    assert step["with"]["artifact-name"] == "perfgate-results"

    # Half 2 holds the write token: triggered by half 1 finishing, it never checks out PR code.
    trigger = _on(report)["workflow_run"]
    assert trigger["workflows"] == [bench["name"]] and trigger["types"] == ["completed"]
    assert report["permissions"] == {
        "actions": "read",
        "contents": "read",
        "pull-requests": "write",
        "statuses": "write",
        "checks": "write",
    }
    assert "workflow_run.conclusion == 'success'" in report_job["if"]
    assert not any("run" in s for s in report_job["steps"]), "no shell steps on fork data"
    checkout = next(s for s in report_job["steps"] if s["uses"].startswith("actions/checkout"))
    assert checkout["with"]["ref"] == "${{ github.event.repository.default_branch }}"
    download = next(s for s in report_job["steps"] if "download-artifact" in s["uses"])
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["path"].startswith("${{ runner.temp }}")  # outside the workspace
    report_with = _perfgate_step(report_job)["with"]
    assert report_with["head-sha"] == "${{ github.event.workflow_run.head_sha }}"
    assert report_with["upload"] == "false"  # fork results never enter the history
    assert report_with["results"] == "${{ runner.temp }}/fork-results"  # the artifact folder
    # Advisory: a fork's regression never turns the default branch's run red.
    assert report_with["fail-on-regression"] == "false"
    # One report per PR at a time (a fork's PR: its head repository and branch).
    group = report["concurrency"]["group"]
    assert "workflow_run.head_repository.full_name" in group
    assert "workflow_run.head_branch" in group


def test_docs_document_every_input_and_output(action: dict[str, Any]) -> None:
    page = (ROOT / "docs" / "github.md").read_text()
    section = page.split("### Inputs and outputs", 1)[1].split("\n## ", 1)[0]
    for name in [*action["inputs"], *action["outputs"]]:
        assert f"`{name}`" in section, f"docs/github.md's inputs and outputs miss `{name}`"
