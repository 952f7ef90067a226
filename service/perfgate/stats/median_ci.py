"""The 95% CI of the median for many stored measurements at once, from their packed samples.

The store keeps each measurement's CI next to its median (computed at upload with
`perfgate.stats.summary.stored_median_ci`); this batch form fills the rows stored before it did
(migration 0004), with the same order statistics, one numpy sort per group of equal sample count.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from perfgate.stats.summary import median_ci

# Below this many samples no 95% interval of the median exists; the store keeps NULL.
MIN_SAMPLES = 6


@functools.lru_cache(maxsize=256)
def median_ci_ranks(n: int) -> tuple[int, int] | None:
    """0-based ranks of the order statistics bounding the median of `n` samples; None below 6."""
    if n < MIN_SAMPLES:
        return None
    # median_ci returns order statistics; on 0..n-1 those are their own ranks.
    low, high = median_ci(list(range(n)), presorted=True)
    return int(low), int(high)


def median_cis(rows: Sequence[tuple[bytes | None, int]]) -> list[tuple[float, float] | None]:
    """Each row's (packed little-endian float64 samples, n) -> its median's 95% CI, or None.

    None where no CI exists: under 6 samples, no samples, or a blob that does not hold n values.
    """
    out: list[tuple[float, float] | None] = [None] * len(rows)
    by_n: dict[int, list[int]] = {}
    for i, (blob, n) in enumerate(rows):
        if blob is not None and n >= MIN_SAMPLES and len(blob) == 8 * n:
            by_n.setdefault(n, []).append(i)
    for n, indices in by_n.items():
        ranks = median_ci_ranks(n)
        assert ranks is not None
        matrix = np.frombuffer(b"".join(rows[i][0] or b"" for i in indices), dtype="<f8")
        ordered = np.sort(matrix.reshape(len(indices), n), axis=1)
        lows = ordered[:, ranks[0]].tolist()
        highs = ordered[:, ranks[1]].tolist()
        for i, low, high in zip(indices, lows, highs, strict=True):
            out[i] = (low, high)
    return out
