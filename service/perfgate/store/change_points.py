"""Use case: keep the stored change points up to date as runs arrive. Never commits.

Change points are computed when data arrives and read from the `change_points` table by every
reader (`/series`, `/changes`, the dashboard, `perfgate trend|changes`); no read detects or
writes. `refresh_changes` runs in the transaction that stores a new run (`store_document`), so a
stored run always has its change points; `backfill_changes` does the same for a whole store
(migration 0004).

Detection sees a window of the branch's last `WINDOW` runs up to the new run, not the whole
history: the detector costs O(n^2) per series (docs/changepoints.md), and an upload re-detects
every series it touches. Within the window, the stored *open* change points of each series are
replaced by what the detector finds now (a change point it no longer sees was never triaged and
goes); a status set by a person (`acknowledged`, `dismissed`) is kept, with its levels updated
when the detector still sees it. When the history is longer than the window, its oldest quarter
(`CONTEXT` runs) is context only: change points there were settled by earlier windows and are
left alone, so a step is judged with runs on both sides of it.
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Select, bindparam, delete, select, text, update
from sqlalchemy.orm import Session

from perfgate.stats.changepoints import detect_change_points, segment_levels
from perfgate.stats.shared_movement import (
    MIN_OTHERS,
    SAMPLE,
    SharedMovement,
    confirmed_changes,
    shared_movement,
)
from perfgate.store import models
from perfgate.store.models import utcnow
from perfgate.store.row_writes import insert_ignoring_conflicts, table_of

# Runs of a branch one detection sees: 300 points cost about 4 ms per series, 500 cost 13 and
# 2,000 about 120 (process time on the 2-core development machine).
WINDOW = 300
# The oldest runs of a full window, whose change points the window does not revisit.
CONTEXT = WINDOW // 4
# Change-point ids per DELETE (SQLite caps bound parameters).
_CHUNK = 500
# Rows the points query hands over at a time: one query streams every series of a refresh, and
# only one series' points are held at once.
_STREAM_ROWS = 10_000

SeriesKey = tuple[int, str]  # (benchmark id, metric)

# The detector's own rule (its docstring, tests/test_changepoints.py): a series shorter than two
# minimum segments has no change points. Deciding that here skips its per-call set-up, which was
# most of refreshing the short series (a few runs each) of a new or wide project: 6 of the 11 s
# of CPU that storing a second 60,000-benchmark run spent on change points (docs/store.md).
_SHORTEST_WITH_CHANGES = 2 * int(
    inspect.signature(detect_change_points).parameters["min_size"].default
)


def detect_changes(
    medians: Sequence[float],
    *,
    movement: Sequence[float] | None = None,
    movement_changes: Sequence[int] = (),
) -> list[tuple[int, float, float]]:
    """(index, level before, level after) of each change in a series of medians, oldest first.

    Detected on a log scale, so a step is judged by its ratio whatever the benchmark's size.
    With `movement`, the suite's shared movement at each point (log scale, NaN where unknown)
    and `movement_changes`, the indices where it changes level, a change that is only the
    runs' shared movement is dropped (stats/shared_movement.py).
    """
    values = [log_median(m) for m in medians]
    found = _changes_alone(values)
    if found and movement is not None:
        found = confirmed_changes(values, movement, found, movement_changes)
    return _with_levels(values, found)


def _changes_alone(values: Sequence[float]) -> list[int]:
    """The detector's change points of one series (log medians), without the suite's."""
    if len(values) < max(2, _SHORTEST_WITH_CHANGES):
        return []
    return detect_change_points(values)


def _with_levels(values: Sequence[float], found: Sequence[int]) -> list[tuple[int, float, float]]:
    if not found:
        return []
    levels = segment_levels(values, found)
    return [(index, math.exp(levels[i]), math.exp(levels[i + 1])) for i, index in enumerate(found)]


def log_median(median: float) -> float:
    """A median on the scale changes are detected on (a zero or negative one counts as 1)."""
    return math.log(median) if median > 0 else 0.0


@dataclass(frozen=True)
class Window:
    """Runs of one branch from `start` to `end` (started_at, inclusive), `runs` of them; change
    points of runs from `scope_start` on (every one when None) are the detector's to replace."""

    start: datetime
    end: datetime
    scope_start: datetime | None
    runs: int


