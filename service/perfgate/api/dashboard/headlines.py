"""Each run's verdict counts against its base, for the project page's run lists, remembered.

A run's comparison (the same one its run page shows) costs loading both sides' samples (about
a tenth of the time) and the comparator (the rest), so counts are kept per process at two
levels: by the project's state (its run count and newest run), which answers a page view with
no new upload for free; and by the comparison's inputs (the runs on each side, the history and
calibration it pools), so after an upload only runs whose comparison really changed (the new
run, a run whose base gained a run) are compared again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from perfgate.api.dashboard.runcompare import Inputs
from perfgate.errors import PerfgateError
from perfgate.report.verdicts import SEVERITY, benchmark_counts
from perfgate.stats.model import Comparison

# Enough for the runs one project page shows, times a few projects.
MAX_REMEMBERED = 512
# The counts a run list shows, most urgent first (report.verdicts' words and order).
SHOWN = SEVERITY
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
    """Headlines by (run, project state), and by (run, comparison inputs)."""

    def __init__(self, size: int = MAX_REMEMBERED) -> None:
        self._by_state: OrderedDict[tuple[str, object], Headline] = OrderedDict()
        self._by_inputs: OrderedDict[tuple[str, object], Headline] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        self.compared = 0  # comparisons run, for tests and curious people

    def get(self, run_id: str, state: object, prepare: Callable[[], Inputs | str]) -> Headline:
        """The run's headline; `prepare` loads its comparison's inputs (or says why none)."""
        found = self._find(self._by_state, (run_id, state))
        if found is not None:
            return found
        prepared = prepare()
        if isinstance(prepared, str):
            found = headline_of(None, prepared)
        else:
            by_inputs = (run_id, prepared.key)
            found = self._find(self._by_inputs, by_inputs)
            if found is None:
                try:
                    found = headline_of(prepared.compare(), None)
                except PerfgateError as exc:
                    found = headline_of(None, str(exc))
                with self._lock:
                    self.compared += 1
                self._keep(self._by_inputs, by_inputs, found)
        self._keep(self._by_state, (run_id, state), found)
        return found

    def _find(
        self, table: OrderedDict[tuple[str, object], Headline], key: tuple[str, object]
    ) -> Headline | None:
        with self._lock:
            found = table.get(key)
            if found is not None:
                table.move_to_end(key)
            return found

    def _keep(
        self,
        table: OrderedDict[tuple[str, object], Headline],
        key: tuple[str, object],
        headline: Headline,
    ) -> None:
        with self._lock:
            table[key] = headline
            while len(table) > self._size:
                table.popitem(last=False)
