"""Use case: what the stored change points of a branch say each series' GitHub issue should be.

Read only. For every series (benchmark, metric) of the branch with a stored change point, the
slowdown its issue tracks (the latest one that qualifies), whether it may open a new issue, and
what became of the other change points, so that an issue reporting one of them can say why it
closes. The rules (docs/github.md, Change-point issues):

- a change point qualifies when its status is `open` or `acknowledged`, it is a slowdown in the
  metric's direction at least the benchmark's threshold (the policy's, per key), and no later
  step brought the level back within that threshold;
- it may open a new issue only when its status is `open` and it is at most `horizon` runs of the
  benchmark old (so a first sync over a long history opens nothing for old steps); an issue that
  is already open is kept up to date whatever the age or an acknowledgement.

The step's size and CI come from the runs of the two segments around it (`stats/step.py`), the
ops that moved from the median profile of the profiled runs nearest the change on each side
(`stats/attribution.py`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from perfgate.report.change_issue import (
    BranchChanges,
    Resolution,
    SeriesId,
    SeriesState,
    StepReport,
)
from perfgate.results import Op
from perfgate.stats.attribution import attribute
from perfgate.stats.step import step_size
from perfgate.store import models, run_lookup
from perfgate.store.trends import ChangePointView, SeriesPoint, list_changes, load_series

# Profiled runs read on each side of a step: the median profile of a few runs names the ops
# more reliably than one run, and runs far from the step may carry unrelated changes.
PROFILED_RUNS = 5
REPORTED = ("open", "acknowledged")


def change_issue_states(
    session: Session,
    *,
    project: str | None,
    branch: str | None,
    metric: str,
    horizon: int,
    threshold_for: Callable[[str], float],
    ignored: Callable[[str], bool] = lambda _key: False,
) -> BranchChanges:
    """The issue state of each series of `metric` on `branch` (default: the project's main
    branch, `run_lookup.default_branch`) with a stored change point, by key."""
    project_row = run_lookup.resolve_project(session, name=project)
    branch = branch or run_lookup.default_branch(session, project_id=project_row.id) or "main"
    by_key: dict[str, list[ChangePointView]] = defaultdict(list)
    for change in list_changes(
        session, project=project_row.name, branch=branch, metric=metric, status=None
    ):
        by_key[change.key].append(change)
    states = []
    for key in sorted(by_key):
        series = SeriesId(project_row.name, branch, key, metric)
        if ignored(key):
            resolutions = {c.run: Resolution("ignored") for c in by_key[key]}
            states.append(
                SeriesState(series=series, resolutions=resolutions, detected=frozenset(resolutions))
            )
            continue
        states.append(
            _series_state(
                session,
                project_id=project_row.id,
                series=series,
                horizon=horizon,
                threshold=threshold_for(key),
            )
        )
    return BranchChanges(project=project_row.name, branch=branch, metric=metric, states=states)


def _worse(direction: str, before: float, after: float) -> float:
    """The change as a ratio where > 1 is worse (after/before for lower-is-better metrics)."""
    if direction == "higher":
        return before / after if after > 0 else float("inf")
    return after / before if before > 0 else float("inf")


def _series_state(
    session: Session, *, project_id: int, series: SeriesId, horizon: int, threshold: float
) -> SeriesState:
    loaded = load_series(
        session, project=series.project, key=series.key, metric=series.metric, branch=series.branch
    )
    points = loaded.points
    index = {p.run: i for i, p in enumerate(points)}
    changes = sorted(
        (c for c in loaded.change_points if index.get(c.run, 0) > 0), key=lambda c: index[c.run]
    )
    resolutions: dict[str, Resolution] = {}
    tracked: ChangePointView | None = None
    for i, change in enumerate(changes):
        worse = _worse(loaded.direction, change.before, change.after)
        if change.status not in REPORTED:
            resolutions[change.run] = Resolution("dismissed")
            continue
        if worse - 1 < threshold:
            resolutions[change.run] = (
                Resolution("small", ratio=change.ratio, threshold=threshold)
                if worse > 1
                else Resolution("vanished")
            )
            continue
        back = next(
            (
                later
                for later in changes[i + 1 :]
                if _worse(loaded.direction, change.before, later.after) - 1 < threshold
            ),
            None,
        )
        if back is not None:
            at = index[back.run]
            resolutions[change.run] = Resolution(
                "recovered", good=points[at - 1].commit, bad=points[at].commit
            )
            continue
        tracked = change
    detected = frozenset(c.run for c in changes)
    if tracked is None:
        return SeriesState(series=series, resolutions=resolutions, detected=detected)
    # Earlier qualifying steps are still slowdowns, but the issue reports the latest one.
    resolutions.pop(tracked.run, None)
    report = _report(
        session,
        project_id=project_id,
        series=series,
        points=points,
        cuts=[index[c.run] for c in changes],
        at=index[tracked.run],
        change=tracked,
        unit=loaded.unit,
        direction=loaded.direction,
        threshold=threshold,
    )
    age = len(points) - index[tracked.run]
    return SeriesState(
        series=series,
        tracked=report,
        may_open=tracked.status == "open" and age <= horizon,
        resolutions=resolutions,
        detected=detected,
    )


def _report(
    session: Session,
    *,
    project_id: int,
    series: SeriesId,
    points: Sequence[SeriesPoint],
    cuts: Sequence[int],
    at: int,
    change: ChangePointView,
    unit: str,
    direction: str,
    threshold: float,
) -> StepReport:
    start = max((c for c in cuts if c < at), default=0)
    end = min((c for c in cuts if c > at), default=len(points))
    before, after = points[start:at], points[at:end]
    benchmark_id = session.scalar(
        select(models.Benchmark.id).where(
            models.Benchmark.project_id == project_id, models.Benchmark.key == series.key
        )
    )
    base_ops, base_runs = _profile(session, benchmark_id, [p.run for p in reversed(before)])
    head_ops, head_runs = _profile(session, benchmark_id, [p.run for p in after])
    return StepReport(
        series=series,
        run=change.run,
        status=change.status,
        unit=unit,
        direction=direction,
        step=step_size([p.median for p in before], [p.median for p in after]),
        good=points[at - 1].commit,
        bad=points[at].commit,
        threshold=threshold,
        ops=tuple(attribute(base_ops, head_ops)) if base_runs and head_runs else (),
        profiled=(base_runs, head_runs),
    )


def _profile(
    session: Session, benchmark_id: int | None, runs: Sequence[str]
) -> tuple[list[Op], int]:
    """The median per-call profile of the first PROFILED_RUNS of `runs` (nearest the step
    first) that have one, and how many runs that was."""
    if benchmark_id is None or not runs:
        return [], 0
    rows = session.execute(
        select(
            models.Op.run_id,
            models.Op.op,
            models.Op.count,
            models.Op.self_cpu_us,
            models.Op.self_device_us,
            models.Op.flops,
        ).where(models.Op.benchmark_id == benchmark_id, models.Op.run_id.in_(list(runs)))
    )
    per_run: dict[str, dict[str, tuple[float, float, float, float]]] = defaultdict(dict)
    for run_id, op, count, cpu, device, flops in rows:
        per_run[run_id][op] = (count, cpu, device, flops)
    chosen = [run for run in runs if run in per_run][:PROFILED_RUNS]
    if not chosen:
        return [], 0
    names = sorted({op for run in chosen for op in per_run[run]})
    ops = []
    for name in names:
        # An op missing from a run's profile was not called there: it counts as zero.
        values = [per_run[run].get(name, (0.0, 0.0, 0.0, 0.0)) for run in chosen]
        count, cpu, device, flops = (statistics.median(v[i] for v in values) for i in range(4))
        if count > 0 or cpu > 0 or device > 0:
            ops.append(
                Op(op=name, count=count, self_cpu_us=cpu, self_device_us=device, flops=flops)
            )
    return ops, len(chosen)
