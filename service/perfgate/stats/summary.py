"""Summary statistics of a sample list, as the store and the reports show them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


def summarize_value(value: float) -> Summary:
    """The summary of a single exact value (n = 1, no spread)."""
    return Summary(n=1, median=value, iqr=0.0, min=value, max=value)
