"""Use cases: one benchmark's history on a branch, the stored change points, and triage.

Series are read from the trend index (benchmark, metric, branch, started_at). Every read here is
read only: change points are detected when a run is stored (`store/change_points.py`), and a
status set by a person (`acknowledged`, `dismissed`) is kept by later detections.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import InputError, NotFoundError
from perfgate.store import models, run_lookup
from perfgate.store.models import utcnow


# Not frozen: a history is thousands of points, and a frozen dataclass costs five times as much
# to build.
@dataclass(slots=True)
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
) -> tuple[list[SeriesPoint], str, str]:
    # Plain summary columns, never the samples: a whole history is thousands of rows and this
    # is the dashboard's hottest query. Each point's CI was stored with it (migration 0004 filled
    # the rows stored before that).
    stmt = (
        select(
            models.Measurement.run_id,
            models.Run.commit,
            models.Measurement.started_at,
            models.Measurement.median,
            models.Measurement.ci_low,
            models.Measurement.ci_high,
            models.Measurement.n,
            models.Measurement.unit,
            models.Measurement.direction,
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
    points = [
        SeriesPoint(
            run=run_id,
            commit=commit,
            time=started_at,
            median=median,
            ci=(low, high) if low is not None and high is not None else None,
            n=n,
        )
        for run_id, commit, started_at, median, low, high, n, _, _ in rows
    ]
    unit, direction = (rows[-1][7], rows[-1][8]) if rows else ("", "lower")
    return points, unit, direction


def _views(
    session: Session,
    *,
    project_id: int,
    branch: str,
    status: str | None,
    benchmark_id: int | None = None,
    metric: str | None = None,
    change_id: int | None = None,
) -> list[ChangePointView]:
    cp = models.ChangePoint
    # Plain columns, not ORM objects: a branch of a large project has thousands of change points.
    stmt = (
        select(
            cp.id,
            models.Benchmark.key,
            cp.metric,
            cp.branch,
            cp.run_id,
            cp.commit,
            models.Run.started_at,
            cp.before,
            cp.after,
            cp.ratio,
            cp.status,
        )
        .join(models.Benchmark, models.Benchmark.id == cp.benchmark_id)
        .join(models.Run, models.Run.id == cp.run_id)
        .where(cp.project_id == project_id, cp.branch == branch)
        .order_by(models.Run.started_at, models.Benchmark.key, cp.metric)
    )
    if status is not None:
        stmt = stmt.where(cp.status == status)
    if benchmark_id is not None:
        stmt = stmt.where(cp.benchmark_id == benchmark_id)
    if metric is not None:
        stmt = stmt.where(cp.metric == metric)
    if change_id is not None:
        stmt = stmt.where(cp.id == change_id)
    return [
        ChangePointView(
            key=key,
            metric=metric_,
            branch=branch_,
            run=run_id,
            commit=commit,
            time=started,
            before=before,
            after=after,
            ratio=ratio,
            status=status_,
            id=cp_id,
        )
        for (
            cp_id,
            key,
            metric_,
            branch_,
            run_id,
            commit,
            started,
            before,
            after,
            ratio,
            status_,
        ) in session.execute(stmt)
    ]


def _series_ids(session: Session, *, project: str | None, key: str) -> tuple[int, int]:
    """(project id, benchmark id) of `key`; one query when the project is named."""
    if project:
        found = session.execute(
            select(models.Project.id, models.Benchmark.id)
            .join(models.Benchmark, models.Benchmark.project_id == models.Project.id)
            .where(models.Project.name == project, models.Benchmark.key == key)
        ).first()
        if found is not None:
            return found[0], found[1]
    # Not found (or no project named): say which of the two is missing.
    project_row = run_lookup.resolve_project(session, name=project)
    bench = session.scalar(
        select(models.Benchmark.id).where(
            models.Benchmark.project_id == project_row.id, models.Benchmark.key == key
        )
    )
    if bench is None:
        raise NotFoundError(f"benchmark {key!r} is not in the store")
    return project_row.id, bench


def series_version(
    session: Session, *, project: str | None, key: str, metric: str, branch: str
) -> tuple[object, ...]:
    """What changes whenever `load_series` of this series (any time range) would answer
    differently: its benchmark, its number of points and newest time, and its change points'
    number, newest id and last status change. One query of two index scans.

    Runs are never changed or deleted by perfgate, and a series' change points are re-detected
    only when a run with a point in it is stored, which changes the count of points; a status
    set by a person changes `updated_at`. Raises NotFoundError as `load_series` does.
    """
    _, benchmark_id = _series_ids(session, project=project, key=key)
    m, cp = models.Measurement, models.ChangePoint
    of_series = (m.benchmark_id == benchmark_id, m.metric == metric, m.branch == branch)
    of_changes = (cp.benchmark_id == benchmark_id, cp.metric == metric, cp.branch == branch)
    row = session.execute(
        select(
            select(func.count()).where(*of_series).scalar_subquery(),
            select(func.max(m.started_at)).where(*of_series).scalar_subquery(),
            select(func.count()).select_from(cp).where(*of_changes).scalar_subquery(),
            select(func.max(cp.id)).where(*of_changes).scalar_subquery(),
            select(func.max(cp.updated_at)).where(*of_changes).scalar_subquery(),
        )
    ).one()
    return (benchmark_id, *row)


def load_series(
    session: Session,
    *,
    project: str | None,
    key: str,
    metric: str,
    branch: str,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Series:
    """The history of `key` on `branch`, oldest first, with its stored change points.

    Read only, through the caller's session: change points are detected when runs are stored
    (`store/change_points.py`).
    """
    project_id, benchmark_id = _series_ids(session, project=project, key=key)
    points, unit, direction = _points(
        session,
        benchmark_id=benchmark_id,
        metric=metric,
        branch=branch,
        since=since,
        until=until,
    )
    if not points:
        raise NotFoundError(f"no {metric!r} measurements of {key!r} on branch {branch!r}")
    stored = _views(
        session,
        project_id=project_id,
        branch=branch,
        status=None,
        benchmark_id=benchmark_id,
        metric=metric,
    )
    shown = {p.run for p in points}
    return Series(
        key=key,
        metric=metric,
        unit=unit,
        direction=direction,
        branch=branch,
        points=points,
        change_points=[c for c in stored if c.run in shown],
    )


def list_changes(
    session: Session,
    *,
    project: str | None,
    branch: str,
    metric: str | None = "time",
    status: str | None = "open",
) -> list[ChangePointView]:
    """The stored change points of `metric` (every metric when None) on `branch`, oldest first.

    Read only: one indexed query of the `change_points` table, however many benchmarks the
    project has.
    """
    project_row = run_lookup.resolve_project(session, name=project)
    return _views(session, project_id=project_row.id, branch=branch, status=status, metric=metric)


def set_change_status(
    sessions: sessionmaker[Session], *, change_id: int, status: str, project: str | None = None
) -> ChangePointView:
    """Set a stored change point's status (a person's verdict, kept by later detections).

    With `project`, a change point of another project is answered exactly as a missing one, so
    ids do not reveal which projects exist.
    """
    if status not in models.CHANGE_POINT_STATUSES:
        raise InputError(
            f"status {status!r} is not one of {', '.join(models.CHANGE_POINT_STATUSES)}"
        )
    missing = NotFoundError(f"change point {change_id} is not in the store")
    with sessions() as session, session.begin():
        change = session.get(models.ChangePoint, change_id)
        if change is None:
            raise missing
        owner = session.get(models.Project, change.project_id)
        if project is not None and (owner is None or owner.name != project):
            raise missing
        change.status = status
        change.updated_at = utcnow()
        session.flush()
        (view,) = _views(
            session,
            project_id=change.project_id,
            branch=change.branch,
            status=None,
            change_id=change_id,
        )
        return view
