"""Between-run noise: the common speed factor of a run, and each benchmark's run-to-run spread.

Samples of one process are not independent of that process: the same code measured in two
processes moves by more than within-run spread suggests, and part of that movement is shared by
every benchmark of the run. This module estimates both parts, on a log scale, from whichever
evidence a comparison has: earlier runs of the base branch (history), rounds inside the compared
runs, or the spread across benchmarks of one pair of runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Residual run-to-run spread (log scale, after the common factor) assumed when nothing better is
# known: what separate-process runs of PyTorch CPU code show on shared 2-core CI machines.
PRIOR_SIGMA = 0.025
# How many pseudo-observations the pooled estimate is worth when shrinking a per-benchmark one.
PRIOR_DF = 4.0
MIN_HISTORY_RUNS = 5
MIN_BENCHMARKS_FOR_COMMON = 5
# A residual beyond this (about +35%) in history marks a benchmark that sometimes lands far off.
EXCURSION_LOG = 0.3

MetricKey = tuple[str, str]


@dataclass(frozen=True)
class NoiseFloor:
    """Run-to-run spread of one benchmark metric's median, on a log scale."""

    sigma: float
    source: str  # "history", "rounds", "cross-section" or "prior"
    runs: int = 0
    # The largest residual seen in history when it is an excursion (None otherwise).
    excursion: float | None = None

    def describe(self) -> str:
        if self.source == "history":
            text = f"history of {self.runs} base runs (±{math.expm1(self.sigma):.1%} run to run)"
            if self.excursion is not None:
                text += f", with an excursion of {math.expm1(self.excursion):+.0%}"
            return text
        if self.source == "rounds":
            return f"round-to-round spread (±{math.expm1(self.sigma):.1%})"
        if self.source == "cross-section":
            return f"spread across benchmarks of this pair (±{math.expm1(self.sigma):.1%})"
        return f"default run-to-run noise (±{math.expm1(self.sigma):.1%})"


@dataclass(frozen=True)
class CommonFactor:
    """How much slower (log > 0) the head run was than the base run across all benchmarks."""

    log_ratio: float
    benchmarks: int
    # Whether per-benchmark ratios were taken relative to it (it looked like drift).
    applied: bool

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)


def mad_sigma(values: Sequence[float] | np.ndarray) -> float:
    """Robust standard deviation (MAD × 1.4826); 0 for fewer than two values."""
    array = np.asarray(values, dtype=np.float64)
    if array.size < 2:
        return 0.0
    return float(1.4826 * np.median(np.abs(array - np.median(array))))


def common_factor(log_ratios: Sequence[float], *, drift_limit: float) -> CommonFactor:
    """The median per-benchmark log ratio, applied only while it is within `drift_limit`.

    A shift shared by all benchmarks that is smaller than the threshold is treated as the
    machine's drift and taken out of each benchmark's ratio (it is still reported). A larger
    one is a finding in its own right (a change that slowed everything), so it is left in and
    every benchmark is judged on its raw ratio.
    """
    if len(log_ratios) < MIN_BENCHMARKS_FOR_COMMON:
        return CommonFactor(log_ratio=0.0, benchmarks=len(log_ratios), applied=False)
    estimate = float(np.median(np.asarray(log_ratios, dtype=np.float64)))
    applied = abs(estimate) <= drift_limit
    return CommonFactor(log_ratio=estimate, benchmarks=len(log_ratios), applied=applied)


def history_noise(runs: Sequence[Mapping[MetricKey, float]]) -> dict[MetricKey, NoiseFloor]:
    """Per-metric noise floors from the medians of earlier base-branch runs (oldest first).

    Each run's own common factor (its median log deviation across benchmarks) is removed before
    measuring a benchmark's spread, matching how comparisons take drift out.
    """
    if len(runs) < MIN_HISTORY_RUNS:
        return {}
    keys = sorted({key for run in runs for key in run})
    logs = np.full((len(runs), len(keys)), np.nan)
    for i, run in enumerate(runs):
        for j, key in enumerate(keys):
            value = run.get(key)
            if value is not None and value > 0:
                logs[i, j] = math.log(value)
    reference = np.nanmedian(logs, axis=0)
    deviations = logs - reference
    per_run = np.nanmedian(deviations, axis=1, keepdims=True)
    residuals = deviations - np.nan_to_num(per_run)
    floors: dict[MetricKey, NoiseFloor] = {}
    for j, key in enumerate(keys):
        column = residuals[:, j]
        column = column[~np.isnan(column)]
        if column.size < MIN_HISTORY_RUNS:
            continue
        worst = float(np.max(np.abs(column)))
        floors[key] = NoiseFloor(
            sigma=max(mad_sigma(column), 1e-4),
            source="history",
            runs=int(column.size),
            excursion=worst if worst >= EXCURSION_LOG else None,
        )
    return floors


def rounds_sigma(round_logs: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """Pooled within-side spread of round medians (log), with its degrees of freedom."""
    squares, df = 0.0, 0
    for logs in round_logs:
        if len(logs) >= 2:
            array = np.asarray(logs, dtype=np.float64)
            squares += float(np.sum((array - array.mean()) ** 2))
            df += len(logs) - 1
    if df == 0:
        return None
    return math.sqrt(squares / df), df


def shrink(sigma: float, df: float, *, prior: float, prior_df: float = PRIOR_DF) -> float:
    """Empirical-Bayes shrinkage of a variance estimate towards a pooled one."""
    return math.sqrt((df * sigma**2 + prior_df * prior**2) / (df + prior_df))


def cross_section_sigma(
    adjusted_log_ratios: Sequence[float], *, rounds_b: int, rounds_h: int
) -> float | None:
    """One run's noise from how much unchanged benchmarks disagree with each other.

    In a comparison where most benchmarks did not change, the spread of their (drift-adjusted)
    log ratios around zero is the pair's run-to-run noise; MAD keeps real changes from
    inflating it.
    """
    if len(adjusted_log_ratios) < MIN_BENCHMARKS_FOR_COMMON:
        return None
    spread = mad_sigma(adjusted_log_ratios)
    return spread / math.sqrt(1.0 / rounds_b + 1.0 / rounds_h)
