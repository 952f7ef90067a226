"""github3.py behind a small interface: any API root; read PRs; write comments, statuses, checks.

Tokens: Actions' GITHUB_TOKEN and GitHub App tokens are installation tokens (`ghs_...`); github3.py
only lets installation-token sessions create check runs, so such tokens get that auth. Personal
and OAuth tokens (`ghp_`, `github_pat_`, `gho_`, `ghu_`) cannot create check runs on GitHub
either: github3.py refuses locally and the caller falls back to status + comment.

The sticky comment is only ever one the token's own identity wrote: anyone can post a comment
that starts with perfgate's marker, and adopting it would let them choose where the verdict goes
(and have perfgate overwrite their text). A person's token is who `GET /user` says; an
installation token is its app's bot user (`github-actions[bot]`, `<app-slug>[bot]`), which only
GraphQL's `viewer` tells such a token (`GET /user` and `GET /app` refuse it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

import github3  # type: ignore[import-untyped]
import requests
from github3 import exceptions as gh_exc
from github3.session import GitHubSession  # type: ignore[import-untyped]

from perfgate.errors import GitHubError
from perfgate.github.retry import Backoff, RetryingAdapter, describe_rate_limit

CHECK_NAME = "perfgate"
STATUS_CONTEXT = "perfgate"
PLAIN_TOKEN_PREFIXES = ("ghp_", "github_pat_", "gho_", "ghu_")
# Where each write needs its permission granted, for the one-line error a person acts on.
PERMISSIONS = {
    "comment": "pull-requests: write",
    "status": "statuses: write",
    "check run": "checks: write",
    "pull request": "pull-requests: read",
    "repository": "contents: read",
    "issue": "issues: write",
}


class ChecksUnavailable(Exception):  # noqa: N818 - a condition, not a failure to report
    """This token cannot create check runs (github3 refused it, or GitHub answered 403)."""


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_sha: str
    base_repo: str
    html_url: str


@dataclass
class CommentInfo:
    id: int
    body: str
    html_url: str
    handle: Any = None  # the github3 object, for editing


class GitHubAPI(Protocol):
    """What perfgate asks of GitHub; `GitHub3API` is the real thing."""

    def pull(self, number: int) -> PullInfo: ...

    def pulls_with_head(self, head: str) -> list[PullInfo]: ...

    def find_comment(self, number: int, marker: str) -> CommentInfo | None: ...

    def create_comment(self, number: int, body: str) -> CommentInfo: ...

    def edit_comment(self, comment: CommentInfo, body: str) -> CommentInfo: ...

    def create_status(
        self, sha: str, *, state: str, description: str, target_url: str | None
    ) -> None: ...

    def create_check_run(
        self, sha: str, *, conclusion: str, title: str, summary: str, details_url: str | None
    ) -> str: ...

    def single_attempt(self) -> contextlib.AbstractContextManager[None]: ...


def is_installation_token(token: str) -> bool:
    return not token.startswith(PLAIN_TOKEN_PREFIXES)


def graphql_url(api_url: str) -> str:
    """GitHub's GraphQL endpoint for a REST root: `https://api.github.com/graphql`, and on
    GitHub Enterprise Server `https://HOST/api/graphql` beside `https://HOST/api/v3`."""
    root = api_url.rstrip("/")
    if root.endswith("/api/v3"):
        root = root[: -len("/v3")]
    return f"{root}/graphql"


def bot_login(login: str) -> str:
    """An app's bot user as comments name it (`name[bot]`); GitHub's logins cannot hold `[`, so
    no person can own that name."""
    return login if login.endswith("[bot]") else f"{login}[bot]"


def _json_or_none(response: requests.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def _field(data: object, *path: str) -> object:
    """`data[path[0]][path[1]]...`, or None where a step is missing or not an object."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def make_session(
    *, api_url: str, token: str, adapter: RetryingAdapter, timeout: float = 30.0
) -> Any:
    """A github3 session rooted at exactly `api_url` (github.com, GHES `/api/v3`, a test server)."""
    session = GitHubSession(default_connect_timeout=10, default_read_timeout=timeout)
    session.base_url = api_url.rstrip("/")
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    if is_installation_token(token):
        # Installation tokens live at most a day; github3 wants an expiry to check against.
        expires = datetime.now(timezone.utc) + timedelta(days=1)
        session.app_installation_token_auth(
            {"token": token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
        )
    else:
        session.token_auth(token)
    return session


def _translate(exc: Exception, *, what: str, api_url: str) -> GitHubError:
    """One line that says what failed and what to fix."""
    if isinstance(exc, gh_exc.AuthenticationFailed):
        return GitHubError(
            f"GitHub rejected the token ({exc.code} {exc.msg}) while reading/writing the {what}: "
            "pass a valid token with --token or GITHUB_TOKEN (in Actions: "
            "`GITHUB_TOKEN: ${{ github.token }}`)",
            status=exc.code,
        )
    if isinstance(exc, gh_exc.ForbiddenError):
        limited = describe_rate_limit(exc.response)
        if limited:
            return GitHubError(
                f"{limited} (while writing the {what}); try again later", status=403, transient=True
            )
        need = next((p for key, p in PERMISSIONS.items() if what.startswith(key)), "write access")
        return GitHubError(
            f"GitHub refused the {what} (403 {exc.msg}): give the token `{need}` in the "
            "workflow's `permissions:` (jobs for pull requests from forks never get write "
            "access: use the fork-safe workflow pair, see docs/github.md)",
            status=403,
        )
    if isinstance(exc, gh_exc.ResponseError) and exc.code == 429:
        limited = describe_rate_limit(exc.response) or "GitHub's rate limit"
        return GitHubError(f"{limited} (while writing the {what}); try again later", status=429)
    if isinstance(exc, gh_exc.ServerError):
        return GitHubError(
            f"GitHub kept failing ({exc.code} {exc.msg}) on the {what}, even after retries",
            status=exc.code,
            transient=True,
        )
    if isinstance(exc, gh_exc.TransportError):
        return GitHubError(
            f"cannot reach GitHub at {api_url} ({type(exc.exception).__name__}) for the {what}: "
            "check --api-url / GITHUB_API_URL and the network",
            transient=True,
        )
    if isinstance(exc, gh_exc.ResponseError):
        return GitHubError(f"GitHub refused the {what} ({exc.code} {exc.msg})", status=exc.code)
    return GitHubError(f"GitHub call for the {what} failed: {type(exc).__name__}: {exc}")


class GitHub3API:
    """The real GitHub, through github3.py, for one repository."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        repo: str,
        backoff: Backoff,
        notify: Callable[[str], None] = lambda _m: None,
    ) -> None:
        owner, _, name = repo.partition("/")
        self.owner, self.name, self.api_url = owner, name, api_url
        self.installation = is_installation_token(token)
        self.adapter = RetryingAdapter(backoff, notify=notify)
        self.gh = github3.GitHub(
            session=make_session(api_url=api_url, token=token, adapter=self.adapter)
        )
        self._repo: Any = None
        self._pulls: dict[int, Any] = {}
        self._login: str | None = None

    @contextlib.contextmanager
    def _calling(self, what: str, *, not_found: str | None = None) -> Iterator[None]:
        try:
            yield
        except gh_exc.NotFoundError as exc:
            raise GitHubError(
                not_found or f"GitHub has no {what} (404 {exc.msg})", status=404
            ) from None
        except gh_exc.GitHubException as exc:
            raise _translate(exc, what=what, api_url=self.api_url) from None

    def single_attempt(self) -> contextlib.AbstractContextManager[None]:
        return self.adapter.single_attempt()

    def _repository(self) -> Any:
        if self._repo is None:
            with self._calling(
                "repository",
                not_found=(
                    f"repository {self.owner}/{self.name} not found at {self.api_url} (or the "
                    "token cannot see it): check --repo / GITHUB_REPOSITORY and --api-url"
                ),
            ):
                self._repo = self.gh.repository(self.owner, self.name)
        return self._repo

    def _pull(self, number: int) -> Any:
        if number not in self._pulls:
            repo = self._repository()
            with self._calling(
                f"pull request #{number}",
                not_found=(
                    f"pull request #{number} not found in {self.owner}/{self.name}: check --pr "
                    "(or the event payload) and --repo"
                ),
            ):
                self._pulls[number] = repo.pull_request(number)
        return self._pulls[number]

    @staticmethod
    def _info(pull: Any) -> PullInfo:
        base_repo = pull.base.repository
        return PullInfo(
            number=int(pull.number),
            head_sha=str(pull.head.sha),
            base_repo=str(base_repo.full_name) if base_repo is not None else "",
            html_url=str(pull.html_url),
        )

    def pull(self, number: int) -> PullInfo:
        return self._info(self._pull(number))

    def pulls_with_head(self, head: str) -> list[PullInfo]:
        repo = self._repository()
        with self._calling("pull request search"):
            return [self._info(p) for p in repo.pull_requests(state="open", head=head)]

    def _viewer_login(self) -> str:
        """The login GraphQL's `viewer` names for this token (an installation token's bot)."""
        try:
            response = self.gh.session.post(
                graphql_url(self.api_url), json={"query": "query { viewer { login } }"}
            )
        except requests.RequestException as exc:
            raise gh_exc.TransportError(exc) from None
        if response.status_code >= 400:
            raise gh_exc.error_for(response)
        login = _field(_json_or_none(response), "data", "viewer", "login")
        if not isinstance(login, str) or not login:
            raise GitHubError(
                f"GitHub's GraphQL API at {graphql_url(self.api_url)} did not say which user the "
                "token is, so perfgate cannot tell its own comment from someone else's"
            )
        return bot_login(login)

    def own_login(self) -> str:
        """Who this token writes comments as, asked once (see the module docstring)."""
        if self._login is None:
            with self._calling("token's own user"):
                login = self._viewer_login() if self.installation else str(self.gh.me().login)
            self._login = login
        return self._login

    def find_comment(self, number: int, marker: str) -> CommentInfo | None:
        """The PR's perfgate comment: the first, on any page, whose body starts with `marker`
        and that this token's own user wrote; a copy of the marker by anyone else is ignored."""
        pull = self._pull(number)
        me = self.own_login().lower()
        with self._calling(f"comment list of #{number}"):
            for comment in pull.issue_comments():
                author = comment.user.login if comment.user is not None else ""
                if str(author).lower() == me and (comment.body or "").startswith(marker):
                    return CommentInfo(
                        id=comment.id, body=comment.body, html_url=comment.html_url, handle=comment
                    )
        return None

    def create_comment(self, number: int, body: str) -> CommentInfo:
        pull = self._pull(number)
        with self._calling(f"comment on #{number}"):
            comment = pull.create_comment(body)
        return CommentInfo(id=comment.id, body=body, html_url=comment.html_url, handle=comment)

    def edit_comment(self, comment: CommentInfo, body: str) -> CommentInfo:
        with self._calling("comment"):
            comment.handle.edit(body)
        comment.body = body
        return comment

    def create_status(
        self, sha: str, *, state: str, description: str, target_url: str | None
    ) -> None:
        repo = self._repository()
        with self._calling("status"):
            repo.create_status(
                sha, state, target_url=target_url, description=description, context=STATUS_CONTEXT
            )

    def create_check_run(
        self, sha: str, *, conclusion: str, title: str, summary: str, details_url: str | None
    ) -> str:
        repo = self._repository()
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._calling("check run"):
            try:
                run = repo.create_check_run(
                    CHECK_NAME,
                    sha,
                    details_url=details_url,
                    status="completed",
                    conclusion=conclusion,
                    completed_at=now,
                    output={"title": title, "summary": summary},
                )
            except gh_exc.MissingAppInstallationAuthentication:
                raise ChecksUnavailable(
                    "github3.py refused: the token is not an installation token "
                    "(GITHUB_TOKEN or a GitHub App's)"
                ) from None
            except gh_exc.ForbiddenError as exc:
                if describe_rate_limit(exc.response) is None:
                    raise ChecksUnavailable(f"GitHub answered 403 {exc.msg}") from None
                raise
        return str(run.html_url)
