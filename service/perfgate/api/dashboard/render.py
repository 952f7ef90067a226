"""Page rendering: the Jinja environment, the context every page gets, security headers, errors.

Pages answer HTML, never the API's JSON error shape: a missing login becomes a redirect to the
login page, other errors a page with the same status code the API would use: 503 when the
database is down or fails, 500 for a bug (details in the server's log, never on the page).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from sqlalchemy.exc import DataError, DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.templating import Jinja2Templates

from perfgate import __version__
from perfgate.api.auth import TOKEN_COOKIE
from perfgate.api.dashboard.headlines import HeadlineCache
from perfgate.api.deps import get_state
from perfgate.errors import (
    AuthenticationError,
    ExternalError,
    NotFoundError,
    PerfgateError,
    PermissionDeniedError,
)
from perfgate.report.units import format_change, format_value
from perfgate.store.engine import describe_db_error

log = logging.getLogger("perfgate.api")

PACKAGE_DIR = Path(__file__).parent
TEMPLATES_DIR = PACKAGE_DIR / "templates"
STATIC_DIR = PACKAGE_DIR / "static"

# Everything a page loads comes from this server: no CDN, no inline script, no framing.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

# What a visitor reads when the database is down; the driver's message (host, port, user) goes to
# the server's log only, as the page may be public.
DATABASE_UNAVAILABLE = (
    "perfgate's database is unavailable, so this page cannot be shown right now. "
    "Try again in a minute; the server's log says what failed."
)
SERVER_ERROR = "Something went wrong on the server while making this page (details in its log)."


@dataclass
class DashboardState:
    templates: Jinja2Templates
    headlines: HeadlineCache = field(default_factory=HeadlineCache)


def make_state() -> DashboardState:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = format_value
    env.filters["change"] = format_change
    return DashboardState(templates=Jinja2Templates(env=env))


def dashboard_state(request: Request) -> DashboardState:
    state: DashboardState = request.app.state.perfgate_dashboard
    return state


def root_path(request: Request) -> str:
    """The path prefix the app is mounted under (behind a proxy), without a trailing slash."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def render(
    request: Request, template: str, context: dict[str, Any], *, status_code: int = 200
) -> Response:
    root = root_path(request)
    full = {
        "root": root,
        "static": lambda path: f"{root}/static/{path}?v={__version__}",
        "public_read": get_state(request).settings.public_read,
        "logged_in": bool(request.cookies.get(TOKEN_COOKIE)),
        **context,
    }
    return dashboard_state(request).templates.TemplateResponse(
        request, template, full, status_code=status_code, headers=SECURITY_HEADERS
    )


def error_page(request: Request, status_code: int, title: str, message: str) -> Response:
    return render(
        request, "error.html", {"title": title, "message": message}, status_code=status_code
    )


def login_redirect(request: Request, *, clear_cookie: bool) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    response = RedirectResponse(
        f"{root_path(request)}/login?next={quote(target, safe='')}", status_code=303
    )
    if clear_cookie:
        response.delete_cookie(TOKEN_COOKIE, path="/")
    return response


def page_for_error(request: Request, exc: PerfgateError) -> Response:
    if isinstance(exc, AuthenticationError):
        # A revoked or mistyped token in the cookie is dropped, so the login form shows again.
        return login_redirect(request, clear_cookie=bool(request.cookies.get(TOKEN_COOKIE)))
    if isinstance(exc, PermissionDeniedError):
        return error_page(request, 403, "Not allowed", str(exc))
    if isinstance(exc, NotFoundError):
        return error_page(request, 404, "Not found", str(exc))
    if isinstance(exc, ExternalError):
        return error_page(request, 503, "Service unavailable", str(exc))
    return error_page(request, 400, "Bad request", str(exc))


class PageRoute(APIRoute):
    """A route whose errors become HTML pages instead of the API's JSON errors.

    The pages' session comes from a dependency, which FastAPI solves inside the route handler:
    a database that refuses the connection raises here too, not only in the page's queries.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except PerfgateError as exc:
                return page_for_error(request, exc)
            except DataError as exc:
                # A value the database cannot hold came from the address: the visitor's input.
                message = f"the database refused a value: {describe_db_error(exc)}"
                return error_page(request, 400, "Bad request", message)
            except DBAPIError as exc:
                log.warning("database error on %s: %s", request.url.path, describe_db_error(exc))
                return error_page(request, 503, "Database unavailable", DATABASE_UNAVAILABLE)
            except (StarletteHTTPException, RequestValidationError):
                raise
            except Exception as exc:
                log.exception("unexpected error on %s", request.url.path, exc_info=exc)
                return error_page(request, 500, "Server error", SERVER_ERROR)

        return page_handler