def refresh_changes(session: Session, *, run_id: str) -> int:
    """Re-detect the change points of every series run `run_id` has a measurement in.

    A series is (benchmark, metric, the run's branch); a run without a branch has none.
    Returns the number of series examined.
    """
    run = session.get(models.Run, run_id)
    if run is None or run.branch is None:
        return 0
    # Before the window is read: a concurrent upload to the branch that got here first has
    # committed by the time we read, so its run is in our window (lock_branch).
    lock_branch(session, project_id=run.project_id, branch=run.branch)
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
            .limit(WINDOW + 1)
        )
    )
    truncated = len(times) > WINDOW
    times = times[:WINDOW][::-1]
    window = _window(times, len(times), truncated=truncated)
    _refresh(
        session,
        project_id=run.project_id,
        branch=run.branch,
        window=window,
        series=touched,
        benchmarks=select(models.Measurement.benchmark_id).where(
            models.Measurement.run_id == run_id
        ),
    )
    return len(touched)


def lock_branch(session: Session, *, project_id: int, branch: str) -> None:
    """Serialise the refreshes of one (project, branch) until the transaction ends (PostgreSQL).

    Two uploads to a branch that refreshed at once would each see only its own new run (the
    other's is not committed yet), so a step that needs both runs would be missed by both; the
    second to take this lock waits for the first to commit and then sees both. The key is a
    stable hash (not Python's `hash`, which differs between server processes). SQLite needs
    nothing: it lets one writer at a time in, for the whole transaction.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    digest = hashlib.blake2b(f"{project_id}\x00{branch}".encode(), digest_size=8).digest()
    session.execute(
        text("SELECT pg_advisory_xact_lock(:key)"),
        {"key": int.from_bytes(digest, "big", signed=True)},
    )


def backfill_changes(session: Session) -> int:
    """Detect the change points of every series in the store, as if its runs had arrived in
    order one window step at a time; returns the number of series examined."""
    branches = session.execute(
        select(models.Run.project_id, models.Run.branch)
        .where(models.Run.branch.is_not(None))
        .distinct()
        .order_by(models.Run.project_id, models.Run.branch)
    ).all()
    examined = 0
    for project_id, branch in branches:
        assert branch is not None
        lock_branch(session, project_id=project_id, branch=branch)
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
        benchmarks = select(models.Benchmark.id).where(models.Benchmark.project_id == project_id)
        for end in window_ends(len(times)):
            window = _window(times, end, truncated=end > WINDOW)
            _refresh(
                session,
                project_id=project_id,
                branch=branch,
                window=window,
                series=keys,
                benchmarks=benchmarks,
            )
        examined += len(keys)
    return examined


def window_ends(runs: int) -> list[int]:
    """How many runs had arrived at each step of a backfill: scopes that tile the history."""
    if runs == 0:
        return []
    ends = [min(runs, WINDOW)]
    while ends[-1] < runs:
        ends.append(min(runs, ends[-1] + WINDOW - CONTEXT))
    return ends


def _window(times: Sequence[datetime], end: int, *, truncated: bool) -> Window:
    """The window of the last WINDOW runs of `times` (ascending) before index `end`."""
    first = max(0, end - WINDOW)
    return Window(
        start=times[first],
        end=times[end - 1],
        scope_start=times[end - (WINDOW - CONTEXT)] if truncated else None,
        runs=end - first,
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


@dataclass
class _Writes:
    """What one refresh changes, gathered over its series and written in bulk at the end."""

    gone: list[int] = field(default_factory=list)
    moved: list[dict[str, Any]] = field(default_factory=list)
    new: list[dict[str, Any]] = field(default_factory=list)


def _refresh(
    session: Session,
    *,
    project_id: int,
    branch: str,
    window: Window,
    series: Sequence[SeriesKey],
    benchmarks: Select[Any],
) -> None:
    """Make the stored change points of `series` in `window` what the detector finds now.

    `benchmarks` selects the ids of (at least) the series' benchmarks. One query reads the
    stored change points, one the shared movement's sample (the suite's runs: a change of a
    series may be theirs, not the benchmark's) and one, streamed, the points of every series;
    the changes are written with one statement per kind (deletes by chunks of ids).
    """
    wanted = set(series)
    stored = _stored(session, project_id=project_id, branch=branch, window=window, ids=benchmarks)
    writes = _Writes()
    now = utcnow()
    seen: set[SeriesKey] = set()

    def gather(key: SeriesKey, points: list[_Point], values: list[float], found: list[int]) -> None:
        _replace(
            writes,
            project_id=project_id,
            branch=branch,
            key=key,
            points=points,
            found=_with_levels(values, found),
            stored=stored.get(key, []),
            scope_start=window.scope_start,
            now=now,
        )

    # A series has at most one point per run: in a window of fewer runs than the detector's
    # shortest cuttable series no series can have a change point, so its points are not read
    # (what is stored there still goes through _replace, which drops the open ones).
    if window.runs >= _SHORTEST_WITH_CHANGES:
        runs = _window_runs(session, project_id=project_id, branch=branch, window=window)
        # Read before the stream, so that the stream still holds one series at a time.
        movements = _movements(session, branch=branch, window=window, runs=runs, ids=benchmarks)
        for key, read in _points(session, branch=branch, window=window, runs=runs, ids=benchmarks):
            if key not in wanted:
                continue
            seen.add(key)
            points = _in_scope(read, stored.get(key, []), window.scope_start)
            values = [log_median(p.median) for p in points]
            found = _changes_alone(values)
            shared = movements.get(key[1]) if found else None
            if shared is not None:
                found = _not_shared(key[0], points, values, found, shared, runs)
            gather(key, points, values, found)
    for key in sorted(k for k in stored if k in wanted and k not in seen):
        gather(key, [], [], [])
    _write(session, writes)


def _not_shared(  # noqa: PLR0917 (one series' parts, each named at the one call)
    benchmark_id: int,
    points: Sequence[_Point],
    values: Sequence[float],
    found: list[int],
    movement: SharedMovement[int],
    runs: _Runs,
) -> list[int]:
    """The change points of `found` that are the benchmark's own, not the runs' movement."""
    at = [runs.position[p.run] for p in points]
    # Where the movement changes level, as indices of this series (it may have missed runs).
    changes = sorted({bisect.bisect_left(at, change) for change in movement.changes})
    shared = movement.for_series(benchmark_id)[at]
    return confirmed_changes(values, shared, found, changes)


@dataclass(frozen=True)
class _Runs:
    """The runs of a window in the order every reader shows them, with their commit and time."""

    position: dict[str, int]
    commit: dict[str, str]
    started_at: dict[str, datetime]
    last: str


def _window_runs(session: Session, *, project_id: int, branch: str, window: Window) -> _Runs:
    rows = sorted(
        session.execute(
            select(models.Run.started_at, models.Run.id, models.Run.commit).where(
                models.Run.project_id == project_id,
                models.Run.branch == branch,
                models.Run.started_at >= window.start,
                models.Run.started_at <= window.end,
            )
        ).all()
    )
    return _Runs(
        position={run: i for i, (_, run, _) in enumerate(rows)},
        commit={run: commit for _, run, commit in rows},
        started_at={run: started_at for started_at, run, _ in rows},
        last=rows[-1][1],
    )


class _Movements:
    """The shared movement of a window's runs per metric, worked out the first time a series of
    that metric has a change to check (most refreshes have none); None for a metric fewer
    than `MIN_OTHERS` + 1 sampled benchmarks measured."""

    def __init__(self, histories: dict[str, dict[int, np.ndarray]]) -> None:
        self._histories = histories
        self._found: dict[str, SharedMovement[int] | None] = {}

    def get(self, metric: str) -> SharedMovement[int] | None:
        if metric not in self._found:
            histories = self._histories.get(metric, {})
            self._found[metric] = (
                shared_movement(histories) if len(histories) > MIN_OTHERS else None
            )
        return self._found[metric]


def _movements(
    session: Session, *, branch: str, window: Window, runs: _Runs, ids: Select[Any]
) -> _Movements:
    """The sample's histories the shared movement is measured on: the first `SAMPLE`
    benchmarks (by id) of the window's last run."""
    sample = list(
        session.scalars(
            select(models.Measurement.benchmark_id)
            .where(
                models.Measurement.run_id == runs.last,
                models.Measurement.benchmark_id.in_(ids.scalar_subquery()),
            )
            .distinct()
            .order_by(models.Measurement.benchmark_id)
            .limit(SAMPLE)
        )
    )
    if len(sample) <= MIN_OTHERS:
        return _Movements({})
    histories: dict[str, dict[int, np.ndarray]] = {}
    for benchmark_id, metric, run_id, median in session.execute(
        select(
            models.Measurement.benchmark_id,
            models.Measurement.metric,
            models.Measurement.run_id,
            models.Measurement.median,
        ).where(
            models.Measurement.benchmark_id.in_(sample),
            models.Measurement.branch == branch,
            models.Measurement.started_at >= window.start,
            models.Measurement.started_at <= window.end,
        )
    ):
        position = runs.position.get(run_id)
        if position is None:
            continue
        by_benchmark = histories.setdefault(metric, {})
        if benchmark_id not in by_benchmark:
            by_benchmark[benchmark_id] = np.full(len(runs.position), np.nan)
        by_benchmark[benchmark_id][position] = log_median(median)
    return _Movements(histories)


