"""The command line, through click's CliRunner: output, exit codes, and the store afterwards."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.store import row_writes
from perfgate.store.connect import open_store
from synthetic import synthetic_document


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def counts(url: str) -> dict[str, int]:
    with open_store(url) as store, store.sessions() as session:
        return row_writes.count_rows(session)


def test_upload_then_again(db_url: str, tmp_path: Path) -> None:
    doc = write(tmp_path / "run.json", synthetic_document(benchmarks=20, samples=40, seed=1))
    first = invoke("upload", str(doc), "--db", db_url)
    assert first.exit_code == 0, first.output
    assert "stored run" in first.stdout and "20 benchmarks" in first.stdout
    second = invoke("upload", str(doc), "--db", db_url)
    assert second.exit_code == 0, second.output
    assert "already stored with the same content; nothing to do" in second.stdout
    assert counts(db_url)["runs"] == 1


def test_upload_reads_db_from_environment(db_url: str, tmp_path: Path) -> None:
    doc = write(tmp_path / "run.json", synthetic_document(benchmarks=2, seed=1))
    result = invoke("upload", str(doc), env={"PERFGATE_DB": db_url})
    assert result.exit_code == 0, result.output
    assert counts(db_url)["runs"] == 1


def _nan(d: dict[str, Any]) -> None:
    d["benchmarks"][4]["metrics"]["time"]["samples"][7] = math.nan


def _negative(d: dict[str, Any]) -> None:
    d["benchmarks"][1]["metrics"]["time"]["samples"][0] = -1e-5


def _schema(d: dict[str, Any]) -> None:
    d["schema"] = "perfgate/results@9"


BAD = {
    "nan": (_nan, "benchmarks[4].metrics.time.samples[7]: NaN is not a valid sample"),
    "negative": (_negative, "benchmarks[1].metrics.time.samples[0]: negative sample"),
    "schema": (_schema, "schema: unknown schema version 'perfgate/results@9'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_documents_exit_2_and_store_nothing(db_url: str, tmp_path: Path, case: str) -> None:
    good = write(tmp_path / "good.json", synthetic_document(benchmarks=10, samples=10, seed=2))
    data = synthetic_document(benchmarks=10, samples=10, seed=3)
    mutate, expected = BAD[case]
    mutate(data)
    bad = write(tmp_path / "bad.json", json.dumps(data))  # json.dumps writes NaN as NaN
    before = counts(db_url)
    result = invoke("upload", str(good), str(bad), "--db", db_url)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}: {expected}")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert counts(db_url) == before  # the good file was not stored either


def test_truncated_json(db_url: str, tmp_path: Path) -> None:
    text = json.dumps(synthetic_document(benchmarks=5, seed=1))
    bad = write(tmp_path / "cut.json", text[: len(text) // 2])
    result = invoke("upload", str(bad), "--db", db_url)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}: invalid JSON at line 1 column ")
    assert counts(db_url)["runs"] == 0


def test_over_size_limit(db_url: str, tmp_path: Path) -> None:
    doc = write(tmp_path / "big.json", synthetic_document(benchmarks=50, seed=1))
    result = invoke("upload", str(doc), "--db", db_url, "--max-size", "4KiB")
    assert result.exit_code == 2
    assert "over the document size limit of 4.0 KiB" in result.stderr
    env_limited = invoke(
        "upload", str(doc), "--db", db_url, env={"PERFGATE_MAX_DOCUMENT_BYTES": "1024"}
    )
    assert env_limited.exit_code == 2 and "limit of 1.0 KiB" in env_limited.stderr
    assert counts(db_url)["runs"] == 0
    bad_size = invoke("upload", str(doc), "--db", db_url, "--max-size", "lots")
    assert bad_size.exit_code == 2 and "--max-size: 'lots' is not a size" in bad_size.stderr


def test_conflicting_reupload(db_url: str, tmp_path: Path) -> None:
    data = synthetic_document(benchmarks=3, seed=1)
    invoke("upload", str(write(tmp_path / "a.json", data)), "--db", db_url)
    data["benchmarks"][0]["metrics"]["time"]["samples"][0] *= 2
    result = invoke("upload", str(write(tmp_path / "b.json", data)), "--db", db_url)
    assert result.exit_code == 2
    assert f"run {data['run']['id']} is already stored with different content" in result.stderr


def test_missing_file_is_usage_error(tmp_path: Path) -> None:
    result = invoke("upload", str(tmp_path / "nope.json"), "--db", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2
    assert "nope.json" in result.stderr


def test_unreachable_database_exits_3_with_masked_url(tmp_path: Path) -> None:
    doc = write(tmp_path / "run.json", synthetic_document(benchmarks=1, seed=1))
    url = "postgresql+psycopg://perfgate:s3cret@127.0.0.1:1/perfgate"
    result = invoke("upload", str(doc), "--db", url)
    assert result.exit_code == 3
    assert result.stderr.startswith(
        "error: cannot connect to database postgresql+psycopg://perfgate:***@127.0.0.1:1/perfgate: "
    )
    assert "s3cret" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_database_url_exits_2(tmp_path: Path) -> None:
    doc = write(tmp_path / "run.json", synthetic_document(benchmarks=1, seed=1))
    result = invoke("upload", str(doc), "--db", "not a url")
    assert result.exit_code == 2
    assert "is not a database URL" in result.stderr


@pytest.mark.parametrize("empty_db_url", ["sqlite", "postgres"], indirect=True)
def test_db_commands(empty_db_url: str) -> None:
    current = invoke("db", "current", "--db", empty_db_url)
    assert current.exit_code == 0 and "no perfgate schema" in current.stdout
    up = invoke("db", "upgrade", "--db", empty_db_url)
    assert up.exit_code == 0 and "upgraded (empty) -> 0005" in up.stdout
    assert "(head)" in invoke("db", "current", "--db", empty_db_url).stdout
    assert "already at 0005" in invoke("db", "upgrade", "--db", empty_db_url).stdout
    down = invoke("db", "downgrade", "--db", empty_db_url, "--revision", "base")
    assert down.exit_code == 0 and "downgraded 0005 -> (empty)" in down.stdout


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (
            ["run"],
            [
                "--filter",
                "--device",
                "--rounds",
                "--max-time",
                "--no-profile",
                "--trace-dir",
                "--out",
                "--db",
                "--server",
                "--token",
                "--no-store",
                "--commit",
                "--branch",
                "--project",
                "--pr",
                "PERFGATE_DB",
            ],
        ),
        (["upload"], ["--db", "--server", "--token", "--max-size"]),
        (["compare"], ["--format", "--out", "--threshold", "--alpha", "--fail-on-regression"]),
        (["comment"], ["--repo", "--pr", "--sha", "--token", "--api-url", "--mode"]),
        (["trend"], ["--metric", "--branch", "--since", "--format", "--plot"]),
        (["changes"], ["--status"]),
        (["serve"], ["--host", "--port", "--db"]),
        (["db", "upgrade"], ["--db"]),
        (["token", "create"], ["--project", "--scope"]),
        (["demo"], ["--db"]),
    ],
)
def test_every_command_has_its_options(command: list[str], options: list[str]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    for option in options:
        assert option in result.stdout
