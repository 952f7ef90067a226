"""Use cases: one benchmark's history on a branch, and the change points detected in it.

Series are read from the trend index (benchmark, metric, branch, started_at). Detected change
points are stored with status `open` the first time they are seen; a status set by a person
(`acknowledged`, `dismissed`) is never overwritten by a later detection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import NotFoundError
from perfgate.stats.changepoints import detect_change_points, segment_levels
from perfgate.stats.summary import median_ci
from perfgate.store import models, queries
from perfgate.store.models import utcnow
from perfgate.store.repository import insert_ignoring_conflicts, table_of, unpack_samples


@dataclass(frozen=True)
class SeriesPoint:
    run: str
    commit: str
    time: datetime
    median: float
    ci: tuple[float, float] | None
    n: int


@dataclass(frozen=True)
class ChangePointView:
    key: str
    metric: str
    branch: str
    run: str
    commit: str
    time: datetime
    before: float
    after: float
    ratio: float
    status: str

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "metric": self.metric,
            "branch": self.branch,
            "run": self.run,
            "commit": self.commit,
            "time": self.time.isoformat(),
            "before": self.before,
            "after": self.after,
            "ratio": self.ratio,
            "status": self.status,
        }


@dataclass(frozen=True)
class Series:
    key: str
    metric: str
    unit: str
    direction: str
    branch: str
    points: list[SeriesPoint]
    change_points: list[ChangePointView]


def _points(
    session: Session,
    *,
    benchmark_id: int,
    metric: str,
    branch: str,
    since: datetime | None,
    until: datetime | None,
) -> tuple[list[SeriesPoint], str, str]:
    stmt = (
        select(models.Measurement, models.Run.commit)
        .join(models.Run, models.Run.id == models.Measurement.run_id)
        .where(
            models.Measurement.benchmark_id == benchmark_id,
            models.Measurement.metric == metric,
            models.Measurement.branch == branch,
        )
        .order_by(models.Measurement.started_at, models.Measurement.run_id)
    )
    if since is not None:
        stmt = stmt.where(models.Measurement.started_at >= since)
    if until is not None:
        stmt = stmt.where(models.Measurement.started_at < until)
    points, unit, direction = [], "", "lower"
    for measurement, commit in session.execute(stmt):
        unit, direction = measurement.unit, measurement.direction
        ci = None
        if measurement.samples is not None and measurement.n >= 6:
            low, high = median_ci(unpack_samples(measurement.samples))
            ci = (low, high)
        points.append(
            SeriesPoint(
                run=measurement.run_id,
                commit=commit,
                time=measurement.started_at,
                median=measurement.median,
                ci=ci,
                n=measurement.n,
            )
        )
    return points, unit, direction


def _detect(points: list[SeriesPoint]) -> list[tuple[int, float, float]]:
    """(index, level before, level after) of each change, on a log scale for timing series."""
    values = [math.log(p.median) if p.median > 0 else 0.0 for p in points]
    if len(values) < 2:
        return []
    found = detect_change_points(values)
    levels = segment_levels(values, found)
    return [(index, math.exp(levels[i]), math.exp(levels[i + 1])) for i, index in enumerate(found)]


def _record(
    session: Session,
    *,
    project_id: int,
    benchmark_id: int,
    metric: str,
    branch: str,
    points: list[SeriesPoint],
    changes: list[tuple[int, float, float]],
) -> None:
    now = utcnow()
    rows = [
        {
            "project_id": project_id,
            "benchmark_id": benchmark_id,
            "metric": metric,
            "branch": branch,
            "run_id": points[index].run,
            "commit": points[index].commit,
            "before": before,
            "after": after,
            "ratio": after / before if before else 0.0,
            "status": "open",
            "detected_at": now,
            "updated_at": now,
        }
        for index, before, after in changes
    ]
    insert_ignoring_conflicts(
        session, table_of(models.ChangePoint), rows, ["benchmark_id", "metric", "branch", "run_id"]
    )


def _views(
    session: Session,
    *,
    project_id: int,
    branch: str,
    status: str | None,
    benchmark_id: int | None = None,
    metric: str | None = None,
) -> list[ChangePointView]:
    stmt = (
        select(models.ChangePoint, models.Benchmark.key, models.Run.started_at)
        .join(models.Benchmark, models.Benchmark.id == models.ChangePoint.benchmark_id)
        .join(models.Run, models.Run.id == models.ChangePoint.run_id)
        .where(models.ChangePoint.project_id == project_id, models.ChangePoint.branch == branch)
        .order_by(models.Run.started_at, models.Benchmark.key)
    )
    if status is not None:
        stmt = stmt.where(models.ChangePoint.status == status)
    if benchmark_id is not None:
        stmt = stmt.where(models.ChangePoint.benchmark_id == benchmark_id)
    if metric is not None:
        stmt = stmt.where(models.ChangePoint.metric == metric)
    return [
        ChangePointView(
            key=key,
            metric=cp.metric,
            branch=cp.branch,
            run=cp.run_id,
            commit=cp.commit,
            time=started,
            before=cp.before,
            after=cp.after,
            ratio=cp.ratio,
            status=cp.status,
        )
        for cp, key, started in session.execute(stmt)
    ]


def _benchmark(session: Session, *, project_id: int, key: str) -> models.Benchmark:
    bench = session.scalar(
        select(models.Benchmark).where(
            models.Benchmark.project_id == project_id, models.Benchmark.key == key
        )
    )
    if bench is None:
        raise NotFoundError(f"benchmark {key!r} is not in the store")
    return bench


def load_series(
    sessions: sessionmaker[Session],
    *,
    project: str | None,
    key: str,
    metric: str,
    branch: str,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Series:
    """The history of `key` on `branch`, oldest first, with its change points (stored too)."""
    with sessions() as session, session.begin():
        project_row = queries.resolve_project(session, name=project)
        bench = _benchmark(session, project_id=project_row.id, key=key)
        points, unit, direction = _points(
            session, benchmark_id=bench.id, metric=metric, branch=branch, since=since, until=until
        )
        if not points:
            raise NotFoundError(f"no {metric!r} measurements of {key!r} on branch {branch!r}")
        # Detection always sees the whole branch history, so a window does not move the cuts.
        full = (
            points
            if since is None and until is None
            else _points(
                session, benchmark_id=bench.id, metric=metric, branch=branch, since=None, until=None
            )[0]
        )
        _record(
            session,
            project_id=project_row.id,
            benchmark_id=bench.id,
            metric=metric,
            branch=branch,
            points=full,
            changes=_detect(full),
        )
        shown = {p.run for p in points}
        changes = [
            c
            for c in _views(
                session,
                project_id=project_row.id,
                branch=branch,
                status=None,
                benchmark_id=bench.id,
                metric=metric,
            )
            if c.run in shown
        ]
    return Series(
        key=key,
        metric=metric,
        unit=unit,
        direction=direction,
        branch=branch,
        points=points,
        change_points=changes,
    )


def refresh_changes(
    sessions: sessionmaker[Session],
    *,
    project: str | None,
    branch: str,
    metric: str = "time",
    status: str | None = "open",
) -> list[ChangePointView]:
    """Detect change points in every benchmark's history on `branch`, store new ones, list."""
    with sessions() as session, session.begin():
        project_row = queries.resolve_project(session, name=project)
        benchmarks = (
            session.execute(
                select(models.Benchmark.id).where(models.Benchmark.project_id == project_row.id)
            )
            .scalars()
            .all()
        )
        for benchmark_id in benchmarks:
            points, _, _ = _points(
                session,
                benchmark_id=benchmark_id,
                metric=metric,
                branch=branch,
                since=None,
                until=None,
            )
            if len(points) >= 2:
                _record(
                    session,
                    project_id=project_row.id,
                    benchmark_id=benchmark_id,
                    metric=metric,
                    branch=branch,
                    points=points,
                    changes=_detect(points),
                )
        return _views(session, project_id=project_row.id, branch=branch, status=status)
