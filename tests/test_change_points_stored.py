"""Change points are computed when a run is stored and only read afterwards; migration 0004 fills
what older stores lack (median CIs, change points)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, delete, event, func, select, update

from perfgate.cli import cli
from perfgate.results import parse_document
from perfgate.stats.changepoints import detect_change_points
from perfgate.stats.summary import median_ci
from perfgate.store import change_points, migrate, models
from perfgate.store.connect import Store, open_store
from perfgate.store.row_writes import unpack_samples
from perfgate.store.run_lookup import runs_for_commit
from perfgate.store.trends import list_changes, load_series
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

KEY = "kernel[n=128,variant=0]"
MEMORY_KEY = "kernel[n=192,variant=0]"
START = datetime(2026, 6, 1, tzinfo=timezone.utc)


def _document(i: int, *, shift_at: int, branch: str = "main") -> dict[str, Any]:
    """Run i: KEY 30% slower and MEMORY_KEY's peak memory doubled from run `shift_at` on."""
    doc = synthetic_document(
        benchmarks=3,
        samples=12,
        seed=500 + i,
        branch=branch,
        slowdown={KEY: 1.3} if i >= shift_at else None,
        started_at=START + timedelta(hours=i),
    )
    if i >= shift_at:
        for bench in doc["benchmarks"]:
            if bench["key"] == MEMORY_KEY:
                bench["metrics"]["peak_memory"]["value"] *= 2
    return doc


def _upload(store: Store, runs: range, *, shift_at: int) -> None:
    for i in runs:
        store_document(store.sessions, parse_document(_document(i, shift_at=shift_at)))


def _stored(store: Store) -> list[tuple[str, str, str]]:
    """(key, metric, status) of every stored change point."""
    with store.sessions() as session:
        rows = session.execute(
            select(models.Benchmark.key, models.ChangePoint.metric, models.ChangePoint.status)
            .join(models.Benchmark, models.Benchmark.id == models.ChangePoint.benchmark_id)
            .order_by(models.Benchmark.key, models.ChangePoint.metric)
        )
        return [tuple(row) for row in rows]


