"""Helpers for the importer tests: run the CLI, and run a real tool in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from perfgate.cli import cli

BASE = "a" * 40
HEAD = "b" * 40
PROJECT = "acme/imported"
DATA = Path(__file__).resolve().parents[1] / "data" / "importers"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_tool(
    *args: str | Path, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> None:
    """Run a benchmark tool with this interpreter; fail with its output if it fails."""
    done = subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=cwd,
        # A tool that is itself pytest must not see this run's pytest-xdist worker variables:
        # pytest-benchmark switches itself off inside an xdist worker.
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"


def import_and_compare(
    fmt: str, base: list[Path], head: list[Path], tmp_path: Path
) -> dict[tuple[str, str], dict[str, Any]]:
    """Import both sides into a fresh store, compare them, and return the results by key/metric."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    for commit, branch, files in ((BASE, "main", base), (HEAD, "feature", head)):
        result = invoke(
            "import",
            fmt,
            *map(str, files),
            "--db",
            db,
            "--commit",
            commit,
            "--branch",
            branch,
            "--project",
            PROJECT,
        )
        assert result.exit_code == 0, result.output
        assert "stored run" in result.stdout
    compared = invoke("compare", BASE, HEAD, "--db", db, "--format", "json")
    assert compared.exit_code == 0, compared.output
    results = json.loads(compared.stdout)["results"]
    return {(r["key"], r["metric"]): r for r in results}


def import_document(fmt: str, *files: Path, tmp_path: Path) -> dict[str, Any]:
    """The document `perfgate import --no-store --out` writes, as JSON data."""
    out = tmp_path / "imported.json"
    result = invoke(
        "import",
        fmt,
        *map(str, files),
        "--no-store",
        "--out",
        str(out),
        "--commit",
        BASE,
        "--project",
        PROJECT,
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def by_key(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["key"]: b for b in document["benchmarks"]}


def assert_one_line_error(result: Result, *expected: str) -> None:
    """Exit 2, one line on stderr naming each of `expected`, and no traceback."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines
    for part in expected:
        assert part in lines[0], lines[0]
    assert "Traceback" not in result.output
