"""Each run's verdict counts against its base, for the project page's run lists, remembered.

A run's comparison (the same one its run page shows) costs a load of both sides' samples and the
comparator, so the counts are kept per process and reused until the project gets another run:
a new run can change which base an earlier run falls back to, and the history pooled with it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from perfgate.report.verdicts import benchmark_counts
from perfgate.stats.model import Comparison

# Enough for the runs one project page shows, times a few projects.
MAX_REMEMBERED = 512
# The counts a run list shows, most urgent first (report.verdicts' words).
SHOWN = (
    "regression",
    "possible regression",
    "error",
    "improvement",
    "missing",
    "new",
    "inconclusive",
    "unchanged",
)
# What colours a run's row: the first of these with a count.
URGENT = ("regression", "possible regression", "error", "improvement")


@dataclass(frozen=True)
class Headline:
    """A run's standing against its base: benchmark counts per verdict, or why there is none."""

    counts: dict[str, int]
    note: str | None = None

    @property
    def worst(self) -> str:
        """The row's class: the most urgent verdict with a count, else `unchanged` or `none`."""
        if self.note is not None:
            return "none"
        return next((v.replace(" ", "_") for v in URGENT if self.counts.get(v)), "unchanged")

    @property
    def parts(self) -> list[tuple[str, str]]:
        """(badge kind, label) for each verdict with a count: `1 regression`, `2 unchanged`."""
        return [
            (verdict.replace(" ", "_"), f"{self.counts[verdict]} {verdict}")
            for verdict in SHOWN
            if self.counts.get(verdict)
        ]


def headline_of(comparison: Comparison | None, note: str | None) -> Headline:
    if comparison is None:
        return Headline(counts={}, note=note or "nothing to compare with")
    return Headline(counts=benchmark_counts(comparison))


class HeadlineCache:
    """Headlines by (run, project state); a new run in the project makes them stale."""

    def __init__(self, size: int = MAX_REMEMBERED) -> None:
        self._found: OrderedDict[tuple[str, object], Headline] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, run_id: str, state: object, compute: Callable[[], Headline]) -> Headline:
        key = (run_id, state)
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        found = compute()
        with self._lock:
            self._found[key] = found
            while len(self._found) > self._size:
                self._found.popitem(last=False)
        return found
