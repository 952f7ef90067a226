"""The change-point refresh as it was before it became bulk: a reference for the equivalence test.

Per chunk of 500 benchmarks one read of points and stored change points, then per series a
delete, an update per moved level and an insert. `tests/test_refresh_equivalence.py` runs the
same uploads through this and through `store/change_points.py` and compares the tables.
Reads `WINDOW` and `CONTEXT` from the store's module when called, so a test that shrinks the
window shrinks both.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from perfgate.stats.shared_movement import MIN_OTHERS, SAMPLE, SharedMovement, shared_movement
from perfgate.store import change_points, models
from perfgate.store.change_points import detect_changes, log_median
from perfgate.store.models import utcnow
from perfgate.store.row_writes import insert_ignoring_conflicts, table_of

_CHUNK = 500

SeriesKey = tuple[int, str]


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    scope_start: datetime | None


def refresh_changes(session: Session, *, run_id: str) -> int:
    """The reference twin of `change_points.refresh_changes`."""
    run = session.get(models.Run, run_id)
    if run is None or run.branch is None:
        return 0
    touched = sorted(
        (benchmark_id, metric)
        for benchmark_id, metric in session.execute(
            select(models.Measurement.benchmark_id, models.Measurement.metric).where(
                models.Measurement.run_id == run_id
            )
        )
    )
    if not touched:
        return 0
    times = list(
        session.scalars(
            select(models.Run.started_at)
            .where(
                models.Run.project_id == run.project_id,
                models.Run.branch == run.branch,
                models.Run.started_at <= run.started_at,
            )
            .order_by(models.Run.started_at.desc())
            .limit(change_points.WINDOW + 1)
        )
    )
    truncated = len(times) > change_points.WINDOW
    times = times[: change_points.WINDOW][::-1]
    window = _window(times, len(times), truncated=truncated)
    _refresh(session, project_id=run.project_id, branch=run.branch, window=window, series=touched)
    return len(touched)


def backfill_changes(session: Session) -> int:
    """The reference twin of `change_points.backfill_changes`."""
    branches = session.execute(
        select(models.Run.project_id, models.Run.branch)
        .where(models.Run.branch.is_not(None))
        .distinct()
        .order_by(models.Run.project_id, models.Run.branch)
    ).all()
    examined = 0
    for project_id, branch in branches:
        assert branch is not None
        times = list(
            session.scalars(
                select(models.Run.started_at)
                .where(models.Run.project_id == project_id, models.Run.branch == branch)
                .order_by(models.Run.started_at)
            )
        )
        series = sorted(
            session.execute(
                select(models.Measurement.benchmark_id, models.Measurement.metric)
                .join(models.Benchmark, models.Benchmark.id == models.Measurement.benchmark_id)
                .where(
                    models.Benchmark.project_id == project_id,
                    models.Measurement.branch == branch,
                )
                .distinct()
            ).all()
        )
        keys: list[SeriesKey] = [(b, m) for b, m in series]
        for end in change_points.window_ends(len(times)):
            window = _window(times, end, truncated=end > change_points.WINDOW)
            _refresh(session, project_id=project_id, branch=branch, window=window, series=keys)
        examined += len(keys)
    return examined


def _window(times: Sequence[datetime], end: int, *, truncated: bool) -> Window:
    first = max(0, end - change_points.WINDOW)
    return Window(
        start=times[first],
        end=times[end - 1],
        scope_start=(
            times[end - (change_points.WINDOW - change_points.CONTEXT)] if truncated else None
        ),
    )


@dataclass(frozen=True)
class _Point:
    run: str
    commit: str
    started_at: datetime
    median: float


@dataclass(frozen=True)
class _Stored:
    id: int
    run: str
    status: str
    before: float
    after: float
    started_at: datetime


def _refresh(
    session: Session, *, project_id: int, branch: str, window: Window, series: Sequence[SeriesKey]
) -> None:
    wanted = set(series)
    benchmark_ids = sorted({b for b, _ in series})
    movements = _movements(
        session, project_id=project_id, branch=branch, window=window, benchmark_ids=benchmark_ids
    )
    for start in range(0, len(benchmark_ids), _CHUNK):
        chunk = benchmark_ids[start : start + _CHUNK]
        points = _points(session, branch=branch, window=window, benchmark_ids=chunk)
        stored = _stored(session, project_id=project_id, branch=branch, window=window, ids=chunk)
        # One order for every writer, so concurrent uploads lock rows in the same order.
        for key in sorted(k for k in set(points) | set(stored) if k in wanted):
            _replace(
                session,
                project_id=project_id,
                branch=branch,
                key=key,
                points=points.get(key, []),
                stored=stored.get(key, []),
                scope_start=window.scope_start,
                movements=movements,
            )


Movements = tuple[dict[str, int], dict[str, SharedMovement[int]]]


def _movements(
    session: Session,
    *,
    project_id: int,
    branch: str,
    window: Window,
    benchmark_ids: Sequence[int],
) -> Movements:
    """Each run's position in the window, and each metric's shared movement measured on the
    first `SAMPLE` of the benchmarks that the window's last run measured."""
    runs = sorted(
        session.execute(
            select(models.Run.started_at, models.Run.id).where(
                models.Run.project_id == project_id,
                models.Run.branch == branch,
                models.Run.started_at >= window.start,
                models.Run.started_at <= window.end,
            )
        ).all()
    )
    position = {run: i for i, (_, run) in enumerate(runs)}
    if len(runs) < change_points._SHORTEST_WITH_CHANGES:
        return position, {}
    last = set(
        session.scalars(
            select(models.Measurement.benchmark_id).where(models.Measurement.run_id == runs[-1][1])
        )
    )
    sample = [b for b in benchmark_ids if b in last][:SAMPLE]
    if len(sample) <= MIN_OTHERS:
        return position, {}
    histories: dict[str, dict[int, list[float]]] = defaultdict(dict)
    for (benchmark_id, metric), points in _points(
        session, branch=branch, window=window, benchmark_ids=sample
    ).items():
        values = [math.nan] * len(runs)
        for point in points:
            values[position[point.run]] = log_median(point.median)
        histories[metric][benchmark_id] = values
    return position, {
        metric: shared_movement(found)
        for metric, found in histories.items()
        if len(found) > MIN_OTHERS
    }


