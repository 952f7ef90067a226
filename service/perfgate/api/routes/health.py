"""Probes: `/healthz` (the process answers) and `/readyz` (database reachable, schema at head)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from perfgate.api.deps import StateDep
from perfgate.api.errors import error_response
from perfgate.api.routes import errors
from perfgate.api.schemas import Health, Ready
from perfgate.errors import PerfgateError
from perfgate.store.migrate import schema_problem, schema_state

router = APIRouter(tags=["probes"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """The process is up (says nothing about the database)."""
    return Health(status="ok")


@router.get("/readyz", response_model=Ready, responses=errors())
async def readyz(state: StateDep) -> Ready | JSONResponse:
    """The database answers and its schema is at the head revision this code needs; else 503
    `not_ready` saying what to upgrade: the database (`perfgate db upgrade`) when its schema is
    behind, perfgate when the schema is a newer perfgate's."""
    try:
        current = await run_in_threadpool(schema_state, state.engine)
    except PerfgateError as exc:
        return error_response(503, "not_ready", str(exc))
    if not current.at_head:
        # The CLI's wording: behind says `perfgate db upgrade`, a newer schema "upgrade perfgate".
        return error_response(503, "not_ready", schema_problem(current, where="the database"))
    return Ready(status="ok", revision=current.head)
