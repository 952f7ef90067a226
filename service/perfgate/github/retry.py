"""Retries for GitHub calls: exponential backoff on 5xx and lost connections, rate limits honoured.

The retrying happens in a requests transport adapter, under github3.py, so every call github3
makes is covered. All waiting in one command shares one budget (`Backoff.max_total`): a job is
never held for long by a GitHub outage; it fails with exit code 3 instead.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import requests
from requests.adapters import HTTPAdapter

# GitHub asks clients hit by a secondary rate limit without a Retry-After to wait a minute.
SECONDARY_LIMIT_WAIT = 60.0


@dataclass
class Backoff:
    """How long to wait before each retry; `sleep` and `clock` are injectable for tests."""

    retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_total: float = 180.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    waited: float = 0.0
    waits: list[float] = field(default_factory=list)

    def exponential(self, attempt: int) -> float:
        return float(min(self.max_delay, self.base_delay * 2**attempt))

    def allows(self, attempt: int, seconds: float) -> bool:
        return attempt < self.retries and self.waited + seconds <= self.max_total

    def wait(self, seconds: float) -> None:
        self.waited += seconds
        self.waits.append(seconds)
        self.sleep(seconds)

    def rate_limit_wait(
        self, response: requests.Response, *, server_error: bool = False
    ) -> float | None:
        """Seconds GitHub asks us to wait, when `response` is a rate-limit answer."""
        headers = response.headers
        retry_after = headers.get("Retry-After")
        if retry_after is not None and (server_error or response.status_code in (403, 429)):
            with contextlib.suppress(ValueError):
                return max(0.0, float(retry_after))
        if response.status_code not in (403, 429):
            return None
        if headers.get("X-RateLimit-Remaining") == "0" and headers.get("X-RateLimit-Reset"):
            with contextlib.suppress(ValueError):
                # One second of slack: the reset time is whole seconds on GitHub's clock.
                return max(1.0, float(headers["X-RateLimit-Reset"]) - self.clock() + 1.0)
        if response.status_code == 429 or "rate limit" in response.text.lower():
            return SECONDARY_LIMIT_WAIT
        return None

    def delay_for(self, attempt: int, response: requests.Response | None) -> float | None:
        """Seconds to wait before trying again, or None: give up (or nothing to retry)."""
        if response is None:
            wanted = self.exponential(attempt)
        elif response.status_code >= 500:
            # A 503 may say when to come back; otherwise back off exponentially.
            asked = self.rate_limit_wait(response, server_error=True)
            wanted = self.exponential(attempt) if asked is None else asked
        else:
            limited = self.rate_limit_wait(response)
            if limited is None:
                return None
            wanted = limited
        return wanted if self.allows(attempt, wanted) else None


def describe_rate_limit(response: requests.Response) -> str | None:
    """`rate limited until 14:05 UTC` for a rate-limit answer, else None."""
    reset = response.headers.get("X-RateLimit-Reset")
    if response.headers.get("X-RateLimit-Remaining") == "0" and reset:
        with contextlib.suppress(ValueError):
            when = time.strftime("%H:%M UTC", time.gmtime(float(reset)))
            return f"GitHub's API rate limit is used up until {when}"
    if response.headers.get("Retry-After") or response.status_code == 429:
        return "GitHub's secondary rate limit kept refusing requests"
    if response.status_code == 403 and "rate limit" in response.text.lower():
        return "GitHub's secondary rate limit kept refusing requests"
    return None


class RetryingAdapter(HTTPAdapter):
    """A requests transport that retries what another attempt may cure."""

    def __init__(
        self, backoff: Backoff, *, notify: Callable[[str], None] = lambda _message: None
    ) -> None:
        super().__init__()
        self.backoff = backoff
        self.notify = notify
        self._enabled = True

    @contextlib.contextmanager
    def single_attempt(self) -> Iterator[None]:
        """Inside, 5xx answers and lost connections are not retried (the request may have landed):
        for writes that are unsafe to repeat blindly. Rate-limit answers are still waited out."""
        self._enabled = False
        try:
            yield
        finally:
            self._enabled = True

    def send(  # noqa: PLR0917 - requests' own signature
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float | None, float | None] | None = None,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        proxies: dict[str, str] | None = None,
    ) -> requests.Response:
        attempt = 0
        while True:
            try:
                response = super().send(
                    request,
                    stream=stream,
                    timeout=timeout,
                    verify=verify,
                    cert=cert,
                    proxies=proxies,
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                delay = self.backoff.delay_for(attempt, None) if self._enabled else None
                if delay is None:
                    raise
                what = f"{type(exc).__name__}"
            else:
                # A rate-limited request was refused unprocessed: always safe to send again.
                safe = self._enabled or response.status_code < 500
                delay = self.backoff.delay_for(attempt, response) if safe else None
                if delay is None:
                    return response
                what = f"HTTP {response.status_code}"
                response.close()
            self.notify(
                f"GitHub: {request.method} {request.path_url.split('?')[0]} got {what}; "
                f"retrying in {delay:g}s (retry {attempt + 1} of {self.backoff.retries})"
            )
            self.backoff.wait(delay)
            attempt += 1
