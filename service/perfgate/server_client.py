"""Client for a perfgate server's upload route (`upload --server`, `run --server`), stdlib only.

Connection failures, timeouts and 5xx answers are retried with backoff, then reported as
ServerUnavailableError (exit 3); a 4xx answer is a ServerRefusedError (exit 2) carrying the
server's own error code and message.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from perfgate import __version__
from perfgate.errors import ServerRefusedError, ServerUnavailableError, UsageError
from perfgate.results import ResultsDocument


@dataclass(frozen=True)
class ServerUpload:
    run_id: str
    # False when the server already had the same document (HTTP 200 rather than 201).
    created: bool
    server: str


def runs_url(server: str) -> str:
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--server: {server!r} is not an http(s) URL (e.g. http://perfgate:8000)")
    return server.rstrip("/") + "/api/v1/runs"


def upload_document(
    document: ResultsDocument,
    *,
    server: str,
    token: str | None,
    attempts: int = 4,
    backoff_s: float = 0.5,
    timeout_s: float = 120.0,
) -> ServerUpload:
    """POST the document to `server`; idempotent, so retrying after a lost answer is safe."""
    if not token:
        raise UsageError("--server needs --token (or PERFGATE_TOKEN): an upload-scoped token")
    url = runs_url(server)
    body = json.dumps(document.to_json_dict(), separators=(",", ":")).encode("utf-8")
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "User-Agent": f"perfgate/{__version__}",
    }
    problem = "no attempt made"
    for attempt in range(max(1, attempts)):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                answer = _json(response.read())
                run_id = answer.get("id") if isinstance(answer, dict) else None
                return ServerUpload(
                    run_id=str(run_id or document.run.id),
                    created=response.status == 201,
                    server=server,
                )
        except urllib.error.HTTPError as exc:
            code, message = _error_of(exc)
            if exc.code < 500:
                raise ServerRefusedError(
                    f"{server} refused the upload ({exc.code} {code}): {message}",
                    code=code,
                    status=exc.code,
                ) from None
            problem = f"{exc.code} {code}: {message}"
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            problem = str(reason) or type(reason).__name__
    raise ServerUnavailableError(
        f"cannot upload to {server} after {max(1, attempts)} attempts: {problem}"
    )


def _json(raw: bytes) -> object:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def _error_of(exc: urllib.error.HTTPError) -> tuple[str, str]:
    """The server's `{"error": {"code", "message"}}`, or what HTTP itself says."""
    try:
        data = _json(exc.read())
    except OSError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error = data["error"]
        return str(error.get("code", "error")), str(error.get("message", exc.reason))
    return "http_error", str(exc.reason)
