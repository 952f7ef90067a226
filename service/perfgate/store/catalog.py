"""Read queries behind the service and the dashboard: projects, benchmarks, runs. Never commit.

Every function takes the session and returns plain dataclasses, so the API and the pages convert
them to their own shapes. Each query is served by an index (project, commit/branch, started_at).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from perfgate.errors import NotFoundError
from perfgate.store import models


@dataclass(frozen=True)
class ProjectSummary:
    id: int
    name: str
    created_at: datetime
    runs: int
    latest_run_at: datetime | None


@dataclass(frozen=True)
class BenchmarkSummary:
    id: int
    key: str
    name: str
    params: dict[str, Any]


@dataclass(frozen=True)
class RunSummary:
    id: str
    project: str
    commit: str
    branch: str | None
    pr: int | None
    base_commit: str | None
    started_at: datetime
    finished_at: datetime | None
    uploaded_at: datetime
    fingerprint: str


def list_projects(
    session: Session, *, names: Collection[str] | None = None
) -> list[ProjectSummary]:
    """Projects by name (only `names`, when given), with their run count and latest run time."""
    stmt = (
        select(
            models.Project.id,
            models.Project.name,
            models.Project.created_at,
            func.count(models.Run.id),
            func.max(models.Run.started_at),
        )
        .outerjoin(models.Run, models.Run.project_id == models.Project.id)
        .group_by(models.Project.id, models.Project.name, models.Project.created_at)
        .order_by(models.Project.name)
    )
    if names is not None:
        stmt = stmt.where(models.Project.name.in_(list(names)))
    summaries = []
    for project_id, name, created_at, runs, latest in session.execute(stmt):
        summaries.append(
            ProjectSummary(
                id=project_id,
                name=name,
                created_at=created_at,
                runs=runs,
                # An aggregate loses the column type: SQLite gives back a naive string/datetime.
                latest_run_at=_aware(latest),
            )
        )
    return summaries


def get_project(session: Session, *, name: str) -> models.Project:
    project = session.scalar(select(models.Project).where(models.Project.name == name))
    if project is None:
        raise NotFoundError(f"project {name!r} is not in the store")
    return project


def list_benchmarks(session: Session, *, project_id: int) -> list[BenchmarkSummary]:
    """Every benchmark instance of a project, by key."""
    rows = session.scalars(
        select(models.Benchmark)
        .where(models.Benchmark.project_id == project_id)
        .order_by(models.Benchmark.key)
    )
    return [BenchmarkSummary(id=b.id, key=b.key, name=b.name, params=b.params) for b in rows]


def get_benchmark(session: Session, *, project_id: int, key: str) -> BenchmarkSummary:
    bench = session.scalar(
        select(models.Benchmark).where(
            models.Benchmark.project_id == project_id, models.Benchmark.key == key
        )
    )
    if bench is None:
        raise NotFoundError(f"benchmark {key!r} is not in the store")
    return BenchmarkSummary(id=bench.id, key=bench.key, name=bench.name, params=bench.params)


def _run_stmt() -> Any:
    return (
        select(models.Run, models.Project.name, models.Environment.fingerprint)
        .join(models.Project, models.Project.id == models.Run.project_id)
        .join(models.Environment, models.Environment.id == models.Run.environment_id)
    )


def _summary(run: models.Run, project: str, fingerprint: str) -> RunSummary:
    return RunSummary(
        id=run.id,
        project=project,
        commit=run.commit,
        branch=run.branch,
        pr=run.pr,
        base_commit=run.base_commit,
        started_at=run.started_at,
        finished_at=run.finished_at,
        uploaded_at=run.uploaded_at,
        fingerprint=fingerprint,
    )


def list_runs(
    session: Session,
    *,
    project_id: int,
    commit: str | None = None,
    branch: str | None = None,
    before: datetime | None = None,
    limit: int = 50,
) -> list[RunSummary]:
    """Runs of a project, newest first; `commit` may be a prefix, `before` pages backwards."""
    stmt = _run_stmt().where(models.Run.project_id == project_id)
    if commit:
        # A prefix, not a pattern: `%` and `_` in it are matched literally.
        stmt = stmt.where(models.Run.commit.startswith(commit.lower(), autoescape=True))
    if branch is not None:
        stmt = stmt.where(models.Run.branch == branch)
    if before is not None:
        stmt = stmt.where(models.Run.started_at < before)
    stmt = stmt.order_by(models.Run.started_at.desc(), models.Run.id.desc()).limit(limit)
    return [_summary(run, project, fp) for run, project, fp in session.execute(stmt)]


def get_run(session: Session, *, run_id: str) -> RunSummary:
    found = session.execute(_run_stmt().where(models.Run.id == run_id)).first()
    if found is None:
        raise NotFoundError(f"run {run_id!r} is not in the store")
    run, project, fingerprint = found
    return _summary(run, project, fingerprint)


def list_branches(session: Session, *, project_id: int) -> list[str]:
    """Branches with at least one run, by name."""
    rows = session.scalars(
        select(models.Run.branch)
        .where(models.Run.project_id == project_id, models.Run.branch.is_not(None))
        .distinct()
        .order_by(models.Run.branch)
    )
    return [b for b in rows if b is not None]


def _aware(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
