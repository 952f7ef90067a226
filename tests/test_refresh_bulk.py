"""The change-point refresh of an upload: a few statements whatever the number of series, no
points read where no series can have a change point, and concurrent uploads to one branch
serialised so that they store what sequential ones store."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Engine, event, select

from perfgate.results import parse_document
from perfgate.store import change_points, models, uploads
from perfgate.store.connect import Store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

START = datetime(2026, 5, 1, tzinfo=timezone.utc)


def _document(
    i: int, *, benchmarks: int = 3, project: str = "acme/models", slower: float = 1.0
) -> dict[str, Any]:
    keys = [b["key"] for b in synthetic_document(benchmarks=benchmarks, samples=1)["benchmarks"]]
    doc = synthetic_document(
        benchmarks=benchmarks,
        samples=6,
        seed=700 + i,
        project=project,
        commit=f"{i:08x}" + "a" * 32,
        started_at=START + timedelta(hours=i),
        slowdown=dict.fromkeys(keys, slower),
        ops_per_benchmark=0,
    )
    doc["run"]["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{project}/{i}"))
    return doc


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """Every statement sent to the database inside the block (an executemany counts once)."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _points_queries(sent: list[str]) -> list[str]:
    """The streamed read of every series' points (not the shared movement's sample)."""
    return [s for s in _median_reads(sent) if "ORDER BY" in s]


def _movement_queries(sent: list[str]) -> list[str]:
    """The read of the shared movement's sample (in no order: it is placed by run)."""
    return [s for s in _median_reads(sent) if "ORDER BY" not in s]


def _median_reads(sent: list[str]) -> list[str]:
    return [s for s in sent if s.startswith("SELECT") and "measurements.median" in s]


def _change_point_writes(sent: list[str]) -> list[str]:
    return [
        s
        for s in sent
        if s.split(" ", 1)[0] in {"INSERT", "UPDATE", "DELETE"} and "change_points" in s
    ]


def test_a_window_too_short_for_a_change_point_reads_no_points(store: Store) -> None:
    shortest = change_points._SHORTEST_WITH_CHANGES
    for i in range(shortest - 2):
        store_document(store.sessions, parse_document(_document(i)))
    # The branch's window now holds shortest - 1 runs.
    with statements(store.engine) as sent:
        store_document(store.sessions, parse_document(_document(shortest - 2, slower=2.0)))
    assert _points_queries(sent) == [] and _movement_queries(sent) == []
    # One run more and a series can hold a change point: its points are read.
    with statements(store.engine) as sent:
        store_document(store.sessions, parse_document(_document(shortest - 1, slower=2.0)))
    assert len(_points_queries(sent)) == 1


@pytest.mark.slow
def test_a_refresh_reads_and_writes_in_bulk(store: Store) -> None:
    # More benchmarks than one IN list of the old refresh held (500), every one with a step.
    benchmarks = 520
    for i in range(10):
        doc = _document(i, benchmarks=benchmarks, slower=1.5 if i >= 5 else 1.0)
        with statements(store.engine) as sent:
            store_document(store.sessions, parse_document(doc))
    assert len(_points_queries(sent)) == 1
    # The shared movement's sample (64 of the 520 benchmarks) is read once, for all series.
    assert len(_movement_queries(sent)) == 1
    # One INSERT for the 520 new change points, nothing else written to the table.
    assert [s.split(" ", 3)[:3] for s in _change_point_writes(sent)] == [
        ["INSERT", "INTO", "change_points"]
    ]
    with store.sessions() as session:
        stored = session.scalars(select(models.ChangePoint.metric)).all()
    assert stored == ["time"] * benchmarks
    # The next run moves every level a little: one UPDATE (executemany) for all of them.
    with statements(store.engine) as sent:
        store_document(store.sessions, parse_document(_document(10, benchmarks=benchmarks)))
    kinds = sorted(s.split(" ", 1)[0] for s in _change_point_writes(sent))
    assert kinds in (["UPDATE"], ["DELETE", "UPDATE"], ["DELETE"])


def _stored(store: Store, project: str) -> list[tuple[str, str, str, float, float, str]]:
    with store.sessions() as session:
        rows = session.execute(
            select(
                models.Benchmark.key,
                models.ChangePoint.metric,
                models.ChangePoint.commit,
                models.ChangePoint.before,
                models.ChangePoint.after,
                models.ChangePoint.status,
            )
            .join(models.Benchmark, models.Benchmark.id == models.ChangePoint.benchmark_id)
            .join(models.Project, models.Project.id == models.ChangePoint.project_id)
            .where(models.Project.name == project)
        )
        return sorted(tuple(row) for row in rows)


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_concurrent_uploads_to_a_branch_store_what_sequential_ones_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs 0-4 fast, 5-7 slow: the step at run 5 needs 10 points, so only a refresh that sees
    both of the last two runs (8 and 9, also slow, started at the same time so that each is in
    the other's window whichever is stored first) finds it."""

    def history(project: str) -> list[dict[str, Any]]:
        docs = [_document(i, project=project, slower=1.6 if i >= 5 else 1.0) for i in range(10)]
        docs[9]["run"]["started_at"] = docs[8]["run"]["started_at"]
        return docs

    for doc in history("seq/one"):
        store_document(store.sessions, parse_document(doc))
    expected = _stored(store, "seq/one")
    assert [row[:3] for row in expected] == [
        (row[0], "time", _document(5)["run"]["commit"]) for row in expected
    ]
    assert len(expected) == 3

    together = history("conc/one")
    for doc in together[:8]:
        store_document(store.sessions, parse_document(doc))
    # Both uploads have stored their rows, uncommitted, before either refreshes.
    barrier = threading.Barrier(2, timeout=30)
    refresh = change_points.refresh_changes

    def refresh_together(session: Any, *, run_id: str) -> int:
        barrier.wait()
        return refresh(session, run_id=run_id)

    monkeypatch.setattr(uploads, "refresh_changes", refresh_together)
    with ThreadPoolExecutor(2) as pool:
        done = list(
            pool.map(lambda d: store_document(store.sessions, parse_document(d)), together[8:])
        )
    assert all(outcome.created for outcome in done)
    assert _stored(store, "conc/one") == expected
