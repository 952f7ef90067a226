"""The bulk change-point refresh stores exactly what the per-series refresh it replaced stored.

Randomized histories (fixed seeds) are uploaded twice into one store, as two projects: one
refreshed by `store/change_points.py`, the other by the old algorithm kept in
`tests/refresh_reference.py`. After every upload and every triage the two projects' change
points must be equal, value for value; so must a backfill of the whole store. The histories have
steps, noise, a wandering runner (so the suite's check drops change points in both), gaps,
benchmarks that appear late, runs that arrive late (out of time order, some into a window too
short to hold a change point), a second branch and runs without a branch, and a window shrunk
so that its context rules apply.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

import refresh_reference
from perfgate.results import parse_document
from perfgate.store import change_points, models, uploads
from perfgate.store.connect import Store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

START = datetime(2026, 3, 1, tzinfo=timezone.utc)
NEW, REFERENCE = "eq/bulk", "eq/reference"

Refresh = Callable[..., int]
# (key, metric, branch, run number, commit, before, after, ratio, status)
Row = tuple[str, str, str, int, str, float, float, float, str]


def _history(seed: int, runs: int) -> list[tuple[int, dict[str, Any]]]:
    """(run number, document) in upload order: steps and gaps at random, some runs late."""
    rng = random.Random(seed)
    benchmarks = 6
    keys = [b["key"] for b in synthetic_document(benchmarks=benchmarks, samples=1)["benchmarks"]]
    # Each benchmark's time level over the runs: a few random steps of 10-60%, up or down.
    levels = {}
    for position, key in enumerate(keys):
        level, steps = 1.0, set(rng.sample(range(3, runs), rng.randint(0, 3)))
        # The first benchmark always steps at run 6, so that the late run 8 below arrives in a
        # window of 9 runs, too short for a change point, that holds a stored open one.
        steps |= {6} if position == 0 else set()
        series = []
        for i in range(runs):
            if i in steps:
                level *= rng.choice([0.5, 0.7, 0.9, 1.1, 1.3, 1.6])
            series.append(level)
        levels[key] = series
    # A runner whose speed wanders, followed by each benchmark in its own proportion: the
    # suite's shared movement, which both refreshes take out before keeping a change point.
    machine = [0.0]
    for _ in range(runs - 1):
        machine.append(0.8 * machine[-1] + rng.gauss(0.0, 0.04))
    loadings = {key: rng.uniform(0.5, 1.5) for key in keys}
    documents = []
    for i in range(runs):
        early = i < 12
        branch = "main" if early else rng.choices(["main", "feature", None], weights=[8, 2, 1])[0]
        doc = synthetic_document(
            benchmarks=benchmarks,
            samples=6,
            seed=seed * 1000 + i,
            branch=branch,
            started_at=START + timedelta(hours=i),
            slowdown={key: levels[key][i] * math.exp(loadings[key] * machine[i]) for key in keys},
            ops_per_benchmark=0,
        )
        kept = []
        for position, bench in enumerate(doc["benchmarks"]):
            # The last benchmark appears only after a third of the history; others miss runs.
            if position == benchmarks - 1 and i < runs // 3:
                continue
            if not early and rng.random() < 0.1:
                continue
            # An exact metric that steps too, now and then.
            if i > runs // 2 and position % 2 == 0:
                bench["metrics"]["peak_memory"]["value"] *= 2
            kept.append(bench)
        doc["benchmarks"] = kept
        documents.append((i, doc))
    # Late arrivals: a fifth of the runs are uploaded 2 to 20 places later than their turn.
    order = list(documents)
    order.insert(20, order.pop(8))
    for item in [d for d in documents if rng.random() < 0.2]:
        at = order.index(item)
        order.insert(min(len(order) - 1, at + rng.randint(2, 20)), order.pop(at))
    return order


def _as_project(doc: dict[str, Any], project: str, number: int) -> dict[str, Any]:
    out = dict(doc)
    out["run"] = dict(
        doc["run"], project=project, id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{project}/{number}"))
    )
    return out


def _rows(session: Session, project: str) -> list[Row]:
    numbers = {str(uuid.uuid5(uuid.NAMESPACE_URL, f"{project}/{n}")): n for n in range(1000)}
    result = session.execute(
        select(
            models.Benchmark.key,
            models.ChangePoint.metric,
            models.ChangePoint.branch,
            models.ChangePoint.run_id,
            models.ChangePoint.commit,
            models.ChangePoint.before,
            models.ChangePoint.after,
            models.ChangePoint.ratio,
            models.ChangePoint.status,
        )
        .join(models.Benchmark, models.Benchmark.id == models.ChangePoint.benchmark_id)
        .join(models.Project, models.Project.id == models.ChangePoint.project_id)
        .where(models.Project.name == project)
    )
    return sorted(
        (key, metric, branch, numbers[run], commit, before, after, ratio, status)
        for key, metric, branch, run, commit, before, after, ratio, status in result
    )


def _triage(session: Session, rng: random.Random) -> None:
    """Set a person's status on the same change point of both projects."""
    rows = _rows(session, NEW)
    if not rows:
        return
    key, metric, branch, number, *_ = rng.choice(rows)
    status = rng.choice(["acknowledged", "dismissed", "open"])
    for project in (NEW, REFERENCE):
        run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{project}/{number}"))
        benchmark = (
            select(models.Benchmark.id)
            .join(models.Project)
            .where(models.Project.name == project, models.Benchmark.key == key)
        )
        session.execute(
            update(models.ChangePoint)
            .where(
                models.ChangePoint.benchmark_id == benchmark.scalar_subquery(),
                models.ChangePoint.metric == metric,
                models.ChangePoint.branch == branch,
                models.ChangePoint.run_id == run_id,
            )
            .values(status=status)
        )


def _upload(
    store: Store, monkeypatch: pytest.MonkeyPatch, doc: dict[str, Any], refresh: Refresh
) -> None:
    monkeypatch.setattr(uploads, "refresh_changes", refresh)
    assert store_document(store.sessions, parse_document(doc)).created


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_bulk_refresh_stores_what_the_per_series_refresh_stored(
    store: Store, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # A small window so that 48 runs cross it: the context and settled rules take part.
    monkeypatch.setattr(change_points, "WINDOW", 16)
    monkeypatch.setattr(change_points, "CONTEXT", 4)
    rng = random.Random(seed)
    found = 0
    for number, doc in _history(seed, runs=48):
        _upload(store, monkeypatch, _as_project(doc, NEW, number), change_points.refresh_changes)
        _upload(
            store,
            monkeypatch,
            _as_project(doc, REFERENCE, number),
            refresh_reference.refresh_changes,
        )
        with store.sessions() as session, session.begin():
            if rng.random() < 0.3:
                _triage(session, rng)
            new, reference = _rows(session, NEW), _rows(session, REFERENCE)
        assert new == reference, f"after run {number}"
        found = max(found, len(new))
    # The comparison meant something: the histories do have change points.
    assert found >= 3
    # A backfill (migration 0004) from the same state, once each way.
    results = []
    for backfill in (change_points.backfill_changes, refresh_reference.backfill_changes):
        with store.sessions() as session:
            transaction = session.begin()
            try:
                backfill(session)
                results.append((_rows(session, NEW), _rows(session, REFERENCE)))
            finally:
                transaction.rollback()
    assert results[0] == results[1]
    assert results[0][0] == results[0][1]
