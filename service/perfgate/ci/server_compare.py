"""The comparison through a perfgate server's GET /api/v1/compare (stdlib HTTP).

The token travels in a request header, never on a command line (argv is visible to every process
on the runner). A 404 whose error code says the server has nothing for the base side
(`no_baseline`, or `not_found` for a project it has never seen) is "no baseline": decided by the
status and the code, never by the message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlencode

from perfgate import __version__
from perfgate.config import DEFAULT_SERVER_TIMEOUT_S
from perfgate.errors import DocumentError, NoBaselineError, ServerUnavailableError, UsageError
from perfgate.server_client import runs_url
from perfgate.stats.model import Comparison

NO_BASELINE_CODES = ("no_baseline", "not_found")
SHOWN_BYTES = 300


@dataclass(frozen=True)
class ServerComparison:
    comparison: Comparison
    # The server's answer as it came: what the comparison output file holds.
    raw: bytes


def _error_code(body: bytes) -> str | None:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _one_line(body: bytes) -> str:
    return " ".join(body[:SHOWN_BYTES].decode("utf-8", "replace").split())


def compare_on_server(
    server: str,
    *,
    token: str,
    project: str,
    base: str,
    head: str,
    settings: dict[str, float],
    timeout_s: float = DEFAULT_SERVER_TIMEOUT_S,
) -> ServerComparison:
    """The server's comparison of `base` with `head` in `project`, with the threshold and alpha
    in `settings` (those a flag, variable or policy set; the server's defaults are perfgate's)."""
    from perfgate.report.comparison_document import comparison_from_json

    if any(ord(c) < 32 or ord(c) == 127 for c in token):
        raise UsageError("server-token: holds a line break or control character (check the secret)")
    runs_url(server)  # refuses anything but an http(s) URL
    query = urlencode({"project": project, "base": base, "head": head, **settings})
    request = urllib.request.Request(
        f"{server.rstrip('/')}/api/v1/compare?{query}",
        headers={"Authorization": f"Bearer {token}", "User-Agent": f"perfgate/{__version__}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, body = int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ServerUnavailableError(
            f"perfgate server {server} could not be reached for the comparison: {reason}"
        ) from None
    if status == 404 and _error_code(body) in NO_BASELINE_CODES:
        raise NoBaselineError(f"no baseline: {server} has nothing to compare {head[:12]} with")
    if status != 200:
        raise ServerUnavailableError(
            f"perfgate server answered {status} for the comparison: {_one_line(body)}"
        )
    try:
        comparison = comparison_from_json(json.loads(body.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, DocumentError) as exc:
        # A server that answers 200 with something else is failing, not the user's input.
        raise ServerUnavailableError(
            f"perfgate server answered the comparison with no comparison document ({exc})"
        ) from None
    return ServerComparison(comparison=comparison, raw=body)
