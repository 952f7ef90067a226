"""Read routes: projects, benchmarks, one benchmark's series, and comparisons."""

from __future__ import annotations

import functools
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter

from perfgate.api.auth import authorize, visible_projects
from perfgate.api.deps import SessionDep, get_state
from perfgate.api.routes import errors
from perfgate.api.routes.runs import ProjectQuery
from perfgate.api.schemas import (
    BenchmarkOut,
    BenchmarksOut,
    ComparisonOut,
    ProjectOut,
    ProjectsOut,
    SeriesOut,
    UtcTime,
)
from perfgate.json_text import finite
from perfgate.report.comparison_document import comparison_to_json
from perfgate.stats.two_sample import CompareSettings
from perfgate.store import catalog, compare_in_store
from perfgate.store.trends import Series, load_series, series_version

router = APIRouter(prefix="/api/v1", tags=["reads"])


@router.get("/projects", response_model=ProjectsOut, responses=errors(401))
def list_projects(*, request: Request, session: SessionDep) -> ProjectsOut:
    """The projects the caller may read (all of them on a public-read server), by name."""
    names = visible_projects(request, session)
    return ProjectsOut(
        projects=[ProjectOut.of(p) for p in catalog.list_projects(session, names=names)]
    )


@router.get("/benchmarks", response_model=BenchmarksOut, responses=errors(401, 403, 404))
def list_benchmarks(
    *, request: Request, session: SessionDep, project: ProjectQuery
) -> BenchmarksOut:
    """Every benchmark instance of a project, by key."""
    authorize(request, session, project=project, scope="read")
    project_row = catalog.get_project(session, name=project)
    return BenchmarksOut(
        project=project,
        benchmarks=[
            BenchmarkOut.of(b) for b in catalog.list_benchmarks(session, project_id=project_row.id)
        ],
    )


@router.get("/series", response_model=SeriesOut, responses=errors(401, 403, 404))
def get_series(
    *,
    request: Request,
    session: SessionDep,
    project: ProjectQuery,
    key: Annotated[str, Query(min_length=1, max_length=1000, description="Benchmark key.")],
    metric: Annotated[str, Query(min_length=1, max_length=64)] = "time",
    branch: Annotated[str, Query(min_length=1, max_length=255)] = "main",
    since: Annotated[UtcTime, Query(description="Only runs started at or after.")] = None,
    until: Annotated[UtcTime, Query(description="Only runs started before.")] = None,
) -> Response:
    """One benchmark's history on a branch, oldest first, with its stored change points.

    Served from the trend index (benchmark, metric, branch, started_at): one range scan of
    summary columns. Read only.
    """
    authorize(request, session, project=project, scope="read")
    # The answer sent last time, if the series has not changed since (api/series_cache.py).
    cache = get_state(request).series_cache
    asked = (project, key, metric, branch, since, until)
    version = series_version(session, project=project, key=key, metric=metric, branch=branch)
    body = cache.get(asked, version)
    if body is None:
        series = load_series(
            session,
            project=project,
            key=key,
            metric=metric,
            branch=branch,
            since=since,
            until=until,
        )
        # A whole history is thousands of points: the store's dataclasses, which have exactly
        # SeriesOut's fields, are serialised by pydantic-core in one pass, with no models.
        body = _series_json().dump_json(series)
        cache.put(asked, version, body)
    return Response(body, media_type="application/json")


@router.get("/compare", response_model=ComparisonOut, responses=errors(400, 401, 403, 404))
def compare(
    *,
    request: Request,
    session: SessionDep,
    project: ProjectQuery,
    base: Annotated[
        str, Query(min_length=1, max_length=255, description="Commit, prefix or branch.")
    ],
    head: Annotated[
        str, Query(min_length=1, max_length=255, description="Commit, prefix or branch.")
    ],
    threshold: Annotated[float, Query(ge=0, le=100)] = 0.03,
    alpha: Annotated[float, Query(gt=0, lt=1)] = 0.05,
    base_branch: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=255,
            description="Branch whose nearest earlier run stands in for a base without data "
            "(default: main, else master, else the project's branch with the most runs).",
        ),
    ] = None,
) -> JSONResponse:
    """The comparison document of `perfgate compare BASE HEAD --format json` (same JSON).

    Runs of one commit are pooled; earlier runs of the base branch give the history noise model.
    """
    authorize(request, session, project=project, scope="read")
    catalog.get_project(session, name=project)  # 404 for a project the store does not have
    comparison = compare_in_store.compare_in_store(
        session,
        base=base,
        head=head,
        project=project,
        base_branch=base_branch,
        settings=CompareSettings(alpha=alpha, threshold=threshold),
    )
    return JSONResponse(finite(comparison_to_json(comparison)))


@functools.cache
def _series_json() -> TypeAdapter[Series]:
    return TypeAdapter(Series)
