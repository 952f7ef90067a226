"""compare.sh against a hostile artifact: forged values never become workflow commands or step
outputs, and the perfgate server's token travels in a header, one line only."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from action_env import Actions, Step

from perfgate.report.comparison_document import comparison_to_json
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from synthetic import synthetic_document

# A line break would end the `::error` command and start one of the attacker's, or end the
# `base=` output line and add a `pr=` output of theirs.
FORGED = "abc1234\n::set-output name=pr::666\npr=666\n::add-mask::x"
HEAD = "b" * 40
BASE = "a" * 40


def _document(folder: Path, commit: str, name: str = "results.json") -> Path:
    # A valid document but for the commit, which may be forged.
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    document = synthetic_document(benchmarks=2, samples=10, seed=1, commit=HEAD)
    document["run"].update(commit=commit, project="acme/models")
    path.write_text(json.dumps(document))
    return path


def _stub(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + script)
    path.chmod(0o755)


@pytest.fixture
def job(tmp_path: Path) -> Actions:
    """A workflow_run job whose perfgate executable is a stub that records being run."""
    job = Actions(tmp_path, event={}, event_name="workflow_run")
    stubs = tmp_path / "stubs"
    _stub(stubs, "perfgate", 'touch "$STUB_LOG/perfgate.ran"\n')
    job.env.update(
        PATH=f"{stubs}:{job.env['PATH']}",
        PERFGATE_BIN=str(stubs / "perfgate"),
        STUB_LOG=str(tmp_path),
    )
    return job


def _output_file(job: Actions) -> str:
    return (job.tmp / f"output-{job.steps}").read_text()


def _commands(step: Step) -> list[str]:
    return [line for line in step.stdout.splitlines() if line.startswith("::")]


def _hostile_head(tmp: Path) -> dict[str, str]:
    # The fork report: the artifact's results claim a commit with commands in it.
    results = _document(tmp / "fork", FORGED)
    return {"INPUT_RESULTS_FILE": str(results), "INPUT_HEAD_SHA": HEAD}


def _hostile_base(tmp: Path) -> dict[str, str]:
    # An alternating artifact: the head is fine, the `base` folder beside it is forged.
    head = _document(tmp / "fork" / "head", HEAD, "round-1.json")
    base = _document(tmp / "fork" / "base", FORGED, "round-1.json")
    return {"INPUT_RESULTS_FILE": str(head.parent), "INPUT_BASE_RESULTS": str(base.parent)}


def _hostile_pr(tmp: Path) -> dict[str, str]:
    results = _document(tmp / "fork", HEAD)
    return {"INPUT_RESULTS_FILE": str(results), "INPUT_PR": FORGED}


@pytest.mark.parametrize(
    ("make", "refusal"),
    [
        (_hostile_head, "results run.commit: "),
        (_hostile_base, "base results run.commit: "),
        (_hostile_pr, "pr: "),
    ],
    ids=["head-commit", "base-commit", "pr"],
)
def test_a_forged_value_is_refused_before_any_use(
    job: Actions, make: Callable[[Path], dict[str, str]], refusal: str
) -> None:
    compared = job.run("compare.sh", None, INPUT_DB="sqlite:///unused.db", **make(job.tmp))
    assert compared.code == 2, compared.stderr
    # One workflow command, the refusal, on one line; none of the artifact's.
    (command,) = _commands(compared)
    assert command.startswith(f"::error title=perfgate::{refusal}")
    assert any(
        words in command
        for words in ("must be a hex commit id", "is not a commit id", "is not a pull request")
    )
    assert "666" not in _output_file(job) and "pr" not in compared.outputs.get("base", "")
    assert "set-output" not in "".join(compared.outputs)
    assert not (job.tmp / "perfgate.ran").exists()  # nothing ran on the forged value


class _Server(BaseHTTPRequestHandler):
    """A perfgate server's /api/v1/compare that records what it was sent."""

    answer: ClassVar[bytes] = b""
    seen: ClassVar[list[tuple[str, str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization", "")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)


@pytest.fixture
def server(job: Actions) -> Iterator[str]:
    head = parse_document(json.loads(_document(job.tmp / "server", HEAD).read_text()))
    _Server.answer = json.dumps(comparison_to_json(compare_documents([head], [head]))).encode()
    _Server.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_server_token_travels_in_a_header_on_one_line(job: Actions, server: str) -> None:
    results = _document(job.tmp / "head", HEAD)
    inputs = {"INPUT_RESULTS_FILE": str(results), "INPUT_BASE": BASE, "INPUT_SERVER": server}
    compared = job.run("compare.sh", None, INPUT_SERVER_TOKEN="pg_secret_token", **inputs)
    assert compared.code == 0, compared.stderr
    assert compared.outputs["regressions"] == "0"
    ((path, auth),) = _Server.seen
    assert path.startswith("/api/v1/compare?") and "pg_secret_token" not in path
    assert auth == "Bearer pg_secret_token"
    assert "pg_secret_token" not in compared.stdout + compared.stderr
    assert not (job.tmp / "perfgate.ran").exists()  # no other process was given the token

    injected = job.run("compare.sh", None, INPUT_SERVER_TOKEN="pg\nX-Forwarded-For: 1", **inputs)
    assert injected.code == 2
    (command,) = _commands(injected)
    assert command.startswith("::error title=perfgate::server-token: ")
    assert len(_Server.seen) == 1  # the forged header was never sent
