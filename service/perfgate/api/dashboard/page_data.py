"""Read queries only the dashboard needs: branch overviews, sparklines, latest changes, bases.

Read only, like every page: change points are detected when runs are stored
(`store/change_points.py`) and read here from the `change_points` table.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from perfgate.store import catalog, models

SPARKLINE_POINTS = 30


@dataclass(frozen=True)
class LatestChange:
    run: str
    commit: str
    time: datetime
    ratio: float
    status: str


@dataclass(frozen=True)
class BenchmarkRow:
    """One line of a project's page: a benchmark on one branch and metric."""

    key: str
    name: str
    unit: str | None
    direction: str | None
    runs: int
    latest: float | None
    sparkline: list[float]
    # Index into `sparkline` of each change point inside the sparkline's window.
    sparkline_changes: list[int]
    change: LatestChange | None


def series_branches(session: Session, *, benchmark_id: int, metric: str) -> list[str]:
    """Branches on which a benchmark has `metric` measurements (the trend page's filter)."""
    rows = session.scalars(
        select(models.Measurement.branch)
        .where(
            models.Measurement.benchmark_id == benchmark_id,
            models.Measurement.metric == metric,
            models.Measurement.branch.is_not(None),
        )
        .distinct()
    )
    return sorted(b for b in rows if b is not None)


def benchmark_metrics(session: Session, *, benchmark_id: int) -> list[str]:
    """Metrics ever measured for a benchmark, `time` first."""
    rows = set(
        session.scalars(
            select(models.Measurement.metric)
            .where(models.Measurement.benchmark_id == benchmark_id)
            .distinct()
        )
    )
    return sorted(rows, key=lambda m: (m != "time", m))


def branch_metrics(
    session: Session, *, project_id: int, branch: str, window: int = SPARKLINE_POINTS
) -> list[str]:
    """Metrics measured in the branch's recent runs, `time` first (the project page's filter)."""
    recent = (
        select(models.Run.id)
        .where(models.Run.project_id == project_id, models.Run.branch == branch)
        .order_by(models.Run.started_at.desc())
        .limit(window)
    )
    rows = set(
        session.scalars(
            select(models.Measurement.metric)
            .where(models.Measurement.run_id.in_(recent))
            .distinct()
        )
    )
    return sorted(rows, key=lambda m: (m != "time", m))


def previous_commit(
    session: Session, *, project_id: int, branch: str, before: datetime, other_than: str
) -> str | None:
    """The newest commit measured on `branch` before `before` that is not `other_than`."""
    return session.scalar(
        select(models.Run.commit)
        .where(
            models.Run.project_id == project_id,
            models.Run.branch == branch,
            models.Run.started_at < before,
            models.Run.commit != other_than,
        )
        .order_by(models.Run.started_at.desc())
        .limit(1)
    )


def benchmark_rows(
    session: Session, *, project_id: int, branch: str, metric: str, window: int = SPARKLINE_POINTS
) -> list[BenchmarkRow]:
    """Every benchmark of a project with its recent medians and latest change on `branch`."""
    benchmarks = catalog.list_benchmarks(session, project_id=project_id)
    recent_runs = list(
        session.scalars(
            select(models.Run.id)
            .where(models.Run.project_id == project_id, models.Run.branch == branch)
            .order_by(models.Run.started_at.desc(), models.Run.id.desc())
            .limit(window)
        )
    )
    recent: dict[int, list[tuple[datetime, str, float, str, str]]] = defaultdict(list)
    if recent_runs:
        for benchmark_id, started, run_id, median, unit, direction in session.execute(
            select(
                models.Measurement.benchmark_id,
                models.Measurement.started_at,
                models.Measurement.run_id,
                models.Measurement.median,
                models.Measurement.unit,
                models.Measurement.direction,
            ).where(models.Measurement.run_id.in_(recent_runs), models.Measurement.metric == metric)
        ):
            recent[benchmark_id].append((started, run_id, median, unit, direction))
    counts: dict[int, int] = dict(
        session.execute(
            select(models.Measurement.benchmark_id, func.count())
            .join(models.Benchmark, models.Benchmark.id == models.Measurement.benchmark_id)
            .where(
                models.Benchmark.project_id == project_id,
                models.Measurement.metric == metric,
                models.Measurement.branch == branch,
            )
            .group_by(models.Measurement.benchmark_id)
        ).all()
    )
    changes = _changes_by_benchmark(session, project_id=project_id, branch=branch, metric=metric)
    result = []
    for bench in benchmarks:
        points = sorted(recent.get(bench.id, []), key=lambda p: (p[0], p[1]))
        run_ids = [p[1] for p in points]
        bench_changes = changes.get(bench.id, [])
        result.append(
            BenchmarkRow(
                key=bench.key,
                name=bench.name,
                unit=points[-1][3] if points else None,
                direction=points[-1][4] if points else None,
                runs=int(counts.get(bench.id, 0)),
                latest=points[-1][2] if points else None,
                sparkline=[p[2] for p in points],
                sparkline_changes=[run_ids.index(c.run) for c in bench_changes if c.run in run_ids],
                change=bench_changes[-1] if bench_changes else None,
            )
        )
    return result


def _changes_by_benchmark(
    session: Session, *, project_id: int, branch: str, metric: str
) -> dict[int, list[LatestChange]]:
    """Stored change points per benchmark, oldest first (dismissed ones left out)."""
    rows = session.execute(
        select(models.ChangePoint, models.Run.started_at)
        .join(models.Run, models.Run.id == models.ChangePoint.run_id)
        .where(
            models.ChangePoint.project_id == project_id,
            models.ChangePoint.branch == branch,
            models.ChangePoint.metric == metric,
            models.ChangePoint.status != "dismissed",
        )
        .order_by(models.Run.started_at, models.ChangePoint.id)
    )
    found: dict[int, list[LatestChange]] = defaultdict(list)
    for change, started in rows:
        found[change.benchmark_id].append(
            LatestChange(
                run=change.run_id,
                commit=change.commit,
                time=started,
                ratio=change.ratio,
                status=change.status,
            )
        )
    return found
