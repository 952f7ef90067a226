"""compare.sh against a hostile artifact: forged values never become workflow commands or step
outputs, and the perfgate server's token never appears on a command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from action_env import Actions, Step

# A line break would end the `::error` command and start one of the attacker's, or end the
# `base=` output line and add a `pr=` output of theirs.
FORGED = "abc1234\n::set-output name=pr::666\npr=666\n::add-mask::x"
HEAD = "b" * 40
BASE = "a" * 40


def _document(folder: Path, commit: str, name: str = "results.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"run": {"commit": commit, "project": "acme/models"}}))
    return path


def _stub(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + script)
    path.chmod(0o755)


@pytest.fixture
def job(tmp_path: Path) -> Actions:
    """A workflow_run job whose perfgate and curl are stubs that record being run."""
    job = Actions(tmp_path, event={}, event_name="workflow_run")
    stubs = tmp_path / "stubs"
    _stub(stubs, "perfgate", 'touch "$STUB_LOG/perfgate.ran"\n')
    _stub(
        stubs,
        "curl",
        'printf "%s\\n" "$@" > "$STUB_LOG/curl.argv"\n'
        'cat > "$STUB_LOG/curl.stdin"\n'
        "while [ $# -gt 0 ]; do\n"
        '  if [ "$1" = --output ]; then printf \'{"summary": {"regression": 0}}\' > "$2"; fi\n'
        "  shift\n"
        "done\n"
        "printf 200\n",
    )
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
    assert "is not a commit id" in command or "is not a pull request number" in command
    assert "666" not in _output_file(job) and "pr" not in compared.outputs.get("base", "")
    assert "set-output" not in "".join(compared.outputs)
    assert not (job.tmp / "perfgate.ran").exists()  # nothing ran on the forged value


def test_server_token_travels_on_stdin_not_argv(job: Actions) -> None:
    results = _document(job.tmp / "head", HEAD)
    inputs = {
        "INPUT_RESULTS_FILE": str(results),
        "INPUT_BASE": BASE,
        "INPUT_SERVER": "https://perf.example/",
    }
    compared = job.run("compare.sh", None, INPUT_SERVER_TOKEN="pg_secret_token", **inputs)
    assert compared.code == 0, compared.stderr
    assert compared.outputs["regressions"] == "0"
    argv = (job.tmp / "curl.argv").read_text()
    assert "pg_secret_token" not in argv
    assert "https://perf.example/api/v1/compare" in argv.splitlines()
    assert (job.tmp / "curl.stdin").read_text() == "Authorization: Bearer pg_secret_token\n"

    (job.tmp / "curl.argv").unlink()
    injected = job.run("compare.sh", None, INPUT_SERVER_TOKEN="pg\nX-Forwarded-For: 1", **inputs)
    assert injected.code == 2
    (command,) = _commands(injected)
    assert command.startswith("::error title=perfgate::server-token: ")
    assert not (job.tmp / "curl.argv").exists()