def _write(session: Session, writes: _Writes) -> None:
    table = table_of(models.ChangePoint)
    gone = sorted(writes.gone)
    for start in range(0, len(gone), _CHUNK):
        session.execute(delete(table).where(table.c.id.in_(gone[start : start + _CHUNK])))
    if writes.moved:
        session.execute(
            update(table)
            .where(table.c.id == bindparam("cp_id"))
            .values(
                before=bindparam("cp_before"),
                after=bindparam("cp_after"),
                ratio=bindparam("cp_ratio"),
                updated_at=bindparam("cp_updated_at"),
            ),
            sorted(writes.moved, key=lambda row: int(row["cp_id"])),
        )
    # In series order, the order every writer inserts in (rows of one key lock in one order).
    writes.new.sort(key=lambda row: (row["benchmark_id"], row["metric"]))
    insert_ignoring_conflicts(
        session, table, writes.new, ["benchmark_id", "metric", "branch", "run_id"]
    )


def _points(
    session: Session, *, branch: str, window: Window, runs: _Runs, ids: Select[Any]
) -> Iterator[tuple[SeriesKey, list[_Point]]]:
    """The points of each series of the benchmarks `ids` selects in `window`, one series at a
    time in (benchmark id, metric) order, from one streamed query.

    A point's commit and time are its run's (a measurement's `started_at` is a copy of its
    run's), read once per run of the window rather than joined and decoded once per point: for
    a long history that decoding was half the time of reading the points.
    """
    statement = (
        select(
            models.Measurement.benchmark_id,
            models.Measurement.metric,
            models.Measurement.run_id,
            models.Measurement.median,
        )
        .where(
            models.Measurement.benchmark_id.in_(ids.scalar_subquery()),
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
        .execution_options(yield_per=_STREAM_ROWS)
    )
    key: SeriesKey | None = None
    points: list[_Point] = []
    # On the session's connection, not through the ORM session: plain rows, without its
    # per-row loading steps.
    for benchmark_id, metric, run_id, median in session.connection().execute(statement):
        if (benchmark_id, metric) != key:
            if key is not None:
                yield key, points
            key, points = (benchmark_id, metric), []
        points.append(_Point(run_id, runs.commit[run_id], runs.started_at[run_id], median))
    if key is not None:
        yield key, points


def _stored(
    session: Session, *, project_id: int, branch: str, window: Window, ids: Select[Any]
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
            models.ChangePoint.benchmark_id.in_(ids.scalar_subquery()),
            models.Run.started_at >= window.start,
            models.Run.started_at <= window.end,
        )
        .order_by(models.Run.started_at, models.ChangePoint.run_id)
    )
    out: dict[SeriesKey, list[_Stored]] = {}
    for cp_id, benchmark_id, metric, run_id, status, before, after, started_at in rows:
        out.setdefault((benchmark_id, metric), []).append(
            _Stored(cp_id, run_id, status, before, after, started_at)
        )
    return out


