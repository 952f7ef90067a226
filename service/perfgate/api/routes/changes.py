"""Change points: list them (detection refreshed first, as `perfgate changes` does) and triage."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from perfgate.api.auth import authorize
from perfgate.api.deps import SessionDep, SessionsDep
from perfgate.api.routes import errors
from perfgate.api.routes.runs import ProjectQuery
from perfgate.api.schemas import ChangePointOut, ChangesOut, ChangeStatus, ChangeUpdate
from perfgate.store import reads
from perfgate.store.trends import refresh_changes, set_change_status

router = APIRouter(prefix="/api/v1", tags=["changes"])


@router.get("/changes", response_model=ChangesOut, responses=errors(401, 403, 404))
def list_changes(
    *,
    request: Request,
    session: SessionDep,
    sessions: SessionsDep,
    project: ProjectQuery,
    branch: Annotated[str, Query(min_length=1, max_length=255)] = "main",
    status: Annotated[ChangeStatus | None, Query(description="Omit for every status.")] = None,
    metric: Annotated[str, Query(min_length=1, max_length=64)] = "time",
) -> ChangesOut:
    """Change points on a branch, oldest first. Every benchmark's history is scanned first and
    new change points are stored as open; statuses set by people are kept."""
    authorize(request, session, project=project, scope="read")
    reads.get_project(session, name=project)
    session.close()
    changes = refresh_changes(
        sessions, project=project, branch=branch, metric=metric, status=status
    )
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
    """Acknowledge or dismiss a change point (or reopen it). Needs an upload-scoped token of
    the change point's project."""
    # Identify the caller first, so an anonymous one learns nothing about which ids exist.
    authorize(request, session, project=None, scope="upload")
    ref = reads.get_change_ref(session, change_id=change_id)
    authorize(request, session, project=ref.project, scope="upload")
    session.close()
    return ChangePointOut.of(set_change_status(sessions, change_id=change_id, status=update.status))
