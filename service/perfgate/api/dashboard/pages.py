"""The dashboard's pages: projects, a project's benchmarks, a trend chart, run and comparison."""

from __future__ import annotations

import math
from functools import partial
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from perfgate.api.auth import TOKEN_COOKIE, authorize, identify, visible_projects
from perfgate.api.dashboard import login, page_data, runcompare, views
from perfgate.api.dashboard.headlines import Headline
from perfgate.api.dashboard.render import (
    PageRoute,
    dashboard_state,
    error_page,
    render,
    root_path,
)
from perfgate.api.dashboard.ticks import axis_ticks
from perfgate.api.deps import SessionDep, SessionsDep
from perfgate.errors import AuthenticationError, NotFoundError, PerfgateError
from perfgate.report.units import format_change, format_value
from perfgate.stats.model import Comparison
from perfgate.stats.two_sample import CompareSettings
from perfgate.store import catalog, compare_in_store
from perfgate.store.run_lookup import default_branch
from perfgate.store.trends import Series, load_series, set_change_status

router = APIRouter(route_class=PageRoute, include_in_schema=False)

RECENT_RUNS = 10
# The project page looks this far back for pull requests' runs, and lists this many of them.
PR_SCAN = 100
PR_RUNS = 5


def _project(request: Request, session: Session, name: str) -> catalog.ProjectSummary:
    authorize(request, session, project=name, scope="read")
    found = catalog.list_projects(session, names=[name])
    if not found:
        raise NotFoundError(f"project {name!r} is not in the store")
    return found[0]


@router.get("/", name="dashboard_projects")
def projects_page(request: Request, session: SessionDep) -> Response:
    names = visible_projects(request, session)
    projects = catalog.list_projects(session, names=names)
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
    key: str = "",
    metric: str = "time",
    branch: str = "",
    head: str = "",
) -> Response:
    summary = _project(request, session, project)
    if not key:
        raise NotFoundError("which benchmark? the trend page needs ?key=")
    bench = catalog.get_benchmark(session, project_id=summary.id, key=key)
    metrics = page_data.benchmark_metrics(session, benchmark_id=bench.id)
    branches = page_data.series_branches(session, benchmark_id=bench.id, metric=metric)
    if not branch:
        preferred = default_branch(session, project_id=summary.id)
        branch = preferred if preferred in branches else (branches[0] if branches else "main")
    root = root_path(request)
    pr_runs = _latest_per_pr(catalog.list_runs(session, project_id=summary.id, limit=PR_SCAN))
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    context: dict[str, Any] = {
        "project": project,
        "project_url": views.project_path(root, project),
        "key": key,
        "metric": metric,
        "metrics": metrics if metric in metrics else [metric, *metrics],
        "branch": branch,
        "branches": branches if branch in branches else [*branches, branch],
        "head": head,
        "pr_runs": pr_runs,
        "series": None,
        "chart": None,
        "message": None,
        "has_ci": False,
        "overlay": None,
        "can_triage": _may_triage(request, session, project),
        "triage_url": lambda change_id: f"{views.project_path(root, project)}/changes/{change_id}",
        "run_url": lambda run_id: views.run_path(root, project, run_id),
        "here": here,
        "statuses": TRIAGE_ACTIONS,
    }
    overlay = _overlay(session, project, key=key, metric=metric, head=head)
    try:
        series = load_series(session, project=project, key=key, metric=metric, branch=branch)
    except NotFoundError as exc:
        context["message"] = str(exc)
        return render(request, "trend.html", context, status_code=404)
    context["series"] = series
    context["has_ci"] = any(p.ci for p in series.points)
    context["overlay"] = overlay
    context["chart"] = _chart_data(root, project, series, overlay)
    return render(request, "trend.html", context)


# What a person may do with a change point in each status: (new status, button label).
TRIAGE_ACTIONS: dict[str, list[tuple[str, str]]] = {
    "open": [("acknowledged", "Acknowledge"), ("dismissed", "Dismiss")],
    "acknowledged": [("dismissed", "Dismiss"), ("open", "Reopen")],
    "dismissed": [("open", "Reopen")],
}