def _points(
    session: Session, *, branch: str, window: Window, benchmark_ids: Collection[int]
) -> dict[SeriesKey, list[_Point]]:
    rows = session.execute(
        select(
            models.Measurement.benchmark_id,
            models.Measurement.metric,
            models.Measurement.run_id,
            models.Run.commit,
            models.Measurement.started_at,
            models.Measurement.median,
        )
        .join(models.Run, models.Run.id == models.Measurement.run_id)
        .where(
            models.Measurement.benchmark_id.in_(list(benchmark_ids)),
            models.Measurement.branch == branch,
            models.Measurement.started_at >= window.start,
            models.Measurement.started_at <= window.end,
        )
        # The order every reader shows a series in, so the cuts name the same runs.
        .order_by(
            models.Measurement.benchmark_id,
            models.Measurement.metric,
            models.Measurement.started_at,
            models.Measurement.run_id,
        )
    )
    out: dict[SeriesKey, list[_Point]] = defaultdict(list)
    for benchmark_id, metric, run_id, commit, started_at, median in rows:
        out[(benchmark_id, metric)].append(_Point(run_id, commit, started_at, median))
    return out


def _stored(
    session: Session, *, project_id: int, branch: str, window: Window, ids: Collection[int]
) -> dict[SeriesKey, list[_Stored]]:
    """The stored change points in the window, oldest first."""
    rows = session.execute(
        select(
            models.ChangePoint.id,
            models.ChangePoint.benchmark_id,
            models.ChangePoint.metric,
            models.ChangePoint.run_id,
            models.ChangePoint.status,
            models.ChangePoint.before,
            models.ChangePoint.after,
            models.Run.started_at,
        )
        .join(models.Run, models.Run.id == models.ChangePoint.run_id)
        .where(
            models.ChangePoint.project_id == project_id,
            models.ChangePoint.branch == branch,
            models.ChangePoint.benchmark_id.in_(list(ids)),
            models.Run.started_at >= window.start,
            models.Run.started_at <= window.end,
        )
        .order_by(models.Run.started_at, models.ChangePoint.run_id)
    )
    out: dict[SeriesKey, list[_Stored]] = defaultdict(list)
    for cp_id, benchmark_id, metric, run_id, status, before, after, started_at in rows:
        out[(benchmark_id, metric)].append(
            _Stored(cp_id, run_id, status, before, after, started_at)
        )
    return out


def _replace(
    session: Session,
    *,
    project_id: int,
    branch: str,
    key: SeriesKey,
    points: list[_Point],
    stored: list[_Stored],
    scope_start: datetime | None,
    movements: Movements,
) -> None:
    """Make the series' stored change points in scope what the detector finds in `points`."""
    settled = [s for s in stored if scope_start is not None and s.started_at < scope_start]
    if settled:
        # A level that starts in the context is the only level the detector should see there:
        # the few runs of the level before it would otherwise force a cut of their own.
        first = next((i for i, p in enumerate(points) if p.run == settled[-1].run), None)
        points = points[first:] if first is not None else points
    position, by_metric = movements
    movement = by_metric.get(key[1])
    medians = [p.median for p in points]
    if movement is None or not points:
        changes = detect_changes(medians)
    else:
        at = [position[p.run] for p in points]
        changes = detect_changes(
            medians,
            movement=movement.for_series(key[0])[at],
            movement_changes=sorted({bisect.bisect_left(at, c) for c in movement.changes}),
        )
    found = {
        points[index].run: (points[index], before, after)
        for index, before, after in changes
        if scope_start is None or points[index].started_at >= scope_start
    }
    stored = [s for s in stored if s not in settled]
    known = {s.run: s for s in stored}
    gone = [s.id for s in stored if s.status == "open" and s.run not in found]
    if gone:
        session.execute(delete(models.ChangePoint).where(models.ChangePoint.id.in_(gone)))
    now = utcnow()
    for run, (_, before, after) in found.items():
        same = known.get(run)
        if same is not None and (same.before, same.after) != (before, after):
            session.execute(
                update(models.ChangePoint)
                .where(models.ChangePoint.id == same.id)
                .values(before=before, after=after, ratio=_ratio(before, after), updated_at=now)
            )
    benchmark_id, metric = key
    insert_ignoring_conflicts(
        session,
        table_of(models.ChangePoint),
        [
            {
                "project_id": project_id,
                "benchmark_id": benchmark_id,
                "metric": metric,
                "branch": branch,
                "run_id": run,
                "commit": point.commit,
                "before": before,
                "after": after,
                "ratio": _ratio(before, after),
                "status": "open",
                "detected_at": now,
                "updated_at": now,
            }
            for run, (point, before, after) in found.items()
            if run not in known
        ],
        ["benchmark_id", "metric", "branch", "run_id"],
    )


def _ratio(before: float, after: float) -> float:
    return after / before if before else 0.0
