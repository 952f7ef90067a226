"""`POST /api/v1/runs` (upload a results document) and the run reads."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from perfgate.api.auth import authorize, require_owner
from perfgate.api.deps import SessionDep, get_state
from perfgate.api.routes import errors
from perfgate.api.schemas import RunCreated, RunOut, RunsOut, UtcTime
from perfgate.errors import NotFoundError, PermissionDeniedError
from perfgate.results import ResultsDocument
from perfgate.store import catalog
from perfgate.store.documents import rebuild_document
from perfgate.store.tokens import Grant
from perfgate.store.uploads import store_document_bytes

router = APIRouter(prefix="/api/v1", tags=["runs"])

RESULTS_DOCUMENT_REF = {"$ref": "#/components/schemas/ResultsDocument"}

ProjectQuery = Annotated[
    str, Query(min_length=1, max_length=200, description="Project name (owner/name).")
]


def _authorize_upload(request: Request) -> Grant:
    with get_state(request).sessions() as session:
        grant = authorize(request, session, project=None, scope="upload")
    assert grant is not None  # uploads are never anonymous
    return grant


async def _read_body(request: Request) -> bytes:
    # The size limit is enforced by BodyLimitMiddleware as the chunks arrive.
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
    return bytes(body)


@router.post(
    "/runs",
    status_code=201,
    response_model=RunCreated,
    responses={
        200: {"model": RunCreated, "description": "The same document was already stored"},
        **errors(401, 403, 409, 413),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A perfgate/results@1 document.",
            "content": {"application/json": {"schema": RESULTS_DOCUMENT_REF}},
        }
    },
)
async def upload_run(request: Request, response: Response) -> RunCreated:
    """Store a results document: all of it or nothing, idempotently by run id.

    201 when stored, 200 when the same content was already stored, 409 when the run id is
    stored with different content, 422 naming the first invalid field, 413 when too large.
    Needs an upload-scoped token of the document's project.
    """
    # The token is checked before a byte of the body is read.
    grant = await run_in_threadpool(_authorize_upload, request)
    raw = await _read_body(request)

    def accept(document: ResultsDocument) -> None:
        if document.run.project != grant.project:
            raise PermissionDeniedError(
                f"this token is for project {grant.project!r}, "
                f"but run.project is {document.run.project!r}"
            )

    # Parsed and stored in one call: the document never outlives it (store_document_bytes).
    outcome = await run_in_threadpool(
        store_document_bytes, get_state(request).sessions, raw, accept=accept
    )
    if not outcome.created:
        response.status_code = 200
    return RunCreated(id=outcome.run_id)


@router.get("/runs", response_model=RunsOut, responses=errors(401, 403, 404))
def list_runs(
    *,
    request: Request,
    session: SessionDep,
    project: ProjectQuery,
    commit: Annotated[
        str | None, Query(max_length=64, description="Full commit id or a prefix.")
    ] = None,
    branch: Annotated[str | None, Query(max_length=255)] = None,
    before: Annotated[
        UtcTime, Query(description="Only runs started before this time (paging).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> RunsOut:
    """Runs of a project, newest first."""
    authorize(request, session, project=project, scope="read")
    project_row = catalog.get_project(session, name=project)
    runs = catalog.list_runs(
        session,
        project_id=project_row.id,
        commit=commit,
        branch=branch,
        before=before,
        limit=limit,
    )
    return RunsOut(runs=[RunOut.of(r) for r in runs])


RunIdPath = Annotated[str, Path(max_length=64, description="The run's id (a uuid).")]


@router.get("/runs/{run_id}", response_model=RunOut, responses=errors(401, 403, 404))
def get_run(*, request: Request, session: SessionDep, run_id: RunIdPath) -> RunOut:
    """One run's metadata."""
    run = _readable_run(request, session, run_id)
    return RunOut.of(run)


@router.get(
    "/runs/{run_id}/document",
    response_model=None,
    responses={
        200: {
            "description": "The results document, as uploaded (same content hash).",
            "content": {"application/json": {"schema": RESULTS_DOCUMENT_REF}},
        },
        **errors(401, 403, 404),
    },
)
def get_run_document(*, request: Request, session: SessionDep, run_id: RunIdPath) -> dict[str, Any]:
    """The run's results document, rebuilt from the store."""
    _readable_run(request, session, run_id)
    document = rebuild_document(session, run_id=run_id)
    if document is None:
        raise NotFoundError(f"run {run_id!r} is not in the store")
    return document.to_json_dict()


def _readable_run(request: Request, session: SessionDep, run_id: str) -> catalog.RunSummary:
    # Identify the caller before looking the run up, so an anonymous caller learns nothing; a
    # run of another project is answered as a missing one.
    grant = authorize(request, session, project=None, scope="read")
    run = catalog.get_run(session, run_id=run_id)
    require_owner(
        request,
        grant,
        owner=run.project,
        scope="read",
        missing=NotFoundError(f"run {run_id!r} is not in the store"),
    )
    return run
