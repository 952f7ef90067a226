"""The action's shell steps, run as GitHub runs them (see action_env.py): the pull-request
pipeline, merge-base from full and shallow clones, push events, the gate, a perfgate server, and
the install step for real (the run step: test_action_run_step.py)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs

import pytest
from action_env import BIN, Actions, Repo, clone, documents, git, pr_event
from fake_github import FakeGitHub

from perfgate.report.comparison_document import comparison_to_json
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents


@pytest.mark.slow
def test_pull_request_pipeline(tmp_path: Path, repo: Repo, github: FakeGitHub) -> None:
    """upload -> compare (merge-base from git) -> comment -> gate, as the action chains them."""
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = clone(repo, tmp_path / "work")
    base_doc, head_doc = documents(tmp_path, repo)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    job.env.update(GITHUB_API_URL=github.url, GITHUB_SHA="c" * 40)
    github.add_pull(7, repo.head)

    for doc in (base_doc, head_doc):
        up = job.run("upload.sh", work, INPUT_RESULTS_FILE=str(doc), INPUT_DB=db)
        assert up.code == 0, up.stderr
    assert "stored run" in up.stdout + up.stderr

    compared = job.run("compare.sh", work, INPUT_RESULTS_FILE=str(head_doc), INPUT_DB=db)
    assert compared.code == 0, compared.stderr
    assert compared.outputs["base"] == repo.merge_base  # not main's tip, not the PR's base sha
    assert compared.outputs["regressions"] == "1"
    comparison = json.loads(Path(compared.outputs["comparison"]).read_text())
    assert comparison["base"]["commit"] == repo.merge_base
    assert comparison["head"]["commit"] == repo.head

    commented = job.run(
        "comment.sh",
        work,
        INPUT_COMPARISON=compared.outputs["comparison"],
        INPUT_GITHUB_TOKEN="ghs_actions",
        INPUT_COMMENT_MODE="always",
        INPUT_PR=compared.outputs["pr"],
    )
    assert commented.code == 0, commented.stderr
    assert len(github.perfgate_comments(7)) == 1
    assert [s["state"] for s in github.statuses] == ["failure"]
    assert github.check_runs[0]["conclusion"] == "failure"
    assert job.summary.read_text().startswith("### ⚠️ 1 regression")
    assert "::warning title=perfgate%3A kernel[n=128%2Cvariant=0]" in commented.stdout

    gate = job.run("gate.sh", work, INPUT_REGRESSIONS="1", INPUT_FAIL_ON_REGRESSION="true")
    assert gate.code == 1 and "::error title=perfgate::1 performance regression" in gate.stdout
    relaxed = job.run("gate.sh", work, INPUT_REGRESSIONS="1", INPUT_FAIL_ON_REGRESSION="false")
    assert relaxed.code == 0
    assert job.run("gate.sh", work, INPUT_REGRESSIONS="0").code == 0


def test_gate_step(tmp_path: Path) -> None:
    job = Actions(tmp_path, event={}, event_name="pull_request")
    failing = job.run("gate.sh", INPUT_REGRESSIONS="2", INPUT_FAIL_ON_REGRESSION="true")
    assert failing.code == 1
    assert "::error title=perfgate::2 performance regression(s)" in failing.stdout
    assert job.run("gate.sh", INPUT_REGRESSIONS="2", INPUT_FAIL_ON_REGRESSION="false").code == 0
    assert job.run("gate.sh", INPUT_REGRESSIONS="0", INPUT_FAIL_ON_REGRESSION="true").code == 0
    assert job.run("gate.sh", INPUT_REGRESSIONS="", INPUT_FAIL_ON_REGRESSION="true").code == 0


@pytest.mark.slow
def test_shallow_checkout_is_deepened_for_the_merge_base(tmp_path: Path, repo: Repo) -> None:
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = clone(repo, tmp_path / "work", shallow=True)
    assert git(work, "rev-parse", "--is-shallow-repository") == "true"
    base_doc, head_doc = documents(tmp_path, repo)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc), INPUT_DB=db).code == 0
    compared = job.run("compare.sh", work, INPUT_RESULTS_FILE=str(head_doc), INPUT_DB=db)
    assert compared.code == 0, compared.stderr
    assert compared.outputs["base"] == repo.merge_base


def test_an_empty_store_is_no_baseline_and_the_pr_is_told(
    tmp_path: Path, repo: Repo, github: FakeGitHub
) -> None:
    """compare exits 4 (no baseline): the step succeeds with no-baseline=true, and the report
    step posts a neutral check run, a status that does not fail and a one-line comment."""
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    job.env.update(GITHUB_API_URL=github.url, GITHUB_SHA="c" * 40)
    github.add_pull(7, repo.head)
    work = clone(repo, tmp_path / "work")
    _, head_doc = documents(tmp_path, repo)
    compared = job.run(
        "compare.sh",
        work,
        INPUT_RESULTS_FILE=str(head_doc),
        INPUT_DB=f"sqlite:///{tmp_path / 'empty.db'}",
    )
    assert compared.code == 0, compared.stderr
    assert compared.outputs["comparison"] == "" and compared.outputs["regressions"] == "0"
    assert compared.outputs["no-baseline"] == "true"
    assert compared.outputs["base"] == repo.merge_base
    assert compared.outputs["base-branch"] == "main"
    assert "::notice title=perfgate::no baseline: the store has no runs of" in compared.stdout

    reported = job.run(
        "comment.sh",
        work,
        INPUT_NO_BASELINE=compared.outputs["no-baseline"],
        INPUT_BASE=compared.outputs["base"],
        INPUT_BASE_BRANCH=compared.outputs["base-branch"],
        INPUT_COMPARISON=compared.outputs["comparison"],
        INPUT_GITHUB_TOKEN="ghs_actions",
        INPUT_PR=compared.outputs["pr"],
    )
    assert reported.code == 0, reported.stderr
    (check,) = github.check_runs
    assert check["conclusion"] == "neutral"
    assert check["output"]["title"] == "No baseline yet: nothing compared"
    (status,) = github.statuses
    assert (status["state"], status["sha"]) == ("success", repo.head)
    assert status["description"].startswith("No baseline yet: nothing compared")
    (comment,) = github.perfgate_comments(7)
    line = comment["body"].splitlines()[1]
    assert line.startswith("**perfgate: no baseline yet.**")
    assert f"merge-base `{repo.merge_base[:12]}`" in line
    assert "Merge to `main` once" in line and "`alternate: true`" in line
    assert job.summary.read_text().startswith("**perfgate: no baseline yet.**")

    skipped = job.run("comment.sh", work, INPUT_COMPARISON="")
    assert skipped.code == 0 and "nothing was compared" in skipped.stdout


def test_only_the_exit_code_says_no_baseline(tmp_path: Path, repo: Repo) -> None:
    """A base that is a typo in a store with runs is bad input (exit 2), not "no baseline",
    whatever words the error uses."""
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = clone(repo, tmp_path / "work")
    base_doc, head_doc = documents(tmp_path, repo)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc), INPUT_DB=db).code == 0
    typo = job.run(
        "compare.sh", work, INPUT_RESULTS_FILE=str(head_doc), INPUT_BASE="mian", INPUT_DB=db
    )
    assert typo.code == 2, typo.stdout + typo.stderr
    assert "is neither a results file nor a commit or branch" in typo.stderr
    assert "no-baseline" not in typo.outputs


def test_the_embedded_store_survives_the_workspace(tmp_path: Path, repo: Repo) -> None:
    """With neither db nor server the store lives outside the workspace (which checkout
    cleans), one per repository; on a GitHub-hosted runner the step warns that it is lost."""
    job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
    work = clone(repo, tmp_path / "work")
    base_doc, head_doc = documents(tmp_path, repo)
    stored = job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc))
    assert stored.code == 0, stored.stderr
    store = tmp_path / ".local" / "share" / "perfgate" / "acme" / "models" / "perfgate.db"
    assert store.is_file()
    assert not (work / ".perfgate").exists()
    assert f"store: the embedded SQLite store {store}" in stored.stdout
    compared = job.run("compare.sh", work, INPUT_RESULTS_FILE=str(head_doc))
    assert compared.code == 0, compared.stderr
    assert compared.outputs["regressions"] == "1"  # the base came from that store
    job.env.update(RUNNER_ENVIRONMENT="github-hosted", XDG_DATA_HOME=str(tmp_path / "data"))
    hosted = job.run("upload.sh", work, INPUT_RESULTS_FILE=str(base_doc))
    assert hosted.code == 0, hosted.stderr
    assert "::warning title=perfgate::no db or server: the embedded store" in hosted.stdout
    assert (tmp_path / "data" / "perfgate" / "acme" / "models" / "perfgate.db").is_file()


@pytest.mark.slow
def test_push_compares_with_the_previous_tip(tmp_path: Path, repo: Repo) -> None:
    event = {"before": repo.merge_base, "after": repo.head, "ref": "refs/heads/main"}
    job = Actions(tmp_path, event=event, event_name="push")
    base_doc, head_doc = documents(tmp_path, repo, slow=1.0)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert job.run("upload.sh", INPUT_RESULTS_FILE=str(base_doc), INPUT_DB=db).code == 0
    compared = job.run("compare.sh", INPUT_RESULTS_FILE=str(head_doc), INPUT_DB=db)
    assert compared.code == 0, compared.stderr
    assert compared.outputs["base"] == repo.merge_base and compared.outputs["regressions"] == "0"
    (tmp_path / "new-branch").mkdir()
    first_push = {"before": "0" * 40, "after": repo.head}
    first = Actions(tmp_path / "new-branch", event=first_push, event_name="push")
    nothing = first.run("compare.sh", INPUT_RESULTS_FILE=str(head_doc), INPUT_DB=db)
    assert nothing.code == 0 and nothing.outputs["comparison"] == ""


class _StubServer(BaseHTTPRequestHandler):
    """The perfgate service's /api/v1/compare, as far as compare.sh uses it."""

    answer: ClassVar[dict[str, Any]] = {}
    seen: ClassVar[list[tuple[str, str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization", "")))
        if "base=0000000" in self.path:
            status, body = 404, {"error": {"code": "not_found", "message": "no runs"}}
        else:
            status, body = 200, self.answer
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_compare_through_a_perfgate_server(tmp_path: Path, repo: Repo) -> None:
    base_doc, head_doc = documents(tmp_path, repo)
    comparison = compare_documents(
        [parse_document(json.loads(base_doc.read_text()))],
        [parse_document(json.loads(head_doc.read_text()))],
    )
    _StubServer.answer = comparison_to_json(comparison)
    _StubServer.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _StubServer)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        server = f"http://127.0.0.1:{httpd.server_address[1]}"
        job = Actions(tmp_path, event=pr_event(repo), event_name="pull_request")
        compared = job.run(
            "compare.sh",
            INPUT_RESULTS_FILE=str(head_doc),
            INPUT_BASE=repo.merge_base,
            INPUT_SERVER=server,
            INPUT_SERVER_TOKEN="pg_secret",
        )
        assert compared.code == 0, compared.stderr
        assert compared.outputs["regressions"] == "1"
        path, auth = _StubServer.seen[0]
        route, _, query = path.partition("?")
        assert route == "/api/v1/compare" and auth == "Bearer pg_secret"
        assert parse_qs(query) == {
            "project": ["acme/models"],
            "base": [repo.merge_base],
            "head": [repo.head],
        }
        missing = job.run(
            "compare.sh",
            INPUT_RESULTS_FILE=str(head_doc),
            INPUT_BASE="0" * 7,
            INPUT_SERVER=server,
        )
        assert missing.code == 0 and missing.outputs["comparison"] == ""
        assert missing.outputs["no-baseline"] == "true"  # the server's 404
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.mark.slow
def test_install_step_keeps_the_runners_torch(tmp_path: Path) -> None:
    job = Actions(tmp_path, event={}, event_name="push")
    installed = job.run(
        "install.sh",
        INPUT_PYTHON=str(BIN / "python"),
        # Offline: dependencies come from the runner's Python, the build backend too. pip's
        # own environment variables reach it (there is no pip-args input).
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",
    )
    assert installed.code == 0, installed.stderr
    assert "keeping the runner's torch" in installed.stdout
    perfgate = Path(installed.outputs["perfgate"])
    assert perfgate.parent == Path(installed.outputs["python"]).parent
    version = subprocess.run(
        [str(perfgate), "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("perfgate, version")
    # As the action's later steps run it: a PYTHONPATH the test runner was given (a source
    # checkout's service/) would put that perfgate ahead of the installed one.
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [
            installed.outputs["python"],
            "-c",
            "import torch, perfgate; print(torch.__file__); print(perfgate.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=environ,
    )
    torch_file, perfgate_file = probe.stdout.split()
    venv = perfgate.parent.parent
    assert not torch_file.startswith(str(venv))  # the runner's torch, not a new download
    assert perfgate_file.startswith(str(venv))  # perfgate itself lives in the new environment
