"""One JSON error shape for every answer that is not a success: `{"error": {"code", "message"}}`.

The app's exception handlers map the error tree of `perfgate.errors`, FastAPI's own 404/405/422
and anything unexpected (500, details logged, never sent) onto it.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from perfgate.errors import (
    AuthenticationError,
    ConflictError,
    DocumentError,
    DocumentTooLargeError,
    ExternalError,
    InputError,
    NotFoundError,
    PerfgateError,
    PermissionDeniedError,
    UsageError,
)
from perfgate.store.engine import describe_db_error

log = logging.getLogger("perfgate.api")

# Most specific first: the first class an error is an instance of gives its status.
_STATUS: list[tuple[type[PerfgateError], int]] = [
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (ConflictError, 409),
    (DocumentTooLargeError, 413),
    (DocumentError, 422),
    (UsageError, 400),
    (InputError, 400),
    (ExternalError, 503),
]

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    500: "internal_error",
    503: "unavailable",
}


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def status_of(exc: PerfgateError) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 400


async def _perfgate_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PerfgateError)
    status = status_of(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return error_response(status, exc.code, str(exc), headers)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "error")
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 400 and exc.__cause__ is not None:
        # FastAPI's answer to a body it cannot decode; an undecodable upload is 422 too.
        return error_response(422, "invalid_request", "the body is not valid UTF-8 JSON")
    if exc.status_code == 404 and detail == "Not Found":
        detail = "no such route (the API lives under /api/v1; see /openapi.json)"
    return error_response(exc.status_code, code, detail, dict(exc.headers or {}))


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return error_response(422, "invalid_request", "; ".join(problems) or "invalid request")


async def _database_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DBAPIError)
    log.warning("database error: %s", describe_db_error(exc))
    return error_response(
        503, "database_unavailable", f"the database failed: {describe_db_error(exc)}"
    )


async def _data_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DataError)
    return error_response(
        422, "bad_input", f"the database refused a value: {describe_db_error(exc)}"
    )


async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    return error_response(500, "internal_error", "internal server error (details in the log)")


class CatchAllMiddleware:
    """Answers an unexpected exception with the 500 shape and keeps the connection usable.

    Starlette's outermost error middleware would send the same answer but re-raise, and the
    server then drops the client's keep-alive connection.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            if started:
                raise
            log.exception("unexpected error", exc_info=exc)
            response = error_response(
                500, "internal_error", "internal server error (details in the log)"
            )
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PerfgateError, _perfgate_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(DBAPIError, _database_error)
    # A value the database cannot hold is the caller's input, not an outage.
    app.add_exception_handler(DataError, _data_error)
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(CatchAllMiddleware)
