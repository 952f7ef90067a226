"""The series answers a server has sent, kept while the series they show has not changed.

A whole history is thousands of points: fetching and serialising them was most of the time of
`GET /api/v1/series` (docs/service.md, "Measured"), and a trend is read far more often than a
run arrives. An answer is served again only when its series' version
(`store.trends.series_version`, one small query) is the one it was made from, so no answer is
ever older than the database. Each server process keeps its own, within a byte budget, the
least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

#: What the kept answers of one server process may add up to.
DEFAULT_BUDGET_BYTES = 32 * 2**20


class SeriesCache:
    """Answers by request, each with the series version it was made from."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[Hashable, bytes]] = OrderedDict()
        self._bytes = 0

    def get(self, request: Hashable, version: Hashable) -> bytes | None:
        """The answer kept for `request` if it was made at `version`, else None."""
        with self._lock:
            entry = self._entries.get(request)
            if entry is None or entry[0] != version:
                return None
            self._entries.move_to_end(request)
            return entry[1]

    def put(self, request: Hashable, version: Hashable, body: bytes) -> None:
        """Keep `body` as the answer to `request` at `version` (unless it alone is over budget)."""
        if len(body) > self.budget_bytes:
            return
        with self._lock:
            old = self._entries.pop(request, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._entries[request] = (version, body)
            self._bytes += len(body)
            while self._bytes > self.budget_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= len(dropped)
