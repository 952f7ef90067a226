"""Client for a perfgate server's upload route (`upload --server`, `run --server`), stdlib only.

Connection failures, timeouts and 5xx answers are retried with backoff, then reported as
ServerUnavailableError (exit 3); a 4xx answer is a ServerRefusedError (exit 2) carrying the
server's own error code and message. One deadline bounds the whole upload, every attempt and
pause included: a server that accepts connections and never answers, or answers a byte at a
time, or a name that never resolves, costs `deadline_s` and no more.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from perfgate import __version__
from perfgate.config import DEFAULT_SERVER_TIMEOUT_S
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
    deadline_s: float = DEFAULT_SERVER_TIMEOUT_S,
    attempts: int = 4,
    backoff_s: float = 0.5,
) -> ServerUpload:
    """POST the document to `server`; idempotent, so retrying after a lost answer is safe.

    Up to `attempts` tries with exponential backoff, all of them within `deadline_s` seconds.
    """
    if not token:
        raise UsageError("--server needs --token (or PERFGATE_TOKEN): an upload-scoped token")
    url = runs_url(server)
    body = json.dumps(document.to_json_dict(), separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "User-Agent": f"perfgate/{__version__}",
    }
    deadline = time.monotonic() + deadline_s
    problem = "no attempt made"
    made = 0
    for attempt in range(max(1, attempts)):
        if attempt:
            pause = backoff_s * 2 ** (attempt - 1)
            if time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        made += 1
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            answer = _post(request, left)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            problem = str(reason) or type(reason).__name__
            continue
        if answer.status < 400:
            data = _json(answer.body)
            run_id = data.get("id") if isinstance(data, dict) else None
            return ServerUpload(
                run_id=str(run_id or document.run.id), created=answer.status == 201, server=server
            )
        code, message = _error_of(answer)
        if answer.status < 500:
            raise ServerRefusedError(
                f"{server} refused the upload ({answer.status} {code}): {message}",
                code=code,
                status=answer.status,
            )
        problem = f"{answer.status} {code}: {message}"
    tries = f"{made} attempt{'s' if made != 1 else ''}"
    if made < max(1, attempts):
        raise ServerUnavailableError(
            f"cannot upload to {server}: no answer within {deadline_s:g} s (--server-timeout) "
            f"after {tries}; last: {problem}"
        )
    raise ServerUnavailableError(f"cannot upload to {server} after {tries}: {problem}")


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str
    body: bytes


def _post(request: urllib.request.Request, left: float) -> _Answer:
    """One attempt, given up after `left` seconds whatever the server or the resolver does.

    A socket timeout bounds each wait for data, not the attempt: a server that sends a byte
    every few seconds restarts it forever, and a name lookup ignores it. So the attempt runs in
    a daemon thread and is abandoned at the deadline; its socket times out on its own later
    (or dies with the process, which is about to report the failure and exit).
    """
    outcome: list[_Answer | Exception] = []

    def attempt() -> None:
        try:
            outcome.append(_exchange(request, left))
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=attempt, name="perfgate-upload", daemon=True)
    worker.start()
    worker.join(left)
    if not outcome:
        raise TimeoutError("timed out")
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def _exchange(request: urllib.request.Request, timeout: float) -> _Answer:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return _Answer(response.status, str(response.reason), response.read())
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read()
        except OSError:
            body = b""
        return _Answer(exc.code, str(exc.reason), body)


def _json(raw: bytes) -> object:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def _error_of(answer: _Answer) -> tuple[str, str]:
    """The server's `{"error": {"code", "message"}}`, or what HTTP itself says."""
    data = _json(answer.body)
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error = data["error"]
        return str(error.get("code", "error")), str(error.get("message", answer.reason))
    return "http_error", answer.reason
