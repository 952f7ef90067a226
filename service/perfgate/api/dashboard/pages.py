"""The dashboard's pages: projects, a project's benchmarks, a trend chart, run and comparison."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session, sessionmaker

from perfgate.api.auth import authorize, visible_projects
from perfgate.api.dashboard import queries, views
from perfgate.api.dashboard.render import PageRoute, render, root_path
from perfgate.api.deps import SessionDep, SessionsDep
from perfgate.errors import NotFoundError
from perfgate.report.units import format_change, format_value
from perfgate.stats.compare import CompareSettings
from perfgate.stats.model import Comparison
from perfgate.store import comparisons, reads
from perfgate.store.trends import Series, load_series

router = APIRouter(route_class=PageRoute, include_in_schema=False)

RECENT_RUNS = 15


def _project(request: Request, session: Session, name: str) -> reads.ProjectSummary:
    authorize(request, session, project=name, scope="read")
    found = reads.list_projects(session, names=[name])
    if not found:
        raise NotFoundError(f"project {name!r} is not in the store")
    return found[0]


@router.get("/", name="dashboard_projects")
def projects_page(request: Request, session: SessionDep) -> Response:
    names = visible_projects(request, session)
    projects = reads.list_projects(session, names=names)
    root = root_path(request)
    return render(
        request,
        "projects.html",
        {
            "projects": [{"summary": p, "url": views.project_path(root, p.name)} for p in projects],
        },
    )


@router.get("/p/{project:path}/trend", name="dashboard_trend")
def trend_page(
    request: Request,
    *,
    project: str,
    session: SessionDep,
    sessions: SessionsDep,
    key: str = "",
    metric: str = "time",
    branch: str = "",
) -> Response:
    summary = _project(request, session, project)
    if not key:
        raise NotFoundError("which benchmark? the trend page needs ?key=")
    bench = reads.get_benchmark(session, project_id=summary.id, key=key)
    metrics = queries.benchmark_metrics(session, benchmark_id=bench.id)
    branches = queries.series_branches(session, benchmark_id=bench.id, metric=metric)
    if not branch:
        preferred = queries.default_branch(session, project_id=summary.id)
        branch = preferred if preferred in branches else (branches[0] if branches else "main")
    root = root_path(request)
    context: dict[str, Any] = {
        "project": project,
        "project_url": views.project_path(root, project),
        "key": key,
        "metric": metric,
        "metrics": metrics if metric in metrics else [metric, *metrics],
        "branch": branch,
        "branches": branches if branch in branches else [*branches, branch],
        "series": None,
        "chart": None,
        "message": None,
    }
    try:
        series = load_series(sessions, project=project, key=key, metric=metric, branch=branch)
    except NotFoundError as exc:
        context["message"] = str(exc)
        return render(request, "trend.html", context, status_code=404)
    context["series"] = series
    context["chart"] = _chart_data(root, project, series)
    return render(request, "trend.html", context)


def _chart_data(root: str, project: str, series: Series) -> dict[str, Any]:
    """What trend.js draws; texts are formatted here so they match the tables and the CLI."""
    changes = {c.run: c for c in series.change_points}
    points = []
    for p in series.points:
        change = changes.get(p.run)
        points.append(
            {
                "run": p.run,
                "commit": p.commit,
                "time": p.time.isoformat(),
                "date": f"{p.time:%Y-%m-%d %H:%M}",
                "median": p.median,
                "ci": list(p.ci) if p.ci else None,
                "n": p.n,
                "median_text": format_value(p.median, series.unit),
                "ci_text": (
                    f"{format_value(p.ci[0], series.unit)} … {format_value(p.ci[1], series.unit)}"
                    if p.ci
                    else None
                ),
                "change": (
                    {
                        "ratio": change.ratio,
                        "text": f"{format_change(change.ratio)} ({change.status})",
                        "status": change.status,
                    }
                    if change
                    else None
                ),
                "url": views.run_path(root, project, p.run),
            }
        )
    return {
        "key": series.key,
        "metric": series.metric,
        "unit": series.unit,
        "direction": series.direction,
        "branch": series.branch,
        "points": points,
        "change_points": [i for i, p in enumerate(series.points) if p.run in changes],
    }


@router.get("/p/{project:path}/runs/{run_id}", name="dashboard_run")
def run_page(
    request: Request, project: str, run_id: str, session: SessionDep, sessions: SessionsDep
) -> Response:
    summary = _project(request, session, project)
    run = reads.get_run(session, run_id=run_id)
    if run.project != project:
        raise NotFoundError(f"run {run_id!r} is not a run of {project!r}")
    head = comparisons.resolve_side(session, project_id=summary.id, ref=run.commit)
    base, note = _base_side(session, project_id=summary.id, run=run, head=head)
    comparison = _compare(sessions, base, head) if base is not None else None
    return render(
        request,
        "run.html",
        _comparison_context(request, project, comparison) | {"run": run, "note": note},
    )


def _base_side(
    session: Session, *, project_id: int, run: reads.RunSummary, head: comparisons.Side
) -> tuple[comparisons.Side | None, str | None]:
    """What a run is compared with: its recorded base commit, else the previous commit."""
    fallback = queries.default_branch(session, project_id=project_id)
    if run.base_commit:
        try:
            side = comparisons.resolve_side(
                session,
                project_id=project_id,
                ref=run.base_commit,
                fallback_branch=fallback,
                before=head.started_at,
            )
        except NotFoundError as exc:
            return None, str(exc)
        return side, None
    if not run.branch:
        return None, "this run names no branch and no base commit: nothing to compare it with"
    previous = queries.previous_commit(
        session,
        project_id=project_id,
        branch=run.branch,
        before=head.started_at,
        other_than=run.commit,
    )
    if previous is None:
        return None, f"no earlier commit on {run.branch} to compare this run with"
    side = comparisons.resolve_side(session, project_id=project_id, ref=previous)
    side.label = side.label or f"previous commit on {run.branch}"
    return side, None


def _compare(
    sessions: sessionmaker[Session], base: comparisons.Side, head: comparisons.Side
) -> Comparison:
    base = comparisons.require_documents(base, "base")
    head = comparisons.require_documents(head, "head")
    return comparisons.compare_sides(
        base,
        head,
        settings=CompareSettings(),
        history=comparisons.history_for(sessions, base=base),
        calibration=comparisons.calibration_for(sessions, base=base),
    )


def _comparison_context(
    request: Request, project: str, comparison: Comparison | None
) -> dict[str, Any]:
    root = root_path(request)
    context: dict[str, Any] = {
        "project": project,
        "project_url": views.project_path(root, project),
        "run_url": lambda run_id: views.run_path(root, project, run_id),
        "comparison": comparison,
    }
    if comparison is not None:
        branch = comparison.base.branch
        context |= {
            "comment_html": views.comparison_html(comparison),
            "base_runs": comparison.base.runs,
            "head_runs": comparison.head.runs,
            "trend_links": [
                {
                    "key": key,
                    "metric": metric,
                    "verdict": verdict,
                    "url": views.trend_path(root, project, key=key, metric=metric, branch=branch),
                }
                for key, metric, verdict in views.changed_keys(comparison)
            ],
        }
    return context


@router.get("/compare", name="dashboard_compare_link")
def compare_link(request: Request, project: str = "", base: str = "", head: str = "") -> Response:
    """The link the PR comment carries (`SERVER/compare?project=&base=&head=`)."""
    if not project:
        raise NotFoundError("compare in which project? the link needs ?project=")
    target = views.compare_path(root_path(request), project, base=base, head=head)
    return RedirectResponse(target, status_code=303)


@router.get("/p/{project:path}/compare", name="dashboard_compare")
def compare_page(
    request: Request,
    *,
    project: str,
    session: SessionDep,
    sessions: SessionsDep,
    base: str = "",
    head: str = "",
) -> Response:
    summary = _project(request, session, project)
    if not base or not head:
        raise NotFoundError("compare what? the comparison page needs ?base= and ?head=")
    head_side = comparisons.resolve_side(session, project_id=summary.id, ref=head)
    base_side = comparisons.resolve_side(
        session,
        project_id=summary.id,
        ref=base,
        fallback_branch=queries.default_branch(session, project_id=summary.id),
        before=head_side.started_at,
    )
    comparison = _compare(sessions, base_side, head_side)
    return render(
        request,
        "compare.html",
        _comparison_context(request, project, comparison) | {"base": base, "head": head},
    )


@router.get("/p/{project:path}", name="dashboard_project")
def project_page(
    request: Request,
    *,
    project: str,
    session: SessionDep,
    branch: str = "",
    metric: str = "time",
) -> Response:
    summary = _project(request, session, project)
    branches = reads.list_branches(session, project_id=summary.id)
    if not branch:
        branch = queries.default_branch(session, project_id=summary.id) or ""
    rows: list[queries.BenchmarkRow] = []
    if branch:
        rows = queries.benchmark_rows(session, project_id=summary.id, branch=branch, metric=metric)
    root = root_path(request)
    runs = reads.list_runs(session, project_id=summary.id, branch=branch or None, limit=RECENT_RUNS)
    return render(
        request,
        "project.html",
        {
            "project": project,
            "summary": summary,
            "branch": branch,
            "branches": branches if branch in branches or not branch else [*branches, branch],
            "metric": metric,
            "metrics": queries.branch_metrics(session, project_id=summary.id, branch=branch)
            or [metric],
            "rows": [
                {
                    "row": row,
                    "url": views.trend_path(
                        root, project, key=row.key, metric=metric, branch=branch
                    ),
                    "latest": format_value(row.latest, row.unit or ""),
                    "sparkline": views.sparkline_svg(row.sparkline, row.sparkline_changes),
                    "change": (format_change(row.change.ratio) if row.change is not None else None),
                    "change_url": (
                        views.run_path(root, project, row.change.run) if row.change else None
                    ),
                }
                for row in rows
            ],
            "runs": [{"run": r, "url": views.run_path(root, project, r.id)} for r in runs],
        },
    )
