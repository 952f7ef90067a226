"""Read-side repository functions: resolve commits and branches, history, series. Never commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from perfgate.errors import InputError, NotFoundError
from perfgate.stats.noise import PastRun
from perfgate.store import models


def resolve_project(session: Session, *, name: str | None) -> models.Project:
    """The named project, or the only one in the store when no name is given."""
    if name:
        project = session.scalar(select(models.Project).where(models.Project.name == name))
        if project is None:
            raise NotFoundError(f"project {name!r} is not in the store")
        return project
    projects = list(session.scalars(select(models.Project).order_by(models.Project.name).limit(3)))
    if not projects:
        raise NotFoundError("the store has no runs yet: run `perfgate run` or `perfgate upload`")
    if len(projects) > 1:
        names = ", ".join(p.name for p in projects)
        raise InputError(f"the store holds several projects ({names}, ...): pass --project")
    return projects[0]


@dataclass(frozen=True)
class RunRef:
    id: str
    commit: str
    branch: str | None
    started_at: datetime


def _refs(rows: Sequence[models.Run]) -> list[RunRef]:
    return [RunRef(r.id, r.commit, r.branch, r.started_at) for r in rows]


def runs_for_commit(session: Session, *, project_id: int, commit: str) -> list[RunRef]:
    """Every run of a commit given in full or as a unique prefix (oldest first)."""
    prefix = commit.lower()
    commits = list(
        session.scalars(
            select(models.Run.commit)
            .where(
                models.Run.project_id == project_id,
                # A prefix, not a pattern: `%` and `_` in it are matched literally.
                models.Run.commit.startswith(prefix, autoescape=True),
            )
            .distinct()
            .limit(5)
        )
    )
    if len(commits) > 1:
        shown = ", ".join(c[:12] for c in sorted(commits))
        raise InputError(f"commit prefix {commit!r} is ambiguous ({shown}): give more digits")
    if not commits:
        return []
    rows = session.scalars(
        select(models.Run)
        .where(models.Run.project_id == project_id, models.Run.commit == commits[0])
        .order_by(models.Run.started_at)
    )
    return _refs(list(rows))


def latest_commit_runs(
    session: Session, *, project_id: int, branch: str, before: datetime | None = None
) -> list[RunRef]:
    """The runs of the newest commit measured on `branch` (started before `before`, if given)."""
    stmt = select(models.Run).where(
        models.Run.project_id == project_id, models.Run.branch == branch
    )
    if before is not None:
        stmt = stmt.where(models.Run.started_at < before)
    newest = session.scalars(stmt.order_by(models.Run.started_at.desc()).limit(1)).first()
    if newest is None:
        return []
    return [
        r
        for r in runs_for_commit(session, project_id=project_id, commit=newest.commit)
        if r.branch == branch and (before is None or r.started_at < before)
    ]


def branch_exists(session: Session, *, project_id: int, branch: str) -> bool:
    return bool(
        session.scalar(
            select(func.count())
            .select_from(models.Run)
            .where(models.Run.project_id == project_id, models.Run.branch == branch)
        )
    )


def history_medians(
    session: Session,
    *,
    project_id: int,
    branch: str,
    before: datetime,
    exclude: Sequence[str] = (),
    fingerprint: str | None = None,
    limit: int = 30,
) -> list[PastRun]:
    """Each of the last `limit` runs of `branch`, oldest first: its commit, sampled medians and
    rounds.

    What the comparator's history noise model needs; reads only summary columns. With
    `fingerprint`, only runs measured on that runner class count: another machine's noise is
    no evidence for this one's.
    """
    query = select(models.Run.id).where(
        models.Run.project_id == project_id,
        models.Run.branch == branch,
        models.Run.started_at < before,
        models.Run.id.not_in(list(exclude) or [""]),
    )
    if fingerprint is not None:
        query = query.join(models.Environment, models.Environment.id == models.Run.environment_id)
        query = query.where(models.Environment.fingerprint == fingerprint)
    found = session.execute(
        query.add_columns(models.Run.commit, models.Run.started_at)
        .order_by(models.Run.started_at.desc())
        .limit(limit)
    ).all()
    commits: dict[str, str] = {row[0]: row[1] for row in found}
    started: dict[str, datetime] = {row[0]: row[2] for row in found}
    run_ids = list(commits)
    if not run_ids:
        return []
    rows = session.execute(
        select(
            models.Measurement.run_id,
            models.Benchmark.key,
            models.Measurement.metric,
            models.Measurement.median,
            models.Measurement.rounds,
        )
        .join(models.Benchmark, models.Benchmark.id == models.Measurement.benchmark_id)
        .where(models.Measurement.run_id.in_(run_ids), models.Measurement.samples.is_not(None))
    )
    per_run: dict[str, dict[tuple[str, str], float]] = {run_id: {} for run_id in run_ids}
    # A run's rounds (its processes): a sampled metric of several keeps a count per round.
    rounds: dict[str, int] = dict.fromkeys(run_ids, 1)
    for run_id, key, metric, median, counts in rows:
        per_run[run_id][(key, metric)] = median
        rounds[run_id] = max(rounds[run_id], len(counts or ()))
    return [
        PastRun(
            commit=commits[run_id],
            medians=per_run[run_id],
            started_at=started[run_id],
            rounds=rounds[run_id],
        )
        for run_id in reversed(run_ids)
    ]


def default_branch(session: Session, *, project_id: int) -> str | None:
    """`main`, else `master`, else the branch with the most runs (None without any run)."""
    rows = session.execute(
        select(models.Run.branch, func.count())
        .where(models.Run.project_id == project_id, models.Run.branch.is_not(None))
        .group_by(models.Run.branch)
    )
    counts = {branch: count for branch, count in rows if branch is not None}
    for preferred in ("main", "master"):
        if preferred in counts:
            return preferred
    if not counts:
        return None
    return max(sorted(counts), key=lambda b: counts[b])
