"""Use cases: one benchmark's history on a branch, and the change points detected in it.

Series are read from the trend index (benchmark, metric, branch, started_at). Detected change
points are stored with status `open` the first time they are seen; a status set by a person
(`acknowledged`, `dismissed`) is never overwritten by a later detection.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import InputError, NotFoundError
from perfgate.stats.changepoints import detect_change_points, segment_levels
from perfgate.stats.summary import median_ci
from perfgate.store import models, queries
from perfgate.store.models import utcnow
from perfgate.store.repository import insert_ignoring_conflicts, table_of


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
    # The stored row's id: what `PATCH /api/v1/changes/{id}` names.
    id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
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
    with_ci: bool = True,
) -> tuple[list[SeriesPoint], str, str]:
    # Plain columns, not ORM objects: a whole history is thousands of rows and this is the
    # dashboard's hottest query.
    stmt = (
        select(
            models.Measurement.run_id,
            models.Measurement.started_at,
            models.Measurement.median,
            models.Measurement.n,
            models.Measurement.ci_low,
            models.Measurement.ci_high,
            models.Measurement.unit,
            models.Measurement.direction,
            models.Run.commit,
        )
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
    # Unpacked by position: named access on thousands of rows costs more than the query.
    rows = session.execute(stmt).all()
    cis: list[tuple[float, float] | None] = [
        (low, high) if low is not None and high is not None else None
        for (_, _, _, _, low, high, *_) in rows
    ]
    if with_ci:
        _fill_missing_cis(session, rows, cis, benchmark_id=benchmark_id, metric=metric)
    points = [
        SeriesPoint(run=run_id, commit=commit, time=started_at, median=median, ci=ci, n=n)
        for (run_id, started_at, median, n, _, _, _, _, commit), ci in zip(rows, cis, strict=True)
    ]
    unit, direction = (rows[-1][6], rows[-1][7]) if rows else ("", "lower")
    return points, unit, direction


def _fill_missing_cis(
    session: Session,
    rows: Sequence[Sequence[Any]],
    cis: list[tuple[float, float] | None],
    *,
    benchmark_id: int,
    metric: str,
) -> None:
    """CIs from samples for rows stored before the CI columns existed (migration 0002)."""
    missing = {row[0]: i for i, row in enumerate(rows) if cis[i] is None and row[3] >= 6}
    if not missing:
        return
    found = session.execute(
        select(models.Measurement.run_id, models.Measurement.samples, models.Measurement.n).where(
            models.Measurement.benchmark_id == benchmark_id,
            models.Measurement.metric == metric,
            models.Measurement.run_id.in_(list(missing)),
        )
    ).all()
    computed = _median_cis([(blob, n) for _, blob, n in found])
    for (run_id, _, _), ci in zip(found, computed, strict=True):
        cis[missing[run_id]] = ci


def _median_cis(
    rows: list[tuple[bytes | None, int]],
) -> list[tuple[float, float] | None]:
    """The 95% CI of each row's median from its samples, sorting rows of equal n together."""
    out: list[tuple[float, float] | None] = [None] * len(rows)
    by_n: dict[int, list[int]] = {}
    for i, (blob, n) in enumerate(rows):
        if blob is not None and n >= 6 and len(blob) == 8 * n:
            by_n.setdefault(n, []).append(i)
    for n, indices in by_n.items():
        matrix = np.frombuffer(b"".join(rows[i][0] or b"" for i in indices), dtype="<f8")
        ordered = np.sort(matrix.reshape(len(indices), n), axis=1)
        lo, hi = _ci_ranks(n)
        for i, low, high in zip(
            indices, ordered[:, lo].tolist(), ordered[:, hi].tolist(), strict=True
        ):
            out[i] = (low, high)
    return out


@functools.lru_cache(maxsize=256)
def _ci_ranks(n: int) -> tuple[int, int]:
    # median_ci returns order statistics; on 0..n-1 those are their own ranks.
    low, high = median_ci(list(range(n)), presorted=True)
    return int(low), int(high)


def detect_changes(points: list[SeriesPoint]) -> list[tuple[int, float, float]]:
    """(index, level before, level after) of each change, on a log scale for timing series."""
    values = tuple(math.log(p.median) if p.median > 0 else 0.0 for p in points)
    if len(values) < 2:
        return []
    return list(_detect_values(values))


# Detection is pure and costs O(n^2) on a long history; a series read again without new data
# (the dashboard, the API) reuses the answer instead of recomputing it.
@functools.lru_cache(maxsize=512)
def _detect_values(values: tuple[float, ...]) -> tuple[tuple[int, float, float], ...]:
    found = detect_change_points(list(values))
    levels = segment_levels(list(values), found)
    return tuple(
        (index, math.exp(levels[i]), math.exp(levels[i + 1])) for i, index in enumerate(found)
    )


def record_changes(
    session: Session,
    *,
    project_id: int,
    benchmark_id: int,
    metric: str,
    branch: str,
    points: list[SeriesPoint],
    changes: list[tuple[int, float, float]],
) -> None:
    """Store detected changes as `open` change points; a known one (and its status) is kept."""
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
            id=cp.id,
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
                session,
                benchmark_id=bench.id,
                metric=metric,
                branch=branch,
                since=None,
                until=None,
                with_ci=False,
            )[0]
        )
        stored = _views(
            session,
            project_id=project_row.id,
            branch=branch,
            status=None,
            benchmark_id=bench.id,
            metric=metric,
        )
        # Only changes not stored yet are written: a series read again with no new data is
        # a read-only transaction.
        known = {c.run for c in stored}
        new = [c for c in detect_changes(full) if full[c[0]].run not in known]
        if new:
            record_changes(
                session,
                project_id=project_row.id,
                benchmark_id=bench.id,
                metric=metric,
                branch=branch,
                points=full,
                changes=new,
            )
            stored = _views(
                session,
                project_id=project_row.id,
                branch=branch,
                status=None,
                benchmark_id=bench.id,
                metric=metric,
            )
        shown = {p.run for p in points}
        changes = [c for c in stored if c.run in shown]
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
                with_ci=False,
            )
            if len(points) >= 2:
                record_changes(
                    session,
                    project_id=project_row.id,
                    benchmark_id=benchmark_id,
                    metric=metric,
                    branch=branch,
                    points=points,
                    changes=detect_changes(points),
                )
        return _views(session, project_id=project_row.id, branch=branch, status=status)


def set_change_status(
    sessions: sessionmaker[Session], *, change_id: int, status: str
) -> ChangePointView:
    """Set a stored change point's status (a person's verdict, kept by later detections)."""
    if status not in models.CHANGE_POINT_STATUSES:
        raise InputError(
            f"status {status!r} is not one of {', '.join(models.CHANGE_POINT_STATUSES)}"
        )
    with sessions() as session, session.begin():
        change = session.get(models.ChangePoint, change_id)
        if change is None:
            raise NotFoundError(f"change point {change_id} is not in the store")
        change.status = status
        change.updated_at = utcnow()
        session.flush()
        (view,) = [
            v
            for v in _views(
                session,
                project_id=change.project_id,
                branch=change.branch,
                status=None,
                benchmark_id=change.benchmark_id,
                metric=change.metric,
            )
            if v.id == change_id
        ]
        return view