def _may_triage(request: Request, session: Session, project: str) -> bool:
    """Whether the caller's token may set change-point statuses here (an upload token of it)."""
    try:
        grant = identify(request, session)
    except PerfgateError:
        return False
    return grant is not None and grant.allows("upload") and grant.project == project


def _overlay(
    session: Session,
    project: str,
    *,
    key: str,
    metric: str,
    head: str,
) -> dict[str, Any] | None:
    """A pull request's head run (`head`: its run id) to draw over the branch's trend."""
    if not head:
        return None
    run = catalog.get_run(session, run_id=head)
    if run.project != project or not run.branch:
        raise NotFoundError(f"run {head!r} is not a run of {project!r} on a branch")
    try:
        pr_series = load_series(session, project=project, key=key, metric=metric, branch=run.branch)
    except NotFoundError:
        return None
    point = next((p for p in pr_series.points if p.run == run.id), None)
    if point is None:
        return None
    label = f"PR #{run.pr} head" if run.pr else f"{run.branch} head"
    return {
        "run": run.id,
        "label": label,
        "commit": run.commit,
        "median": point.median,
        "ci": list(point.ci) if point.ci else None,
        "median_text": format_value(point.median, pr_series.unit),
    }


def _chart_data(
    root: str, project: str, series: Series, overlay: dict[str, Any] | None = None
) -> dict[str, Any]:
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
    values = [v for p in series.points for v in (p.median, *(p.ci or ()))]
    if overlay is not None:
        values.append(overlay["median"])
    axis = axis_ticks(min(values), max(values), series.unit)
    return {
        "key": series.key,
        "metric": series.metric,
        "unit": series.unit,
        "direction": series.direction,
        "branch": series.branch,
        "points": points,
        "change_points": [i for i, p in enumerate(series.points) if p.run in changes],
        "y_axis": {
            "min": axis.low,
            "max": axis.high,
            "ticks": axis.ticks,
            "labels": axis.labels,
        },
        "overlay": (
            overlay | {"url": views.run_path(root, project, overlay["run"])} if overlay else None
        ),
    }


@router.post("/p/{project:path}/changes/{change_id}", name="dashboard_change_status")
async def change_status_form(
    request: Request,
    project: str,
    change_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    session: SessionDep,
    sessions: SessionsDep,
) -> Response:
    """The trend page's triage buttons: the same store call as `PATCH /api/v1/changes/{id}`,
    for an upload token of the project (the login cookie's, refused from another origin)."""
    if login.cross_site(request):
        return error_page(request, 403, "Not allowed", "a triage form must be sent from this site")
    form = await login.small_form(request)
    if form is None:
        return error_page(request, 413, "Too large", "the triage form is too large")
    target = login.safe_next(root_path(request), (form.get("next") or [""])[0])
    try:
        authorize(request, session, project=project, scope="upload")
    except AuthenticationError:
        # Back to the page the form was on after logging in, not to this form's address.
        response = RedirectResponse(
            f"{root_path(request)}/login?next={quote(target, safe='')}", status_code=303
        )
        if request.cookies.get(TOKEN_COOKIE):
            response.delete_cookie(TOKEN_COOKIE, path="/")
        return response
    session.close()
    # Another project's change point is answered as a missing one (ids reveal no project).
    set_change_status(
        sessions,
        change_id=change_id,
        status=(form.get("status") or [""])[0],
        project=project,
    )
    return RedirectResponse(target, status_code=303)


@router.get("/p/{project:path}/runs/{run_id}", name="dashboard_run")
def run_page(request: Request, project: str, run_id: str, session: SessionDep) -> Response:
    summary = _project(request, session, project)
    run = catalog.get_run(session, run_id=run_id)
    if run.project != project:
        raise NotFoundError(f"run {run_id!r} is not a run of {project!r}")
    head = compare_in_store.resolve_side(session, project_id=summary.id, ref=run.commit)
    base, note = runcompare.base_side(session, project_id=summary.id, run=run, head=head)
    comparison = runcompare.compare(session, base, head) if base is not None else None
    return render(
        request,
        "run.html",
        _comparison_context(request, project, comparison, overlay=run.id if run.pr else None)
        | {"run": run, "note": note},
    )


