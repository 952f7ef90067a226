"""`perfgate import` itself, on recorded asv files: the run's fields, re-imports, several files,
and the refusals (other machines, disagreeing commits, options that do nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from importer_helpers import DATA, PROJECT, assert_one_line_error, invoke

from perfgate.errors import DocumentError
from perfgate.importers.common import ImportedBenchmark, ImportedFile, ImportedMetric, RunFields
from perfgate.importers.common import build_document as build

ENV = "existing-py_work_wt-import_.venv_bin_python"
RESULTS = DATA / "asv" / "results"
BASE_FILE = RESULTS / "ci-runner" / f"3bcf38db-{ENV}.json"
HEAD_FILE = RESULTS / "ci-runner" / f"44c30131-{ENV}.json"


def _store_args(tmp_path: Path) -> list[str]:
    return ["--db", f"sqlite:///{tmp_path / 'store.db'}", "--project", PROJECT]


def test_the_files_commit_is_the_runs_and_a_reimport_is_a_no_op(tmp_path: Path) -> None:
    commit = json.loads(BASE_FILE.read_text())["commit_hash"]
    out = tmp_path / "run.json"
    first = invoke("import", "asv", str(BASE_FILE), "--out", str(out), *_store_args(tmp_path))
    assert first.exit_code == 0, first.output
    assert "stored run" in first.stdout and f"@ {commit[:12]})" in first.stdout
    assert json.loads(out.read_text())["run"]["commit"] == commit
    again = invoke("import", "asv", str(BASE_FILE), *_store_args(tmp_path))
    assert again.exit_code == 0, again.output
    assert "already stored with the same content; nothing to do" in again.stdout
    other_branch = invoke("import", "asv", str(BASE_FILE), "--branch", "x", *_store_args(tmp_path))
    assert "stored run" in other_branch.stdout


def test_files_of_two_commits_are_refused_without_commit(tmp_path: Path) -> None:
    result = invoke("import", "asv", str(BASE_FILE), str(HEAD_FILE), *_store_args(tmp_path))
    assert_one_line_error(result, "was recorded at commit 3bcf38db", "pass --commit")


def test_files_of_two_machines_are_refused(tmp_path: Path) -> None:
    data = json.loads(HEAD_FILE.read_text())
    data["params"]["cpu"] = "Another CPU"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    result = invoke(
        "import", "asv", str(BASE_FILE), str(other), "--commit", "c" * 40, *_store_args(tmp_path)
    )
    assert_one_line_error(result, f"{other}: measured on another machine", "cpu differ")


def test_several_files_are_rounds_of_one_run(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = invoke(
        "import", "asv", str(BASE_FILE), str(BASE_FILE), "--commit", "c" * 40,
        "--no-store", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    time = next(
        b for b in json.loads(out.read_text())["benchmarks"] if b["key"] == "bench_sum.time_steady"
    )["metrics"]["time"]
    assert time["rounds"] == [25] * 6
    memory = next(
        b for b in json.loads(out.read_text())["benchmarks"] if b["key"] == "bench_sum.mem_list"
    )["metrics"]["memory"]
    assert memory["value"] == 8056  # equal single values of several files are one value


def test_options_that_would_do_nothing_are_refused(tmp_path: Path) -> None:
    nothing = invoke("import", "asv", str(BASE_FILE), "--no-store")
    assert_one_line_error(nothing, "--no-store without --out")
    no_token = invoke(
        "import", "asv", str(BASE_FILE), "--server", "http://127.0.0.1:9", "--project", PROJECT
    )
    assert_one_line_error(no_token, "--server needs --token")
    unknown = invoke("import", "nosuchtool", str(BASE_FILE))
    assert unknown.exit_code == 2 and "nosuchtool" in unknown.output


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    result = invoke("import", "asv", str(missing), "--no-store", "--out", "x.json")
    assert_one_line_error(result, f"{missing}: cannot read file")


def test_a_value_that_differs_between_files_is_refused() -> None:
    def file(source: str, value: float) -> ImportedFile:
        metric = ImportedMetric("B", "lower", value=value, exact=True)
        return ImportedFile(
            source=source,
            benchmarks=[ImportedBenchmark("m", {}, {"memory": metric}, where="results.m")],
            environment={"importer": "test"},
        )

    run = RunFields(project=PROJECT, commit="c" * 40)
    assert build([file("a", 1.0), file("b", 1.0)], run).benchmarks[0].metrics["memory"].value == 1
    with pytest.raises(DocumentError) as refused:
        build([file("a", 1.0), file("b", 2.0)], run)
    assert str(refused.value).startswith("b: results.m ('m', metric 'memory') is a single value")
