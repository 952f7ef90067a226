"""Request limits: body size, enforced while the body streams in (never after buffering it),
and no NUL bytes in the URL (PostgreSQL text cannot hold them)."""

from __future__ import annotations

import asyncio
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from perfgate import json_text
from perfgate.api.errors import error_body


def _human(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size //= 1024
    return f"{size} B"  # pragma: no cover


# A client that is still sending when the answer comes cannot read it if the server closes the
# socket on unread data (the kernel resets the connection). Like nginx's lingering close, up to
# this much more of the body is read and thrown away first, so the 413 arrives.
_DRAIN_BYTES = 32 * 1024 * 1024
_DRAIN_SECONDS = 10.0


class BodyLimitMiddleware:
    """413 for a body over `max_bytes`: at once when Content-Length says so, else on the chunk
    that crosses the limit (chunked uploads), so a huge body is never held in memory."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return (
            f"the request body is over the size limit of {_human(self.max_bytes)} "
            "(the server's PERFGATE_MAX_DOCUMENT_BYTES)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if "\x00" in scope.get("path", "") or b"%00" in scope.get("query_string", b""):
            await _send_json(
                send, 422, error_body("invalid_request", "NUL bytes are not allowed in the URL")
            )
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            # A client waiting for "100 Continue" has sent nothing yet, and never will now.
            if not _expects_continue(scope) and declared <= self.max_bytes + _DRAIN_BYTES:
                await _drain(receive)
            await _send_json(send, 413, error_body("too_large", self._message()))
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    if message.get("more_body", False):
                        await _drain(receive)
                    # An HTTPException passes through FastAPI's body parsing unchanged and
                    # becomes the JSON error shape in the app's handler.
                    raise HTTPException(413, self._message())
            return message

        await self.app(scope, limited, send)


async def _drain(receive: Receive) -> None:
    """Read and discard the rest of the body, within a byte and a time budget."""
    deadline = time.monotonic() + _DRAIN_SECONDS
    discarded = 0
    while discarded <= _DRAIN_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), timeout=left)
        except asyncio.TimeoutError:
            return
        if message["type"] != "http.request":
            return
        discarded += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _expects_continue(scope: Scope) -> bool:
    return any(
        name == b"expect" and value.lower() == b"100-continue"
        for name, value in scope.get("headers", [])
    )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_json(send: Send, status: int, body: dict[str, object]) -> None:
    payload = json_text.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
