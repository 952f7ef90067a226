"""Summary statistics of a sample list, as the store and the reports show them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    iqr: float
    min: float
    max: float


def summarize(samples: Sequence[float]) -> Summary:
    """n, median, interquartile range, min and max (samples must be non-empty)."""
    values = np.asarray(samples, dtype=np.float64)
    q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    return Summary(
        n=int(values.size),
        median=float(median),
        iqr=float(q3 - q1),
        min=float(values.min()),
        max=float(values.max()),
    )


def stored_median_ci(samples: Sequence[float]) -> tuple[float, float] | None:
    """The median's 95% CI as the store keeps it: none below 6 samples, where no such CI exists."""
    if len(samples) < 6:
        return None
    return median_ci(samples)


def summarize_value(value: float) -> Summary:
    """The summary of a single exact value (n = 1, no spread)."""
    return Summary(n=1, median=value, iqr=0.0, min=value, max=value)


CONFIDENCE = 0.95


@lru_cache(maxsize=4096)
def _median_ranks(n: int, confidence: float) -> tuple[int, int]:
    """0-based order-statistic indices bounding the median at `confidence` (exact binomial)."""
    alpha = 1 - confidence
    log_half_n = n * math.log(0.5)
    cumulative = 0.0
    lower = 0  # number of order statistics cut from each end
    for i in range(n // 2 + 1):
        cumulative += math.exp(
            math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n
        )
        if cumulative > alpha / 2:
            break
        lower = i + 1
    if lower == 0:
        return 0, n - 1
    return lower - 1, n - lower


def median_ci(
    samples: Sequence[float], confidence: float = CONFIDENCE, *, presorted: bool = False
) -> tuple[float, float]:
    """Distribution-free CI of the median: the order statistics a Binomial(n, 1/2) puts it between.

    This is the one definition of "±CI" in perfgate's run output: the sampler stops on it and the
    table shows it. With fewer than 6 samples no 95% interval exists; (min, max) is returned.
    """
    ordered = list(samples) if presorted else sorted(samples)
    if not ordered:
        raise ValueError("median_ci needs at least one sample")
    lo, hi = _median_ranks(len(ordered), confidence)
    return ordered[lo], ordered[hi]


def median(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
