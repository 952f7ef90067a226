"""A suite's shared movement: how far a run moved every benchmark at once.

A shared runner has busy and quiet stretches that move most benchmarks of a run the same way,
for a few runs or a few dozen. Seen one benchmark at a time, each stretch is a level of its own,
so every benchmark of the suite would get the same change points. Seen across the suite, it is
one movement of the runs. A change point of a benchmark is kept when it is still there after
that shared movement is taken out of its history, or when it lies where the shared movement
itself changes level (a dependency or a runner image that moved the whole suite is a change, and
is still reported). docs/changepoints.md#the-suites-shared-movement has the rule and what it
gives on recorded histories.

Everything here is on the log scale the store detects on: a movement is a ratio.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from perfgate.stats.changepoints import (
    FloatArray,
    SeriesLike,
    detect_change_points,
)
from perfgate.stats.loadings import huber_slope

# A run's shared movement is measured only where at least this many other benchmarks ran in it:
# the median of fewer is mostly their own noise.
MIN_OTHERS = 5
# Benchmarks whose histories measure the movement. The median of 64 is about 1/6 of one
# benchmark's noise (1.25 / 8); reading more costs every upload a larger query for little.
SAMPLE = 64

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class SharedMovement(Generic[Key]):
    """The shared movement of the runs of one window, one value per run position.

    `factor` is the median over the measuring benchmarks of how far each sits from its own
    median in the window (NaN where fewer than `MIN_OTHERS` ran); `without` gives, for each
    measuring benchmark, the same median over the others only, so that a benchmark's own step
    never enters the movement taken out of it; `changes` are the positions where `factor`
    itself changes level.
    """

    factor: FloatArray
    without: Mapping[Key, FloatArray]
    changes: tuple[int, ...]

    def for_series(self, key: Key) -> FloatArray:
        """The movement to take out of the history of benchmark `key`, by run position."""
        return self.without.get(key, self.factor)


def shared_movement(histories: Mapping[Key, SeriesLike]) -> SharedMovement[Key]:
    """The shared movement of the runs, from the measuring benchmarks' histories.

    Each history holds one value per run position of the window (all the same length), NaN
    where the benchmark did not run.
    """
    keys = list(histories)
    if not keys:
        raise ValueError("the shared movement needs at least one history")
    rows = np.array([np.asarray(histories[k], dtype=np.float64) for k in keys], ndmin=2)
    if rows.ndim != 2:
        raise ValueError("every history must be one-dimensional and of the same length")
    present = np.isfinite(rows)
    # Each benchmark's own level is its median in the window: the movement is what is left.
    centres = np.array(
        [float(np.median(r[p])) if p.any() else 0.0 for r, p in zip(rows, present, strict=True)]
    )
    deviations = np.where(present, rows - centres[:, None], np.nan)
    factor = _median_where(deviations, present, MIN_OTHERS)
    without = dict(zip(keys, medians_without_each(deviations, present), strict=True))
    return SharedMovement(factor, without, tuple(level_changes(factor)))


def confirmed_changes(
    values: SeriesLike,
    movement: SeriesLike,
    found: Sequence[int],
    movement_changes: Sequence[int],
    *,
    min_size: int = 5,
) -> list[int]:
    """The change points of `found` (the detector's, on `values`) that are not the runs' shared
    movement.

    `movement` is the shared movement at each point of `values` (NaN where not measured) and
    `movement_changes` the indices of `values` where the movement itself changes level. The
    movement is taken out in the proportion the history follows it (its loading, a robust
    regression slope, at least 0), and the detector runs again on what is left. A change point
    is kept when that second run finds one fewer than `min_size` points from it (closer than
    one shortest segment, so it is the same change), or when it lies that close to a change of
    the movement itself. Where too little of the movement is known to check, `found` stands.
    """
    if not found:
        return []
    x = np.asarray(values, dtype=np.float64)
    m = np.asarray(movement, dtype=np.float64)
    known = np.isfinite(m)
    if int(known.sum()) < 2 * min_size:
        return list(found)
    loading = huber_slope(x[known], m[known])
    if loading == 0.0:
        return list(found)
    own = detect_change_points(x - loading * np.where(known, m, 0.0), min_size=min_size)

    def near(index: int, others: Sequence[int]) -> bool:
        return any(abs(index - other) < min_size for other in others)

    return [i for i in found if near(i, own) or near(i, movement_changes)]


def _median_where(values: FloatArray, present: np.ndarray, least: int) -> FloatArray:
    counts = present.sum(axis=0)
    out = np.full(values.shape[1], np.nan)
    enough = counts >= least
    if enough.any():
        out[enough] = np.nanmedian(values[:, enough], axis=0)
    return out


def medians_without_each(
    values: FloatArray, present: np.ndarray, least: int = MIN_OTHERS
) -> list[FloatArray]:
    """For each row, the median of the other rows' present values in each column (NaN where
    fewer than `least` others are present).

    One sort per column: leaving out the value of rank r shifts every rank from r on by one, so
    the two middle ranks of the rest are read from the sorted column directly.
    """
    rows, columns = values.shape
    ordered = np.sort(np.where(present, values, np.inf), axis=0)
    rank = np.empty((rows, columns), dtype=np.int64)
    np.put_along_axis(
        rank,
        np.argsort(np.where(present, values, np.inf), axis=0, kind="stable"),
        np.arange(rows)[:, None].repeat(columns, axis=1),
        axis=0,
    )
    counts = present.sum(axis=0)
    every_column = np.arange(columns)
    out = []
    for i in range(rows):
        own = present[i]
        # Without a value of its own, the row's "others" are the whole column: removing the
        # rank past the end changes nothing.
        r = np.where(own, rank[i], rows)
        left = counts - own.astype(np.int64)
        low = np.maximum((left - 1) // 2, 0)
        high = np.maximum(left // 2, 0)
        at_low = np.minimum(low + (low >= r), rows - 1)
        at_high = np.minimum(high + (high >= r), rows - 1)
        median = 0.5 * (ordered[at_low, every_column] + ordered[at_high, every_column])
        out.append(np.where(left >= least, median, np.nan))
    return out


def level_changes(factor: SeriesLike) -> list[int]:
    """The positions where the shared movement changes level (the detector's default setting,
    on the positions where it is known)."""
    factor = np.asarray(factor, dtype=np.float64)
    known = np.flatnonzero(np.isfinite(factor))
    if known.size == 0:
        return []
    return [int(known[i]) for i in detect_change_points(factor[known])]
