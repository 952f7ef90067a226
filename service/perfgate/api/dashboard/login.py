"""Login and logout for a private server: the token is asked once and kept in an HttpOnly cookie.

The cookie is HttpOnly (no script can read it), SameSite=Strict (no other site's page sends it)
and Secure when the page was served over https. The form posts are refused from another origin;
the trend page's triage form follows the same rule (`cross_site`, `small_form`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from perfgate.api.auth import TOKEN_COOKIE, check_token
from perfgate.api.dashboard.render import PageRoute, error_page, render, root_path
from perfgate.api.deps import SessionDep

router = APIRouter(route_class=PageRoute, include_in_schema=False)

COOKIE_MAX_AGE_S = 30 * 24 * 3600
# A login form holds one token and a path; anything bigger is not ours.
MAX_FORM_BYTES = 16 * 1024


def safe_next(root: str, target: str | None) -> str:
    """Where to go after logging in: a path on this server only, never another site."""
    if not target:
        return f"{root}/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return f"{root}/"
    if "\\" in target or any(ord(c) < 32 for c in target):
        return f"{root}/"
    return target


def cross_site(request: Request) -> bool:
    """True when a browser says the form came from another origin (or hides it: `null`)."""
    origin = request.headers.get("origin")
    if origin is None:
        # Browsers send Origin with every form post; without it this is not a browser's post.
        return False
    return urlsplit(origin).netloc != request.headers.get("host", "")


async def small_form(request: Request) -> dict[str, list[str]] | None:
    """A dashboard form's fields; None when the body is larger than a form of ours can be."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return None
    return parse_qs(body.decode("utf-8", errors="replace"), max_num_fields=10)


@router.get("/login", name="dashboard_login")
def login_form(request: Request, next: str = "") -> Response:
    return render(
        request,
        "login.html",
        {"next": safe_next(root_path(request), next), "error": None},
    )


@router.post("/login")
async def login(request: Request, session: SessionDep) -> Response:
    if cross_site(request):
        return error_page(request, 403, "Not allowed", "a login form must be sent from this site")
    form = await small_form(request)
    if form is None:
        return error_page(request, 413, "Too large", "the login form is too large")
    token = (form.get("token") or [""])[0].strip()
    target = safe_next(root_path(request), (form.get("next") or [""])[0])
    grant = check_token(session, token) if token else None
    if grant is None:
        return render(
            request,
            "login.html",
            {"next": target, "error": "That token is unknown or revoked."},
            status_code=401,
        )
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        TOKEN_COOKIE,
        token,
        max_age=COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout", name="dashboard_logout")
def logout(request: Request) -> Response:
    if cross_site(request):
        return error_page(request, 403, "Not allowed", "a logout must be sent from this site")
    response = RedirectResponse(f"{root_path(request)}/login", status_code=303)
    response.delete_cookie(
        TOKEN_COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response
