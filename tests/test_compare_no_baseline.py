"""`perfgate compare` with nothing in the store for the base side: exit 4 (no baseline), its own
code, distinct from bad input (2), so CI can post a neutral check without reading messages."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.errors import EXIT_NO_BASELINE, NoBaselineError, NotFoundError
from perfgate.results import parse_document
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

HEAD = "b" * 40
BASE = "a" * 40
LATER = datetime(2026, 6, 2, tzinfo=timezone.utc)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _head_file(tmp_path: Path) -> str:
    head = synthetic_document(benchmarks=3, samples=10, seed=2, commit=HEAD, branch="feature")
    path = tmp_path / "head.json"
    path.write_text(json.dumps(head))
    return str(path)


def test_no_baseline_is_exit_4_and_a_not_found() -> None:
    assert EXIT_NO_BASELINE == 4
    assert NoBaselineError("x").exit_code == 4 and NoBaselineError("x").code == "no_baseline"
    assert issubclass(NoBaselineError, NotFoundError)  # the API still answers 404


def test_an_empty_store_is_no_baseline(tmp_path: Path) -> None:
    head = _head_file(tmp_path)
    result = invoke("compare", BASE, head, "--db", f"sqlite:///{tmp_path}/empty.db")
    assert result.exit_code == EXIT_NO_BASELINE, result.output
    assert result.stderr.startswith("error: no baseline: the store has no runs of project")
    assert len(result.stderr.splitlines()) == 1


def test_a_base_without_runs_and_no_earlier_main_run_is_no_baseline(db_url: str) -> None:
    """The project is known, but neither the base commit nor main before the head has runs."""
    later_main = synthetic_document(
        benchmarks=3, samples=10, seed=3, commit="c" * 40, started_at=LATER
    )
    head = synthetic_document(benchmarks=3, samples=10, seed=2, commit=HEAD, branch="feature")
    with open_store(db_url) as store:
        store_document(store.sessions, parse_document(later_main))
        store_document(store.sessions, parse_document(head))
    by_commit = invoke("compare", BASE, HEAD, "--db", db_url)
    assert by_commit.exit_code == EXIT_NO_BASELINE, by_commit.output
    assert f"no baseline: base {BASE[:12]} has no runs in the store" in by_commit.stderr
    by_branch = invoke("compare", "main", HEAD, "--db", db_url)
    assert by_branch.exit_code == EXIT_NO_BASELINE, by_branch.output
    # A branch name that is neither the base branch nor in the store stays bad input.
    typo = invoke("compare", "mian", HEAD, "--db", db_url)
    assert typo.exit_code == 2 and "neither a results file" in typo.stderr
    # And a missing HEAD is bad input too: only the base side can lack a baseline.
    missing_head = invoke("compare", "main", "f" * 40, "--db", db_url)
    assert missing_head.exit_code == 2, missing_head.output


def test_compare_help_lists_the_exit_codes() -> None:
    result = invoke("compare", "--help")
    assert result.exit_code == 0
    assert "4  no baseline" in result.output
