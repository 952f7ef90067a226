"""`perfgate trend` and `perfgate changes` over a stored history with a planted shift."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import update

from perfgate.cli import cli
from perfgate.cli.timeparse import parse_since
from perfgate.errors import UsageError
from perfgate.results import parse_document
from perfgate.store import models
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

KEY = "kernel[n=128,variant=0]"
SHIFT_AT = 12


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _history(db_url: str, runs: int = 24) -> None:
    start = datetime(2026, 6, 1, tzinfo=timezone.utc)
    with open_store(db_url) as store:
        for i in range(runs):
            slow = {KEY: 1.3} if i >= SHIFT_AT else None
            data = synthetic_document(
                benchmarks=3,
                samples=20,
                seed=100 + i,
                slowdown=slow,
                started_at=start + timedelta(days=i),
            )
            store_document(store.sessions, parse_document(data))


def _more(db_url: str) -> None:
    with open_store(db_url) as store:
        data = synthetic_document(
            benchmarks=3,
            samples=20,
            seed=999,
            slowdown={KEY: 1.3},
            started_at=datetime(2026, 7, 1, tzinfo=timezone.utc),
        )
        store_document(store.sessions, parse_document(data))


def test_trend_json_marks_the_shift(db_url: str) -> None:
    _history(db_url)
    result = invoke("trend", KEY, "--format", "json", "--db", db_url)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["points"]) == 24
    assert data["points"][0]["time"] < data["points"][-1]["time"]
    assert {"run", "commit", "time", "median", "ci", "n"} <= set(data["points"][0])
    (change,) = data["change_points"]
    index = [p["run"] for p in data["points"]].index(change["run"])
    assert abs(index - SHIFT_AT) <= 1
    assert change["ratio"] == pytest.approx(1.3, rel=0.05)
    assert change["status"] == "open"


def test_trend_csv_table_and_plot(db_url: str, tmp_path: Path) -> None:
    _history(db_url)
    out = invoke("trend", KEY, "--format", "csv", "--db", db_url)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 24 and sum(int(r["change_point"]) for r in rows) == 1
    svg = tmp_path / "t.svg"
    table = invoke("trend", KEY, "--db", db_url, "--plot", str(svg))
    assert table.exit_code == 0, table.output
    assert "change" in table.stdout
    text = svg.read_text()
    assert text.count('class="point"') == 24 and text.count('class="change-point"') == 1
    page = tmp_path / "t.html"
    invoke("trend", KEY, "--db", db_url, "--plot", str(page))
    page_text = page.read_text()
    assert page_text.startswith("<!doctype html>")
    assert "src=" not in page_text and "cdn" not in page_text.lower()  # renders offline


def test_trend_since_and_errors(db_url: str) -> None:
    _history(db_url)
    recent = json.loads(
        invoke("trend", KEY, "--format", "json", "--since", "2026-06-20", "--db", db_url).stdout
    )
    assert len(recent["points"]) == 5
    missing = invoke("trend", "nope", "--db", db_url)
    assert missing.exit_code == 2 and "benchmark 'nope' is not in the store" in missing.stderr
    bad = invoke("trend", KEY, "--since", "last week", "--db", db_url)
    assert bad.exit_code == 2 and "--since" in bad.stderr


def test_changes_lists_and_keeps_status(db_url: str) -> None:
    _history(db_url)
    result = invoke("changes", "--format", "json", "--db", db_url)
    assert result.exit_code == 0, result.output
    (change,) = json.loads(result.stdout)["change_points"]
    assert change["key"] == KEY and change["status"] == "open"
    with open_store(db_url) as store, store.sessions() as session, session.begin():
        session.execute(update(models.ChangePoint).values(status="dismissed"))
    # A later upload re-detects, but a person's decision stands.
    _more(db_url)
    assert (
        json.loads(invoke("changes", "--format", "json", "--db", db_url).stdout)["change_points"]
        == []
    )
    everything = json.loads(
        invoke("changes", "--status", "all", "--format", "json", "--db", db_url).stdout
    )["change_points"]
    assert [c["status"] for c in everything] == ["dismissed"]
    assert "dismissed" in invoke("changes", "--status", "all", "--db", db_url).stdout


def test_parse_since() -> None:
    now = datetime(2026, 12, 2, tzinfo=timezone.utc)
    assert parse_since("30d", now=now) == now - timedelta(days=30)
    assert parse_since("2w", now=now) == now - timedelta(weeks=2)
    assert parse_since("2026-11-01") == datetime(2026, 11, 1, tzinfo=timezone.utc)
    with pytest.raises(UsageError):
        parse_since("yesterday")
    for extreme in ("99999999999w", "0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"):
        with pytest.raises(UsageError, match=r"--since: .* is out of range"):
            parse_since(extreme)
