"""The one error tree: every failure perfgate reports to a person derives from PerfgateError.

    PerfgateError                 exit_code 2 unless a subclass says otherwise
    ├── UsageError                bad options or arguments                        (2)
    ├── InputError                bad input a user can fix                        (2)
    │   ├── DocumentError         a results document is invalid (names the field)
    │   ├── ConflictError         a run id already stored with different content
    │   ├── NotFoundError         a commit, branch, run or benchmark is not in the store
    │   │   └── NoBaselineError   the base side has no runs to stand in for it     (4)
    │   ├── DocumentTooLargeError a document is over the configured size limit
    │   ├── AuthenticationError   no API token, or an unknown or revoked one
    │   ├── PermissionDeniedError the token lacks the scope or is for another project
    │   └── ServerRefusedError    a perfgate server answered 4xx (carries its code)
    └── ExternalError             an external system failed after retries          (3)
        ├── DatabaseError         the database could not be reached or refused work
        ├── ServerUnavailableError a perfgate server could not be reached or failed (5xx)
        └── GitHubError           GitHub refused or failed

The CLI turns these into one line on stderr and the exit code; the API into one JSON error shape.
Exit 4 (no baseline) is its own code so that CI can tell "nothing to compare with yet" (a first
PR, an empty store) from bad input without reading the message (docs/architecture.md §7).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_EXTERNAL = 3
EXIT_NO_BASELINE = 4


class PerfgateError(Exception):
    """Base of every error perfgate reports; `str(error)` is the one line shown to the user."""

    exit_code: int = EXIT_USAGE
    code: str = "error"


class UsageError(PerfgateError):
    """The command line or a setting is wrong."""

    code = "bad_usage"


class InputError(PerfgateError):
    """Input a user can fix: a file, a document, a name that does not resolve."""

    code = "bad_input"


class DocumentError(InputError):
    """A results document is invalid; `path` names the field (e.g. `benchmarks[3].key`)."""

    code = "invalid_document"

    def __init__(self, message: str, *, path: str = "", source: str = "") -> None:
        self.path = path
        self.source = source
        self.detail = message
        where = ": ".join(part for part in (source, path) if part)
        super().__init__(f"{where}: {message}" if where else message)


class DocumentTooLargeError(InputError):
    """A document is bigger than the configured limit."""

    code = "too_large"


class ConflictError(InputError):
    """The same run id was stored before with different content."""

    code = "conflict"


class NotFoundError(InputError):
    """Something named by the user is not in the store."""

    code = "not_found"


class NoBaselineError(NotFoundError):
    """The base side of a comparison is not in the store and nothing stands in for it: no runs
    of the base commit and none of the base branch before the head (a first PR, an empty store).

    Still a NotFoundError (the API answers 404), with its own exit code and error code so that
    a caller can act on it without reading the message.
    """

    exit_code = EXIT_NO_BASELINE
    code = "no_baseline"


class AuthenticationError(InputError):
    """No API token was given, or it is unknown or revoked (HTTP 401)."""

    code = "unauthorized"


class PermissionDeniedError(InputError):
    """The token is valid but lacks the scope, or belongs to another project (HTTP 403)."""

    code = "forbidden"


class ServerRefusedError(InputError):
    """A perfgate server refused a request (4xx); `code` and the message are the server's."""

    def __init__(self, message: str, *, code: str = "bad_input", status: int = 400) -> None:
        self.code = code
        self.status = status
        super().__init__(message)


class ExternalError(PerfgateError):
    """An external system (database, server, GitHub) failed after retries."""

    exit_code = EXIT_EXTERNAL
    code = "external_failure"


class DatabaseError(ExternalError):
    """The database could not be reached, or failed while working."""

    code = "database_unavailable"


class ServerUnavailableError(ExternalError):
    """A perfgate server could not be reached, or kept failing (5xx), after retries."""

    code = "server_unavailable"


class GitHubError(ExternalError):
    """GitHub refused a request or kept failing.

    `status` is GitHub's HTTP status when it answered; `transient` marks failures that another
    attempt may cure (5xx, connection errors), which the GitHub boundary retries.
    """

    code = "github_failure"

    def __init__(self, message: str, *, status: int | None = None, transient: bool = False) -> None:
        self.status = status
        self.transient = transient
        super().__init__(message)
