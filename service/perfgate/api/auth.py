"""Who is calling and what they may do: bearer tokens (API) or the dashboard's HttpOnly cookie.

A token belongs to one project and has one scope: `read`, or `upload` (which may also read).
Reads need a token unless the server runs with `--public-read`; uploads and change-point
status changes always need an upload token of the project they touch.

Use from any route (API or dashboard), after resolving which project the request is about:

    from perfgate.api.auth import authorize

    grant = authorize(request, session, project=name, scope="read")

It raises `AuthenticationError` (401: no token, unknown or revoked) or `PermissionDeniedError`
(403: wrong scope, or another project named in the request); the app turns both into the JSON
error shape, and a page may catch them to show its login form instead. It returns the token's
`Grant`, or None for an anonymous reader of a public-read server. `visible_projects` says which
projects a caller may list. A thing named by its id (a run, a change point) is looked up only after
`authorize(..., project=None, ...)`, and `require_owner` then answers one of a project the
caller may not see exactly as a missing one (404), so ids never reveal which projects exist.
The token is read from `Authorization: Bearer <token>`, else from the `perfgate_token`
cookie (`TOKEN_COOKIE`), which the dashboard's login form sets after checking the token with
`check_token`: set it HttpOnly and SameSite=Strict. A request authenticated by the cookie that
changes something must come from the same origin (its `Origin` header), so another site cannot
ride on a logged-in browser.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from fastapi import Request
from sqlalchemy.orm import Session

from perfgate.api.deps import get_state
from perfgate.errors import AuthenticationError, NotFoundError, PermissionDeniedError
from perfgate.store import tokens
from perfgate.store.tokens import Grant

TOKEN_COOKIE = "perfgate_token"
Scope = Literal["read", "upload"]
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def token_from_request(request: Request) -> tuple[str | None, bool]:
    """(token, came from the cookie); the Authorization header wins over the cookie."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
        return value.strip(), False
    cookie = request.cookies.get(TOKEN_COOKIE)
    if cookie:
        return cookie, True
    return None, False


def check_token(session: Session, token: str) -> Grant | None:
    """The grant of a token typed into the dashboard's login form, or None if it is not valid."""
    return tokens.authenticate(session, token=token.strip())


def identify(request: Request, session: Session) -> Grant | None:
    """The caller's grant; None when no token was sent; AuthenticationError for a bad one."""
    token, via_cookie = token_from_request(request)
    if token is None:
        return None
    grant = tokens.authenticate(session, token=token)
    if grant is None:
        raise AuthenticationError("the API token is unknown or revoked")
    if via_cookie and request.method not in _SAFE_METHODS and not _same_origin(request):
        raise PermissionDeniedError(
            "a cross-site request cannot use the dashboard's login; send the token as a header"
        )
    if grant.needs_touch:
        tokens.touch_token(session, token_id=grant.token_id)
    return grant


def authorize(
    request: Request, session: Session, *, project: str | None, scope: Scope
) -> Grant | None:
    """Check that the caller may `scope` on `project` (None: no project named yet).

    Call it first in a route: it may commit `session` (the token's last-use time).
    """
    public_read = get_state(request).settings.public_read
    grant = identify(request, session)
    if grant is None:
        if scope == "read" and public_read:
            return None
        raise AuthenticationError(
            f"{'reading' if scope == 'read' else 'uploading'} needs an API token: "
            "send 'Authorization: Bearer <token>' (see `perfgate token create`)"
        )
    if scope == "read" and public_read:
        return grant
    if not grant.allows(scope):
        raise PermissionDeniedError(f"this token has {grant.scope} scope; this needs {scope} scope")
    if project is not None and project != grant.project:
        raise PermissionDeniedError(f"this token is for project {grant.project!r}, not {project!r}")
    return grant


def require_owner(
    request: Request, grant: Grant | None, *, owner: str, scope: Scope, missing: NotFoundError
) -> None:
    """Raise `missing` (404) unless a caller that `authorize` let in may `scope` project `owner`.

    For things looked up by id: their project only decides between found and not found.
    """
    if scope == "read" and get_state(request).settings.public_read:
        return
    if grant is None or grant.project != owner:
        raise missing


def visible_projects(request: Request, session: Session) -> list[str] | None:
    """The projects the caller may read: None means all of them (a public-read server)."""
    grant = authorize(request, session, project=None, scope="read")
    if get_state(request).settings.public_read:
        return None
    assert grant is not None
    return [grant.project]


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        # Browsers send Origin on every cross-site fetch or form post; its absence means a
        # same-origin navigation or a non-browser client, neither of which is a forged request.
        return True
    host = request.headers.get("host", "")
    return urlsplit(origin).netloc == host
