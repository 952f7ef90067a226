"""The size of a step in a benchmark's history: the ratio of two segments' levels, with a CI.

A segment's level is the median of its runs' medians on a log scale, as the change-point
detector's levels are (`stats.changepoints.segment_levels`, applied by the store to log medians),
so the ratio here is the one `perfgate changes` shows. Its 95% CI is a seeded percentile
bootstrap over the runs of each segment: deterministic for the same history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

RESAMPLES = 2000
LEVEL = 0.95
# Below this many runs on a side a bootstrap of its median says nothing useful.
MIN_RUNS = 3


@dataclass(frozen=True)
class StepSize:
    """`after / before` of the segments' levels and its 95% CI (None with too few runs)."""

    before: float
    after: float
    ratio: float
    ci: tuple[float, float] | None
    runs_before: int
    runs_after: int


def step_size(
    before: Sequence[float], after: Sequence[float], *, seed: int = 0, resamples: int = RESAMPLES
) -> StepSize:
    """The step between two segments of positive run medians (oldest first, either order is fine).

    Raises ValueError for an empty segment or a value that is not a positive finite number.
    """
    low = _logs(before, "before")
    high = _logs(after, "after")
    level_before = float(np.median(low))
    level_after = float(np.median(high))
    ci: tuple[float, float] | None = None
    if low.size >= MIN_RUNS and high.size >= MIN_RUNS:
        rng = np.random.default_rng(seed)
        boot_low = np.median(low[rng.integers(0, low.size, (resamples, low.size))], axis=1)
        boot_high = np.median(high[rng.integers(0, high.size, (resamples, high.size))], axis=1)
        tail = (1.0 - LEVEL) / 2 * 100
        lo, hi = np.percentile(boot_high - boot_low, [tail, 100 - tail])
        ci = (math.exp(float(lo)), math.exp(float(hi)))
    return StepSize(
        before=math.exp(level_before),
        after=math.exp(level_after),
        ratio=math.exp(level_after - level_before),
        ci=ci,
        runs_before=int(low.size),
        runs_after=int(high.size),
    )


def _logs(values: Sequence[float], side: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        raise ValueError(f"the segment {side} the step has no runs")
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"the segment {side} the step holds a value that is not positive")
    logs: NDArray[np.float64] = np.log(array)
    return logs