def _in_scope(
    points: list[_Point], stored: Sequence[_Stored], scope_start: datetime | None
) -> list[_Point]:
    """The points the detector sees: from the last settled change point (one in the window's
    context) on, when there is one."""
    settled = [s for s in stored if scope_start is not None and s.started_at < scope_start]
    if not settled:
        return points
    # A level that starts in the context is the only level the detector should see there:
    # the few runs of the level before it would otherwise force a cut of their own.
    first = next((i for i, p in enumerate(points) if p.run == settled[-1].run), None)
    return points[first:] if first is not None else points


def _replace(
    writes: _Writes,
    *,
    project_id: int,
    branch: str,
    key: SeriesKey,
    points: list[_Point],
    found: list[tuple[int, float, float]],
    stored: list[_Stored],
    scope_start: datetime | None,
    now: datetime,
) -> None:
    """Gather what makes the series' stored change points in scope the changes `found` in
    `points` (the series' points from `_in_scope`)."""
    in_scope = {
        points[index].run: (points[index], before, after)
        for index, before, after in found
        if scope_start is None or points[index].started_at >= scope_start
    }
    stored = [s for s in stored if scope_start is None or s.started_at >= scope_start]
    known = {s.run: s for s in stored}
    writes.gone.extend(s.id for s in stored if s.status == "open" and s.run not in in_scope)
    benchmark_id, metric = key
    for run, (point, before, after) in in_scope.items():
        same = known.get(run)
        if same is None:
            writes.new.append(
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
            )
        elif (same.before, same.after) != (before, after):
            writes.moved.append(
                {
                    "cp_id": same.id,
                    "cp_before": before,
                    "cp_after": after,
                    "cp_ratio": _ratio(before, after),
                    "cp_updated_at": now,
                }
            )


def _ratio(before: float, after: float) -> float:
    return after / before if before else 0.0
