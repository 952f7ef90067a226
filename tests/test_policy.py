"""The project's policy file: what it changes in compare, comment's gate and `perfgate config`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.policy import discover_policy, find_policy_file, glob_matches
from perfgate.report.checks import check_conclusion, status_state
from perfgate.report.comparison_document import comparison_from_json
from synthetic import synthetic_document

SLOW_KEY = "kernel[n=128,variant=0]"
ENV = ("PERFGATE_COMPARE_THRESHOLD", "PERFGATE_COMPARE_ALPHA", "PERFGATE_COMPARE_FAIL_ON")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root (its own .git, so the search stops there) as the working directory."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    for name in (*ENV, "PERFGATE_RUN_ROUNDS", "PERFGATE_RUN_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    return root


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def write_pair(
    where: Path, *, slowdown: float, drop: str | None = None, benchmarks: int = 20
) -> tuple[str, str]:
    """Recorded-style synthetic results (fixed seeds): SLOW_KEY `slowdown` times slower in head;
    `drop` leaves a benchmark out of head."""
    base = synthetic_document(benchmarks=benchmarks, samples=40, seed=1, commit="a" * 40)
    head = synthetic_document(
        benchmarks=benchmarks,
        samples=40,
        seed=2,
        commit="b" * 40,
        branch="feature",
        slowdown={SLOW_KEY: slowdown},
    )
    if drop:
        head["benchmarks"] = [b for b in head["benchmarks"] if b["key"] != drop]
    paths = where / "base.json", where / "head.json"
    for path, document in zip(paths, (base, head), strict=True):
        path.write_text(json.dumps(document))
    return str(paths[0]), str(paths[1])


def compare_json(base: str, head: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    result = invoke(
        "compare", base, head, "--format", "json", "--db", "sqlite:///absent.db", *extra, env=env
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def time_result(data: Any, key: str) -> Any:
    return next(r for r in data["results"] if r["key"] == key and r["metric"] == "time")


def pyproject(root: Path, text: str) -> Path:
    path = root / "pyproject.toml"
    path.write_text('[project]\nname = "acme"\n\n[tool.perfgate]\n' + text)
    return path


def test_a_per_benchmark_threshold_turns_a_regression_unchanged(project: Path) -> None:
    base, head = write_pair(project, slowdown=1.5)
    before = time_result(compare_json(base, head), SLOW_KEY)
    assert before["verdict"] == "regression" and before["threshold"] == 0.03

    # Brackets in a glob are literal: the key itself, and a `*` pattern for the rest.
    pyproject(project, f'[tool.perfgate.overrides."{SLOW_KEY}"]\nthreshold = 1.0\n')
    after = compare_json(base, head)
    slow = time_result(after, SLOW_KEY)
    assert slow["verdict"] == "unchanged" and slow["threshold"] == 1.0
    assert slow["ratio"] == pytest.approx(before["ratio"])  # same statistics, looser threshold
    others = [r for r in after["results"] if r["key"] != SLOW_KEY and r["metric"] == "time"]
    assert {r["threshold"] for r in others} == {0.03}


def test_ignore_leaves_benchmarks_out_of_the_comparison_and_says_so(project: Path) -> None:
    base, head = write_pair(project, slowdown=1.5)
    pyproject(project, '[tool.perfgate.overrides."kernel[n=128,*"]\nignore = true\n')
    data = compare_json(base, head)
    keys = {r["key"] for r in data["results"]}
    assert not any(k.startswith("kernel[n=128,") for k in keys)
    assert len(keys) == 17  # 20 benchmarks, 3 with n=128
    assert data["summary"]["regression"] == 0
    assert any(
        "pyproject.toml [tool.perfgate]): 3 benchmarks" in w and "ignored" in w
        for w in data["warnings"]
    )
    markdown = invoke("compare", base, head, "--format", "markdown", "--db", "sqlite:///a.db")
    assert "3 benchmarks" in markdown.stdout and "ignored" in markdown.stdout


def test_config_shows_threshold_and_ignore_with_their_source(project: Path) -> None:
    pyproject(
        project,
        "threshold = 0.05\nrounds = 3\n"
        f'[tool.perfgate.overrides."{SLOW_KEY}"]\nthreshold = 1.0\n'
        '[tool.perfgate.overrides."legacy*"]\nignore = true\n',
    )
    text = invoke("config")
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == "policy file: pyproject.toml [tool.perfgate]"
    assert any(
        line.split()[:2] == ["threshold", "0.05"]
        and line.endswith("policy file pyproject.toml [tool.perfgate]")
        for line in lines
    )
    assert any(line.split()[:2] == ["alpha", "0.05"] and line.endswith("default") for line in lines)
    assert f'  "{SLOW_KEY}": threshold 1.0' in lines
    assert '  "legacy*": ignore' in lines

    data = json.loads(invoke("config", "--json").stdout)
    assert data["policy"] == str(project / "pyproject.toml")
    assert data["settings"]["threshold"] == {
        "value": 0.05,
        "source": "policy",
        "origin": "pyproject.toml [tool.perfgate]",
    }
    assert data["settings"]["device"]["source"] == "default"
    assert data["overrides"] == [
        {"match": SLOW_KEY, "threshold": 1.0, "source": "pyproject.toml [tool.perfgate]"},
        {"match": "legacy*", "ignore": True, "source": "pyproject.toml [tool.perfgate]"},
    ]


def test_flag_beats_env_beats_file(project: Path) -> None:
    pyproject(project, "threshold = 0.2\nalpha = 0.1\nrounds = 4\n")

    def sources(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        result = invoke("config", "--json", *args, env=env)
        assert result.exit_code == 0, result.output
        found = json.loads(result.stdout)["settings"].items()
        return {k: (v["value"], v["origin"]) for k, v in found}

    env = {"PERFGATE_COMPARE_THRESHOLD": "0.1", "PERFGATE_RUN_ROUNDS": "2"}
    policy = "pyproject.toml [tool.perfgate]"
    assert sources()["threshold"] == (0.2, policy)
    assert sources(env=env)["threshold"] == (0.1, "PERFGATE_COMPARE_THRESHOLD")
    assert sources(env=env)["rounds"] == (2, "PERFGATE_RUN_ROUNDS")
    flagged = sources("--threshold", "0.05", env=env)
    assert flagged["threshold"] == (0.05, "--threshold")
    assert flagged["alpha"] == (0.1, policy)

    # compare resolves the same way.
    base, head = write_pair(project, slowdown=1.0)
    assert compare_json(base, head)["settings"] == {"alpha": 0.1, "threshold": 0.2}
    assert compare_json(base, head, env=env)["settings"]["threshold"] == 0.1
    assert compare_json(base, head, "--threshold", "0.05", env=env)["settings"]["threshold"] == 0.05


def test_unknown_key_exits_2_naming_key_and_file(project: Path) -> None:
    pyproject(project, "treshold = 0.05\n")
    for args in (("config",), ("compare", "a.json", "b.json")):
        result = invoke(*args)
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1, result.stderr  # one line
        assert "pyproject.toml: tool.perfgate.treshold: unknown key" in result.stderr

    pyproject(project, '[tool.perfgate.overrides."x*"]\ninformative = true\n')
    result = invoke("config")
    assert result.exit_code == 2
    assert 'tool.perfgate.overrides."x*".informative: unknown key' in result.stderr

    (project / "pyproject.toml").unlink()
    (project / "perfgate.toml").write_text('rounds = "three"\n')
    result = invoke("config")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: perfgate.toml: rounds: expected a whole number")

    (project / "perfgate.toml").write_text('fail_on = ["regression", "slower"]\n')
    result = invoke("config")
    assert result.exit_code == 2
    assert "perfgate.toml: fail_on: 'slower' is not one of" in result.stderr

    (project / "perfgate.toml").write_text("threshold = \n")
    result = invoke("config")
    assert result.exit_code == 2 and result.stderr.startswith("error: ")
    assert "perfgate.toml: not valid TOML" in result.stderr


def test_informational_benchmarks_never_fail_the_gate(project: Path) -> None:
    base, head = write_pair(project, slowdown=1.5)
    args = ("compare", base, head, "--fail-on-regression", "--db", "sqlite:///absent.db")
    assert invoke(*args).exit_code == 1

    pyproject(project, f'[tool.perfgate.overrides."{SLOW_KEY}"]\ninformational = true\n')
    shown = invoke(*args, "--format", "json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert time_result(data, SLOW_KEY)["verdict"] == "regression"  # still reported
    assert any("informational" in w and SLOW_KEY in w for w in data["warnings"])

    comparison = comparison_from_json(data, source="test")
    gate = _gate()
    assert status_state(comparison) == "failure" and check_conclusion(comparison) == "failure"
    assert status_state(comparison, gate) == "success"
    assert check_conclusion(comparison, gate) == "success"


def test_required_metrics_decide_the_gate(project: Path) -> None:
    base, head = write_pair(project, slowdown=1.5)
    args = ("compare", base, head, "--fail-on-regression", "--db", "sqlite:///absent.db")
    pyproject(project, f'[tool.perfgate.overrides."{SLOW_KEY}"]\nrequired = ["peak_rss"]\n')
    assert invoke(*args).exit_code == 0
    pyproject(project, f'[tool.perfgate.overrides."{SLOW_KEY}"]\nrequired = ["time"]\n')
    assert invoke(*args).exit_code == 1


def test_fail_on_changes_the_exit_code(project: Path) -> None:
    # Three shared benchmarks are too few to bound the machine's share by the suite's own shift,
    # so a 10% slowdown is a possible regression at the 3% threshold, not a proven one.
    base, head = write_pair(project, slowdown=1.1, drop="kernel[n=64,variant=0]", benchmarks=4)
    args = ("compare", base, head, "--fail-on-regression", "--db", "sqlite:///absent.db")
    data = compare_json(base, head)
    assert time_result(data, SLOW_KEY)["flag"] == "possible_regression"
    assert data["summary"]["regression"] == 0 and data["summary"]["missing"] > 0
    assert invoke(*args).exit_code == 0

    pyproject(project, 'fail_on = ["regression", "possible-regression"]\n')
    assert invoke(*args).exit_code == 1
    pyproject(project, 'fail_on = ["regression", "missing"]\n')
    assert invoke(*args).exit_code == 1
    # The flag (and its variable) beat the file.
    assert invoke(*args, "--fail-on", "regression").exit_code == 0
    assert invoke(*args, env={"PERFGATE_COMPARE_FAIL_ON": "regression"}).exit_code == 0
    bad = invoke(*args, "--fail-on", "regression,slower")
    assert bad.exit_code == 2 and "--fail-on: 'slower' is not one of" in bad.stderr

    comparison = comparison_from_json(data, source="test")
    assert status_state(comparison) == "pending" and check_conclusion(comparison) == "neutral"
    strict = _gate(fail_on=("regression", "possible-regression"))
    assert status_state(comparison, strict) == "failure"
    assert check_conclusion(comparison, strict) == "failure"


def _gate(fail_on: tuple[str, ...] = ("regression",)) -> Any:
    from perfgate.policy import policy_gate

    return policy_gate(discover_policy(), fail_on)


def test_the_nearest_file_wins_perfgate_toml_first_and_the_search_stops_at_the_repo(
    project: Path,
) -> None:
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_policy_file(nested) is None
    (project.parent / "perfgate.toml").write_text("rounds = 9\n")  # above the repository
    assert find_policy_file(nested) is None

    (project / "pyproject.toml").write_text('[project]\nname = "acme"\n')  # no [tool.perfgate]
    assert find_policy_file(nested) is None
    pyproject(project, "rounds = 2\n")
    assert find_policy_file(nested) == project / "pyproject.toml"
    (project / "perfgate.toml").write_text("rounds = 3\n")
    assert find_policy_file(nested) == project / "perfgate.toml"
    assert discover_policy(nested).get("rounds") == 3
    (nested / "perfgate.toml").write_text("rounds = 4\n")
    assert discover_policy(nested).get("rounds") == 4


def test_the_benchmarks_path_is_relative_to_the_policy_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "perfgate.toml").write_text('benchmarks = "bench/suite"\ndevice = "cpu"\n')
    nested = project / "src"
    nested.mkdir()
    monkeypatch.chdir(nested)
    data = json.loads(invoke("config", "--json").stdout)
    assert Path(data["settings"]["benchmarks"]["value"]) == project / "bench" / "suite"
    assert data["settings"]["device"] == {
        "value": "cpu",
        "source": "policy",
        "origin": str(project / "perfgate.toml"),
    }


def test_globs_have_only_star_and_question_mark() -> None:
    assert glob_matches("kernel[n=64,*", "kernel[n=64,variant=1]")
    assert not glob_matches("kernel[n=64,*", "kernel[n=640,variant=1]")
    assert glob_matches("softmax[n=?]", "softmax[n=8]")
    assert not glob_matches("softmax[n=8]", "softmaxn")
    assert glob_matches("*", "anything[at=all]")


@pytest.mark.slow
@pytest.mark.torch
def test_run_takes_benchmarks_device_and_rounds_from_the_policy(project: Path) -> None:
    pytest.importorskip("torch")
    (project / "perfgate.toml").write_text('benchmarks = "perf"\ndevice = "cpu"\nrounds = 2\n')
    (project / "perf").mkdir()
    (project / "perf" / "bench_tiny.py").write_text(
        "import perfgate\n\n"
        "@perfgate.benchmark(params={'n': [8]})\n"
        "def add(n: int):\n"
        "    import torch\n"
        "    a = torch.ones(n)\n"
        "    return lambda: a + a\n"
    )
    out = project / "results.json"
    ran = invoke(
        "run",
        "--no-store",
        "--no-profile",
        "--max-time",
        "0.05",
        "--threads",
        "1",
        "--commit",
        "c" * 40,
        "--out",
        str(out),
    )
    assert ran.exit_code == 0, ran.output
    document = json.loads(out.read_text())
    [bench] = document["benchmarks"]
    assert bench["key"] == "add[n=8]" and bench["device"] == "cpu"
    assert len(bench["metrics"]["time"]["rounds"]) == 2


def test_issues_table_gives_labels_assignees_and_horizon(project: Path) -> None:
    (project / "perfgate.toml").write_text(
        '[issues]\nlabels = ["performance", "main", "performance"]\n'
        'assignees = ["octocat", "perf-oncall"]\nhorizon = 12\n'
    )
    issues = discover_policy().issues
    assert issues.labels == ("performance", "main")
    assert issues.assignees == ("octocat", "perf-oncall")
    assert issues.horizon == 12
    shown = invoke("config")
    assert shown.exit_code == 0, shown.output
    assert 'issues: labels ["performance", "main"], assignees ["octocat", "perf-oncall"], ' in (
        shown.stdout
    )
    as_json = json.loads(invoke("config", "--json").stdout)["issues"]
    assert as_json == {
        "labels": ["performance", "main"],
        "assignees": ["octocat", "perf-oncall"],
        "horizon": 12,
    }
    (project / "perfgate.toml").write_text("threshold = 0.05\n")
    assert discover_policy().issues.horizon == 30 and discover_policy().issues.labels == ()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("issues = 3", "issues: expected a table of labels, assignees, horizon"),
        ("[issues]\nlabel = []", "issues.label: unknown key (known: labels, assignees, horizon)"),
        ('[issues]\nlabels = "perf"', "issues.labels: expected a list of label names"),
        ('[issues]\nlabels = ["a,b"]', "issues.labels: 'a,b' is not a label name"),
        ('[issues]\nlabels = ["' + "x" * 51 + '"]', "is not a label name (1 to 50 characters"),
        ('[issues]\nlabels = [" "]', "issues.labels: ' ' is not a label name"),
        ('[issues]\nlabels = ["a\\nb"]', "issues.labels: 'a\\nb' is not a label name"),
        ('[issues]\nassignees = ["-bad"]', "issues.assignees: expected a list of GitHub logins"),
        ("[issues]\nassignees = [1]", "issues.assignees: expected a list of GitHub logins"),
        ("[issues]\nhorizon = 0", "issues.horizon: expected a whole number of runs, at least 1"),
        ("[issues]\nhorizon = true", "issues.horizon: expected a whole number of runs"),
    ],
)
def test_issues_table_errors_are_one_line_naming_file_and_key(
    project: Path, table: str, message: str
) -> None:
    (project / "perfgate.toml").write_text(table + "\n")
    result = invoke("config")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: perfgate.toml: ")
    assert message in result.stderr