@contextmanager
def writes(engine: Engine) -> Iterator[list[str]]:
    """Every INSERT, UPDATE or DELETE sent to the database inside the block."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_change_points_are_stored_by_the_upload_itself(store: Store) -> None:
    _upload(store, range(20), shift_at=10)
    # Nothing has read the series: the uploads alone stored the change points.
    assert _stored(store) == [(KEY, "time", "open"), (MEMORY_KEY, "peak_memory", "open")]
    with store.sessions() as session:
        (run_id,) = session.execute(
            select(models.ChangePoint.run_id).where(models.ChangePoint.metric == "time")
        ).one()
        started = session.get(models.Run, run_id)
    assert started is not None and started.started_at == START + timedelta(hours=10)


def test_a_runners_wander_is_not_stored_as_each_benchmarks_change(store: Store) -> None:
    """Eight benchmarks on a runner whose speed wanders (AR(1), rho 0.8, 3% shocks), each
    following it in its own proportion, one with a +20% step of its own: alone, their
    histories hold change points; the store keeps only what survives the runs' shared movement
    (docs/changepoints.md), here that step alone."""
    rng = np.random.default_rng(0)
    runs, benchmarks = 80, 8
    keys = [b["key"] for b in synthetic_document(benchmarks=benchmarks, samples=1)["benchmarks"]]
    machine, shocks = np.zeros(runs), rng.normal(0.0, 0.03, runs)
    for t in range(1, runs):
        machine[t] = 0.8 * machine[t - 1] + shocks[t]
    loadings = rng.uniform(0.5, 1.5, benchmarks)
    for i in range(runs):
        slowdown = {k: math.exp(loadings[j] * machine[i]) for j, k in enumerate(keys)}
        if i >= 40:
            slowdown[keys[2]] *= 1.2  # its own step
        doc = synthetic_document(
            benchmarks=benchmarks,
            samples=1,
            seed=900 + i,
            slowdown=slowdown,
            started_at=START + timedelta(hours=i),
            ops_per_benchmark=0,
        )
        store_document(store.sessions, parse_document(doc))
    with store.sessions() as session:
        alone = 0
        for key in keys:
            points = load_series(session, project=None, key=key, metric="time", branch="main")
            alone += len(change_points.detect_changes([p.median for p in points.points]))
    assert alone >= 5  # measured at this code: 8, one of them the step
    assert [row for row in _stored(store) if row[1] == "time"] == [(keys[2], "time", "open")]


def test_series_and_change_lists_never_write(store: Store) -> None:
    _upload(store, range(20), shift_at=10)
    with writes(store.engine) as sent, store.sessions() as session:
        series = load_series(session, project=None, key=KEY, metric="time", branch="main")
        listed = list_changes(session, project=None, branch="main", metric="time")
        load_series(session, project=None, key=MEMORY_KEY, metric="flops", branch="main")
    assert sent == []
    assert [c.run for c in series.change_points] == [series.points[10].run]
    assert [c.key for c in listed] == [KEY]


def test_changes_filter_by_metric(db_url: str) -> None:
    with open_store(db_url) as store, store.sessions() as session:
        _upload(store, range(20), shift_at=10)
        time = list_changes(session, project=None, branch="main", metric="time")
        memory = list_changes(session, project=None, branch="main", metric="peak_memory")
        every = list_changes(session, project=None, branch="main", metric=None)
    assert [(c.key, c.metric) for c in time] == [(KEY, "time")]
    assert [(c.key, c.metric) for c in memory] == [(MEMORY_KEY, "peak_memory")]
    assert sorted(c.metric for c in every) == ["peak_memory", "time"]
    runner = CliRunner()
    result = runner.invoke(
        cli, ["changes", "--metric", "peak_memory", "--format", "json", "--db", db_url]
    )
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)["change_points"]
    assert [(c["key"], c["metric"]) for c in listed] == [(MEMORY_KEY, "peak_memory")]


def test_a_persons_status_is_kept_and_an_unconfirmed_open_one_goes(store: Store) -> None:
    _upload(store, range(20), shift_at=10)
    with store.sessions() as session, session.begin():
        session.execute(
            update(models.ChangePoint)
            .where(models.ChangePoint.metric == "time")
            .values(status="acknowledged")
        )
        # An open change point the detector does not see (a flat stretch of MEMORY_KEY's time).
        memory = session.execute(
            select(models.ChangePoint).where(models.ChangePoint.metric == "peak_memory")
        ).scalar_one()
        session.add(
            models.ChangePoint(
                project_id=memory.project_id,
                benchmark_id=memory.benchmark_id,
                metric="time",
                branch="main",
                run_id=memory.run_id,
                commit=memory.commit,
                before=1.0,
                after=1.0,
                ratio=1.0,
            )
        )
    _upload(store, range(20, 21), shift_at=10)
    assert _stored(store) == [(KEY, "time", "acknowledged"), (MEMORY_KEY, "peak_memory", "open")]


def test_a_window_leaves_the_change_points_before_it_alone(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_points, "WINDOW", 24)
    monkeypatch.setattr(change_points, "CONTEXT", 6)
    _upload(store, range(24), shift_at=10)
    assert _stored(store) == [(KEY, "time", "open"), (MEMORY_KEY, "peak_memory", "open")]
    # Later runs move the window past the step: it stays, though no window sees it whole now.
    _upload(store, range(24, 40), shift_at=10)
    assert _stored(store) == [(KEY, "time", "open"), (MEMORY_KEY, "peak_memory", "open")]


def test_backfill_windows_tile_the_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(change_points, "WINDOW", 8)
    monkeypatch.setattr(change_points, "CONTEXT", 2)
    assert change_points.window_ends(0) == []
    assert change_points.window_ends(5) == [5]
    assert change_points.window_ends(8) == [8]
    assert change_points.window_ends(20) == [8, 14, 20]
    assert change_points.window_ends(21) == [8, 14, 20, 21]


def test_migration_0004_fills_cis_and_change_points(db_url: str) -> None:
    with open_store(db_url) as store:
        _upload(store, range(20), shift_at=10)
        with store.sessions() as session, session.begin():
            expected = {
                run: median_ci(unpack_samples(blob))
                for run, blob in session.execute(
                    select(models.Measurement.run_id, models.Measurement.samples)
                    .join(models.Benchmark)
                    .where(models.Measurement.metric == "time", models.Benchmark.key == KEY)
                )
            }
            # What a store from before this revision holds: no CIs, no change points.
            session.execute(update(models.Measurement).values(ci_low=None, ci_high=None))
            session.execute(delete(models.ChangePoint))
        migrate.downgrade(store.engine, "0003")
        migrate.upgrade(store.engine)
        assert _stored(store) == [(KEY, "time", "open"), (MEMORY_KEY, "peak_memory", "open")]
        with store.sessions() as session:
            series = load_series(session, project=None, key=KEY, metric="time", branch="main")
            exact = session.scalar(
                select(func.count())
                .select_from(models.Measurement)
                .where(models.Measurement.ci_low.is_not(None), models.Measurement.n < 6)
            )
    assert exact == 0
    assert len(series.points) == 20
    for point in series.points:
        assert point.ci == pytest.approx(expected[point.run])


def test_a_commit_prefix_is_text_not_a_pattern(store: Store) -> None:
    _upload(store, range(3), shift_at=10)
    with store.sessions() as session:
        project_id = session.scalar(select(models.Project.id))
        assert project_id is not None
        for prefix in ("%", "_", "0_", "/"):
            assert runs_for_commit(session, project_id=project_id, commit=prefix) == []
        commit = _document(1, shift_at=10)["run"]["commit"]
        (run,) = runs_for_commit(session, project_id=project_id, commit=commit[:8])
    assert run.commit == commit


@pytest.mark.parametrize("n", range(0, 14))
def test_short_series_are_decided_as_the_detector_decides(n: int) -> None:
    """`detect_changes` answers series too short to cut without calling the detector; the
    answer must be the detector's, whatever its minimum segment is now."""
    medians = [1.0] * (n // 2) + [4.0] * (n - n // 2)
    logs = [math.log(m) for m in medians]
    expected = detect_change_points(logs) if n >= 2 else []
    assert [index for index, _, _ in change_points.detect_changes(medians)] == expected
