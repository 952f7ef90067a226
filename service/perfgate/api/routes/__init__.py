"""The `/api/v1` routers and the probes; `errors(...)` documents each route's error answers."""

from __future__ import annotations

from typing import Any

from perfgate.api.schemas import ErrorResponse

_DESCRIPTIONS = {
    400: "Bad request (e.g. an ambiguous commit prefix)",
    401: "No API token, or an unknown or revoked one",
    403: "The token lacks the scope, or is for another project",
    404: "Not found",
    409: "The run id is stored with different content",
    413: "The body is over the size limit",
    422: "Invalid parameters or document (the message names the field)",
    503: "The database is unavailable",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the given error statuses, all in the one error shape."""
    return {
        status: {"model": ErrorResponse, "description": _DESCRIPTIONS[status]}
        for status in sorted({*statuses, 422, 503})
    }
