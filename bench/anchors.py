"""Other tools' regression rules, applied by `bench/eval_comparator.py eval` to the same pairs.

Each anchor is a function of one benchmark's base and head samples (a list of arrays, one per
round) and, where the rule uses it, the base branch's history (earlier runs' medians, oldest
first), returning "regression", "improvement" or "none". They are the rules as those tools apply
them by default, simplified to what a comparison of two sides sees:

- `asv`: Mann-Whitney U two-sided p < 0.002 on the pooled samples and the ratio of medians
  beyond x1.1 (`asv compare`'s factor).
- `codspeed`: the ratio of means beyond +-10%.
- `conbench`: z-score of the head's median against the distribution of the base branch's medians
  (history plus the base side's rounds), |z| > 5; without history the base side's rounds are the
  distribution when it has at least 3, else "none".
- `pytest_benchmark`: min of head against min of base, beyond +5% / -5% (`--benchmark-compare-fail
  min:5%`).

Not meant to be run on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as scipy_stats

Rounds = Sequence[np.ndarray]
Anchor = Callable[[Rounds, Rounds, Sequence[float] | None], str]


def _direction(ratio: float, limit: float) -> str:
    """Regression when head/base is beyond `limit` (> 1), improvement below 1/`limit`."""
    if ratio > limit:
        return "regression"
    if ratio < 1.0 / limit:
        return "improvement"
    return "none"


def asv(base: Rounds, head: Rounds, history: Sequence[float] | None = None) -> str:
    pooled_b, pooled_h = np.concatenate(base), np.concatenate(head)
    if np.ptp(np.concatenate([pooled_b, pooled_h])) == 0:
        return "none"
    p = float(scipy_stats.mannwhitneyu(pooled_h, pooled_b, alternative="two-sided").pvalue)
    if p >= 0.002:
        return "none"
    return _direction(float(np.median(pooled_h) / np.median(pooled_b)), 1.1)


def codspeed(base: Rounds, head: Rounds, history: Sequence[float] | None = None) -> str:
    ratio = float(np.mean(np.concatenate(head)) / np.mean(np.concatenate(base)))
    if ratio > 1.10:
        return "regression"
    if ratio < 0.90:
        return "improvement"
    return "none"


def conbench(base: Rounds, head: Rounds, history: Sequence[float] | None = None) -> str:
    base_medians = [float(np.median(r)) for r in base]
    if history:
        distribution = [*history, *base_medians]
    elif len(base_medians) >= 3:
        distribution = base_medians
    else:
        return "none"
    sd = float(np.std(distribution, ddof=1))
    if sd <= 0:
        return "none"
    head_median = float(np.median([np.median(r) for r in head]))
    z = (head_median - float(np.mean(distribution))) / sd
    if z > 5:
        return "regression"
    if z < -5:
        return "improvement"
    return "none"


def pytest_benchmark(base: Rounds, head: Rounds, history: Sequence[float] | None = None) -> str:
    ratio = float(np.min(np.concatenate(head)) / np.min(np.concatenate(base)))
    if ratio > 1.05:
        return "regression"
    if ratio < 0.95:
        return "improvement"
    return "none"


ANCHORS: dict[str, Anchor] = {
    "asv": asv,
    "codspeed": codspeed,
    "conbench": conbench,
    "pytest-benchmark": pytest_benchmark,
}
