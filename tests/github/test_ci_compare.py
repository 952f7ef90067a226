"""`perfgate ci compare` (the action's compare step) in process: the merge-base from real
clones, "no baseline" decided by the typed error and the server's code, forged values refused
with exit 2 and one line, and step outputs that cannot be forged."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from action_env import Repo, clone, git
from click.testing import CliRunner, Result

from perfgate.ci.compare_step import LocalOutcome, StepEnvironment, run_compare_step
from perfgate.ci.merge_base import merge_base
from perfgate.ci.pr_claim import read_pr_claim
from perfgate.ci.server_compare import compare_on_server
from perfgate.ci.step_io import StepOutputs, command_text, error, shown
from perfgate.cli import cli
from perfgate.config import CompareStepInputs
from perfgate.errors import (
    EXIT_USAGE,
    InputError,
    NoBaselineError,
    NotFoundError,
    ServerUnavailableError,
)
from synthetic import synthetic_document

HEAD = "b" * 40
BASE = "a" * 40
FORGED = "7\n::set-output name=pr::666\npr=666"


def _results(tmp: Path, commit: str = HEAD) -> Path:
    path = tmp / "results.json"
    path.write_text(json.dumps(synthetic_document(benchmarks=3, samples=10, seed=1, commit=commit)))
    return path


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


# --- the merge-base, on real clones ---------------------------------------------------------------


def test_merge_base_of_a_full_clone(tmp_path: Path, repo: Repo) -> None:
    work = clone(repo, tmp_path / "work")
    assert merge_base(work, head_sha=repo.head, base_branch="main") == repo.merge_base


def test_a_shallow_clone_is_deepened_until_the_merge_base_is_found(
    tmp_path: Path, repo: Repo
) -> None:
    work = clone(repo, tmp_path / "work", shallow=True)
    assert git(work, "rev-parse", "--is-shallow-repository") == "true"
    assert merge_base(work, head_sha=repo.head, base_branch="main") == repo.merge_base
    # Deepening, not unshallowing: 50 commits were enough for this history of 5.
    assert git(work, "cat-file", "-t", repo.merge_base) == "commit"


def test_no_merge_base_outside_a_checkout_or_without_the_branch(tmp_path: Path, repo: Repo) -> None:
    assert merge_base(tmp_path, head_sha=repo.head, base_branch="main") is None
    work = clone(repo, tmp_path / "work")
    assert merge_base(work, head_sha=repo.head, base_branch="no-such-branch") is None


# --- the use case with a stand-in comparison ------------------------------------------------------


def _step(tmp: Path, **inputs: str) -> tuple[CompareStepInputs, StepEnvironment, list[str]]:
    said: list[str] = []
    output = tmp / "github-output"
    output.touch()

    def never(**_: Any) -> LocalOutcome:
        raise AssertionError("compared although it should not have")

    env = StepEnvironment(
        cwd=tmp,
        outputs=StepOutputs(str(output)),
        say=said.append,
        compare_locally=never,
        server_settings=dict,
        max_bytes=1 << 24,
    )
    given = {"results_file": str(_results(tmp)), "out_dir": str(tmp / "out"), **inputs}
    return CompareStepInputs(**given), env, said


def test_no_baseline_is_the_typed_error_not_its_wording(tmp_path: Path) -> None:
    inputs, env, said = _step(tmp_path, base=BASE, db="sqlite:///x.db")

    def no_baseline(**_: Any) -> LocalOutcome:
        raise NoBaselineError("words that say nothing about baselines")

    run_compare_step(inputs, StepEnvironment(**{**env.__dict__, "compare_locally": no_baseline}))
    out = _outputs(Path(env.outputs.path))
    assert out["no-baseline"] == "true" and out["comparison"] == ""
    assert (out["regressions"], out["gate"], out["base"]) == ("0", "pass", BASE)
    assert said[-1].startswith("::notice title=perfgate::no baseline: the store has no runs of")


def test_another_not_found_is_bad_input_whatever_it_says(tmp_path: Path) -> None:
    inputs, env, _ = _step(tmp_path, base="mian", db="sqlite:///x.db")

    def typo(**_: Any) -> LocalOutcome:
        raise NotFoundError("no baseline: the words of the other error")

    with pytest.raises(NotFoundError):
        run_compare_step(inputs, StepEnvironment(**{**env.__dict__, "compare_locally": typo}))
    assert "no-baseline" not in _outputs(Path(env.outputs.path))


def test_a_push_without_a_previous_commit_compares_nothing(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"before": "0" * 40}))
    inputs, env, said = _step(tmp_path, event_path=str(event), db="sqlite:///x.db")
    run_compare_step(inputs, env)
    assert _outputs(Path(env.outputs.path)) == {
        "pr": "",
        "base-branch": "main",
        "comparison": "",
        "regressions": "0",
        "gate": "pass",
    }
    assert said[-1] == (
        "::notice title=perfgate::no base to compare with (not a pull request, no previous commit)"
    )


# --- the command, as the shim runs it -------------------------------------------------------------


def _invoke(tmp: Path, **inputs: str) -> tuple[Result, Path]:
    output = tmp / "github-output"
    output.write_text("")
    env = {
        "GITHUB_OUTPUT": str(output),
        "GITHUB_EVENT_PATH": "",
        "RUNNER_TEMP": str(tmp / "runner"),
        "HOME": str(tmp),
        **inputs,
    }
    return CliRunner().invoke(cli, ["ci", "compare"], env=env), output


@pytest.mark.parametrize(
    ("inputs", "refusal"),
    [
        ({"INPUT_PR": FORGED}, "pr: "),
        ({"INPUT_HEAD_SHA": FORGED}, "head-sha: "),
        ({"INPUT_BASE_BRANCH": "--upload-pack=evil"}, "base-branch: "),
        ({"INPUT_BASE": "main\npr=666"}, "base: "),
    ],
    ids=["pr", "head-sha", "option-as-branch", "line-break-base"],
)
def test_a_forged_value_is_refused_with_exit_2_and_one_line(
    tmp_path: Path, inputs: dict[str, str], refusal: str
) -> None:
    results = _results(tmp_path)
    done, output = _invoke(
        tmp_path, INPUT_RESULTS_FILE=str(results), INPUT_DB="sqlite:///unused.db", **inputs
    )
    assert done.exit_code == EXIT_USAGE, done.output
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"::error title=perfgate::{refusal}")
    assert "666" not in output.read_text() and "evil" not in output.read_text()
    assert len(done.stderr.splitlines()) == 1


def test_a_forged_commit_in_the_results_is_refused_by_the_validator(tmp_path: Path) -> None:
    results = _results(tmp_path)
    document = json.loads(results.read_text())
    document["run"]["commit"] = FORGED
    results.write_text(json.dumps(document))
    done, output = _invoke(tmp_path, INPUT_RESULTS_FILE=str(results), INPUT_DB="sqlite:///u.db")
    assert done.exit_code == EXIT_USAGE, done.output
    (line,) = done.stdout.splitlines()
    assert line.startswith("::error title=perfgate::results run.commit: must be a hex commit id")
    assert output.read_text() == ""


def test_an_empty_store_is_no_baseline_through_the_real_store(tmp_path: Path) -> None:
    results = _results(tmp_path)
    done, output = _invoke(
        tmp_path,
        INPUT_RESULTS_FILE=str(results),
        INPUT_BASE=BASE,
        INPUT_DB=f"sqlite:///{tmp_path / 'empty.db'}",
    )
    assert done.exit_code == 0, done.output
    out = _outputs(output)
    assert (out["no-baseline"], out["comparison"], out["gate"]) == ("true", "", "pass")


def test_two_documents_compare_and_the_gate_follows_the_regressions(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "round-1.json").write_text(
        json.dumps(synthetic_document(benchmarks=3, samples=30, seed=1, commit=BASE))
    )
    head = tmp_path / "head.json"
    slow = synthetic_document(
        benchmarks=3, samples=30, seed=2, commit=HEAD, slowdown={"kernel[n=128,variant=0]": 2.5}
    )
    head.write_text(json.dumps(slow))
    done, output = _invoke(tmp_path, INPUT_RESULTS_FILE=str(head), INPUT_BASE_RESULTS=str(base))
    assert done.exit_code == 0, done.output
    out = _outputs(output)
    assert (out["base"], out["regressions"], out["gate"]) == (BASE, "1", "fail")
    comparison = json.loads(Path(out["comparison"]).read_text())
    assert comparison["schema"] == "perfgate/comparison@1"


# --- the server's answers -------------------------------------------------------------------------


class _Server(BaseHTTPRequestHandler):
    status: ClassVar[int] = 404
    body: ClassVar[bytes] = b""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _ask(server: str) -> None:
    compare_on_server(server, token="t", project="p", base=BASE, head=HEAD, settings={})


def test_a_404_with_the_no_baseline_code_is_no_baseline(server: str) -> None:
    _Server.status, _Server.body = 404, b'{"error": {"code": "no_baseline", "message": "x"}}'
    with pytest.raises(NoBaselineError):
        _ask(server)


def test_a_404_that_is_no_perfgate_answer_is_a_server_failure(server: str) -> None:
    # A wrong server URL (a proxy's page) must not pass for "no baseline yet".
    _Server.status, _Server.body = 404, b"<html>no baseline here</html>"
    with pytest.raises(ServerUnavailableError, match="answered 404"):
        _ask(server)


def test_a_200_without_a_comparison_is_a_server_failure(server: str) -> None:
    _Server.status, _Server.body = 200, b'{"summary": {"regression": 0}}'
    with pytest.raises(ServerUnavailableError):
        _ask(server)


# --- outputs and workflow commands ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "abc\n"])
def test_an_output_with_a_line_break_is_refused(tmp_path: Path, value: str) -> None:
    outputs = StepOutputs(str(tmp_path / "out"))
    with pytest.raises(InputError, match="output base: refusing a value with a line break"):
        outputs.set("base", value)
    assert not (tmp_path / "out").exists()
    outputs.set("base", "main")
    assert (tmp_path / "out").read_text() == "base=main\n"


def test_workflow_command_text_is_escaped_as_the_runner_decodes_it() -> None:
    assert command_text("50% done\r\n::error::x") == "50%25 done%0D%0A::error::x"
    assert error("a\nb") == "::error title=perfgate::a%0Ab"
    assert "\n" not in error(FORGED)


def test_a_shown_value_is_quoted_and_at_most_80_characters() -> None:
    assert shown("a\nb") == "'a\\nb'"
    long = shown("x" * 200)
    assert len(long) == 80 and long.endswith("...")


# --- the small commands run.sh uses --------------------------------------------------------------


def test_merge_base_command_prints_it_or_fails_without_a_word_on_stdout(
    tmp_path: Path, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = clone(repo, tmp_path / "work", shallow=True)
    monkeypatch.chdir(work)
    found = CliRunner().invoke(cli, ["ci", "merge-base", repo.head, "main", ""])
    assert (found.exit_code, found.stdout) == (0, f"{repo.merge_base}\n")
    missing = CliRunner().invoke(cli, ["ci", "merge-base", repo.head, "nope", "7"])
    assert missing.exit_code == EXIT_USAGE and missing.stdout == ""  # run.sh captures stdout
    assert "no merge-base" in missing.stderr
    option = CliRunner().invoke(cli, ["ci", "merge-base", repo.head, "--", "--upload-pack=x"])
    assert option.exit_code == EXIT_USAGE and "is not a branch or commit name" in option.stderr


def test_event_command_reads_one_field_as_data(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": HEAD}}}))
    env = {"GITHUB_EVENT_PATH": str(event)}
    read = CliRunner().invoke(cli, ["ci", "event", "pull_request", "number"], env=env)
    assert (read.exit_code, read.stdout) == (0, "7\n")
    whole = CliRunner().invoke(cli, ["ci", "event", "pull_request", "head"], env=env)
    assert (whole.exit_code, whole.stdout) == (0, "")  # an object is not a value


def test_pr_claim_round_trip_and_forged_claims(tmp_path: Path) -> None:
    out = tmp_path / "artifact" / "pr.json"
    written = CliRunner().invoke(cli, ["ci", "pr-claim", "7", HEAD, str(out)])
    assert written.exit_code == 0, written.output
    assert json.loads(out.read_text()) == {"pr": 7, "head_sha": HEAD}
    assert read_pr_claim(out) == "7"
    for forged in ('{"pr": "7; rm -rf /"}', '{"pr": true}', '{"pr": -3}', "[7]"):
        out.write_text(forged)
        assert read_pr_claim(out) == ""
    out.write_text("7\n::error::x")
    with pytest.raises(InputError, match="not a JSON object"):
        read_pr_claim(out)
    bad = CliRunner().invoke(cli, ["ci", "pr-claim", "7", FORGED, str(out)])
    assert bad.exit_code == EXIT_USAGE and "is not a commit id" in bad.stderr


def test_run_settings_inputs_then_policy_then_the_actions_three_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    clear = {"INPUT_BENCHMARKS": "", "INPUT_DEVICE": "", "INPUT_ROUNDS": ""}
    bare = CliRunner().invoke(cli, ["ci", "run-settings"], env=clear)
    assert (bare.exit_code, bare.stdout) == (0, "benchmarks\nauto\n3\n")
    (tmp_path / "perfgate.toml").write_text('benchmarks = "perf"\ndevice = "cpu"\nrounds = 2\n')
    policy = CliRunner().invoke(cli, ["ci", "run-settings"], env=clear)
    assert (policy.exit_code, policy.stdout) == (0, "perf\ncpu\n2\n")
    given = {"INPUT_BENCHMARKS": "b", "INPUT_DEVICE": "cuda:1", "INPUT_ROUNDS": "5"}
    inputs = CliRunner().invoke(cli, ["ci", "run-settings"], env=given)
    assert (inputs.exit_code, inputs.stdout) == (0, "b\ncuda:1\n5\n")
    bad = CliRunner().invoke(cli, ["ci", "run-settings"], env={**clear, "INPUT_ROUNDS": "0"})
    assert bad.exit_code == EXIT_USAGE and bad.stdout == ""
    forged = CliRunner().invoke(
        cli, ["ci", "run-settings"], env={**clear, "INPUT_BENCHMARKS": "b\n--evil"}
    )
    assert forged.exit_code == EXIT_USAGE and forged.stdout == ""
