"""Process modes: benchmarks whose separate processes land in one of a few distinct speed levels.

A process can draw one of a benchmark's speed levels (a memory layout, a code path picked at
start-up) and keep it for its whole life: its samples look clean, yet its median sits 1.3x or 2x
from another process's. Once rounds or history have shown such levels, a side that lands in a
known level is not a regression; a level nobody has seen is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# A level needs this many members: a single far-off process is an outlier, not a mode.
MIN_LEVEL_MEMBERS = 2
# Too few processes cannot show levels at all.
MIN_VALUES = 6
# Two levels closer than this (log, about 8%) are one level as far as verdicts go.
MIN_LEVEL_GAP = 0.08
# The gap between two levels must be this many times the spread inside them.
GAP_OVER_SPREAD = 5.0
MAX_LEVELS = 3


def speed_levels(values: Sequence[float] | np.ndarray) -> list[float]:
    """The distinct levels (log scale, ascending) that `values` (log medians of processes) fall in.

    One level (the median) unless the values split at a gap that is wider than `MIN_LEVEL_GAP`
    and `GAP_OVER_SPREAD` times the spread inside the groups, each group with at least
    `MIN_LEVEL_MEMBERS` values; groups split again, up to `MAX_LEVELS`.
    """
    array = np.sort(np.asarray(values, dtype=np.float64))
    if array.size == 0:
        return []
    if array.size < MIN_VALUES:
        return [float(np.median(array))]
    groups = [array]
    while len(groups) < MAX_LEVELS:
        best: tuple[float, int, int] | None = None
        for index, group in enumerate(groups):
            cut = _best_split(group)
            if cut is not None and (best is None or cut[0] > best[0]):
                best = (cut[0], index, cut[1])
        if best is None:
            break
        _, index, at = best
        group = groups[index]
        groups[index : index + 1] = [group[:at], group[at:]]
    return [float(np.median(group)) for group in groups]


def _best_split(group: np.ndarray) -> tuple[float, int] | None:
    """The widest admissible gap in a sorted group as (gap, split index), or None."""
    if group.size < 2 * MIN_LEVEL_MEMBERS:
        return None
    gaps = np.diff(group)
    best: tuple[float, int] | None = None
    for i in np.argsort(gaps)[::-1]:
        at = int(i) + 1
        if at < MIN_LEVEL_MEMBERS or group.size - at < MIN_LEVEL_MEMBERS:
            continue
        gap = float(gaps[i])
        if gap < MIN_LEVEL_GAP:
            break
        left, right = group[:at], group[at:]
        spread = math.sqrt(
            (float(np.sum((left - left.mean()) ** 2)) + float(np.sum((right - right.mean()) ** 2)))
            / max(group.size - 2, 1)
        )
        if gap > GAP_OVER_SPREAD * spread:
            best = (gap, at)
            break
    return best


def within_levels(values: np.ndarray, levels: Sequence[float]) -> np.ndarray:
    """Each value minus its nearest level: the spread inside the levels."""
    if len(levels) <= 1:
        centre = levels[0] if levels else float(np.median(values))
        return values - centre
    grid = np.asarray(levels)
    nearest = grid[np.argmin(np.abs(values[:, None] - grid[None, :]), axis=1)]
    residuals: np.ndarray = values - nearest
    return residuals


def within_offsets(values: np.ndarray, offsets: Sequence[float]) -> np.ndarray:
    """Each value minus its nearest level, for levels known only as offsets from the fastest.

    The fastest level's position is the one, among those that put some value exactly on a
    level, that leaves the smallest residuals.
    """
    best: np.ndarray | None = None
    for value in values:
        for offset in offsets:
            residuals = within_levels(values, [value - offset + o for o in offsets])
            if best is None or float(np.sum(residuals**2)) < float(np.sum(best**2)):
                best = residuals
    return best if best is not None else values