def _comparison_context(
    request: Request, project: str, comparison: Comparison | None, *, overlay: str | None = None
) -> dict[str, Any]:
    """What a comparison page shows; `overlay`: a pull request's run whose head the trend
    links draw over the base branch's trend."""
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
                    "url": views.trend_path(
                        root, project, key=key, metric=metric, branch=branch, head=overlay
                    ),
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
    base: str = "",
    head: str = "",
) -> Response:
    _project(request, session, project)  # 404 for an unknown project, 401 without access
    if not base or not head:
        raise NotFoundError("compare what? the comparison page needs ?base= and ?head=")
    comparison = compare_in_store.compare_in_store(
        session, base=base, head=head, project=project, settings=CompareSettings()
    )
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
    branches = catalog.list_branches(session, project_id=summary.id)
    if not branch:
        branch = default_branch(session, project_id=summary.id) or ""
    rows: list[page_data.BenchmarkRow] = []
    if branch:
        rows = page_data.benchmark_rows(
            session, project_id=summary.id, branch=branch, metric=metric
        )
    root = root_path(request)
    # Runs of every branch: a pull request's run is news whichever branch the page shows.
    scanned = catalog.list_runs(session, project_id=summary.id, limit=PR_SCAN)
    recent = scanned[:RECENT_RUNS]
    pr_runs = _latest_per_pr(scanned)[:PR_RUNS]
    headlines = _headlines(request, session, summary, [*pr_runs, *recent])
    shown = [_benchmark_row(root, project, branch, metric, row) for row in _triage_order(rows)]

    def run_row(run: catalog.RunSummary) -> dict[str, Any]:
        return {
            "run": run,
            "url": views.run_path(root, project, run.id),
            "headline": headlines[run.id],
        }

    return render(
        request,
        "project.html",
        {
            "project": project,
            "summary": summary,
            "branch": branch,
            "branches": branches if branch in branches or not branch else [*branches, branch],
            "metric": metric,
            "metrics": page_data.branch_metrics(session, project_id=summary.id, branch=branch)
            or [metric],
            "rows": shown,
            "open_rows": [r for r in shown if r["open"]],
            "pr_runs": [run_row(r) for r in pr_runs],
            "runs": [run_row(r) for r in recent],
        },
    )


def _triage_order(rows: list[page_data.BenchmarkRow]) -> list[page_data.BenchmarkRow]:
    """Benchmarks with an open change point first, largest move first; then the rest by key."""

    def key(row: page_data.BenchmarkRow) -> tuple[int, float, str]:
        change = row.change
        if change is not None and change.status == "open":
            return (0, -abs(math.log(change.ratio)) if change.ratio > 0 else 0.0, row.key)
        return (1, 0.0, row.key)

    return sorted(rows, key=key)


def _benchmark_row(
    root: str, project: str, branch: str, metric: str, row: page_data.BenchmarkRow
) -> dict[str, Any]:
    change = row.change
    return {
        "row": row,
        "url": views.trend_path(root, project, key=row.key, metric=metric, branch=branch),
        "latest": format_value(row.latest, row.unit or ""),
        "sparkline": views.sparkline_svg(row.sparkline, row.sparkline_changes),
        "change": format_change(change.ratio) if change is not None else None,
        "change_url": views.run_path(root, project, change.run) if change else None,
        "open": change is not None and change.status == "open",
        "worse": change is not None and (change.ratio > 1) == (row.direction != "higher"),
    }


def _latest_per_pr(runs: list[catalog.RunSummary]) -> list[catalog.RunSummary]:
    """The newest run of each pull request, newest first (`runs` is newest first)."""
    seen: set[int] = set()
    latest = []
    for run in runs:
        if run.pr is not None and run.pr not in seen:
            seen.add(run.pr)
            latest.append(run)
    return latest


def _headlines(
    request: Request,
    session: Session,
    summary: catalog.ProjectSummary,
    runs: list[catalog.RunSummary],
) -> dict[str, Headline]:
    """Each run's verdict counts against its base, as its run page compares it (remembered,
    see headlines.py)."""
    cache = dashboard_state(request).headlines
    state = (summary.id, summary.runs, summary.latest_run_at)
    return {
        run.id: cache.get(run.id, state, partial(runcompare.prepare, session, summary.id, run))
        for run in runs
    }
