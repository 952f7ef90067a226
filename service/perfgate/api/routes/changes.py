"""Change points: list the stored ones (read only) and triage them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from perfgate.api.auth import authorize
from perfgate.api.deps import SessionDep, SessionsDep
from perfgate.api.routes import errors
from perfgate.api.routes.runs import ProjectQuery
from perfgate.api.schemas import ChangePointOut, ChangesOut, ChangeStatus, ChangeUpdate
from perfgate.store import catalog
from perfgate.store.trends import list_changes as stored_changes
from perfgate.store.trends import set_change_status

router = APIRouter(prefix="/api/v1", tags=["changes"])


@router.get("/changes", response_model=ChangesOut, responses=errors(401, 403, 404))
def list_changes(
    *,
    request: Request,
    session: SessionDep,
    project: ProjectQuery,
    branch: Annotated[str, Query(min_length=1, max_length=255)] = "main",
    status: Annotated[ChangeStatus | None, Query(description="Omit for every status.")] = None,
    metric: Annotated[str, Query(min_length=1, max_length=64)] = "time",
) -> ChangesOut:
    """Change points of one metric on a branch, oldest first. They are detected when runs are
    stored; this only reads them."""
    authorize(request, session, project=project, scope="read")
    catalog.get_project(session, name=project)
    changes = stored_changes(session, project=project, branch=branch, metric=metric, status=status)
    return ChangesOut(change_points=[ChangePointOut.of(c) for c in changes])


@router.patch(
    "/changes/{change_id}",
    response_model=ChangePointOut,
    responses=errors(401, 403, 404, 413),
)
def update_change(
    *,
    request: Request,
    session: SessionDep,
    sessions: SessionsDep,
    change_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    update: ChangeUpdate,
) -> ChangePointOut:
    """Acknowledge or dismiss a change point (or reopen it). Needs an upload-scoped token; a
    change point of another project is answered as a missing one (404)."""
    # The caller and the scope are checked before the id is looked at, and the id's project only
    # ever decides between found and not found: ids do not reveal which projects exist.
    grant = authorize(request, session, project=None, scope="upload")
    assert grant is not None  # upload scope is never anonymous
    session.close()
    return ChangePointOut.of(
        set_change_status(
            sessions, change_id=change_id, status=update.status, project=grant.project
        )
    )
