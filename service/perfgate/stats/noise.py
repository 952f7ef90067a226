"""Between-run noise: the common speed factor of a run, and each benchmark's run-to-run spread.

Samples of one process are not independent of that process: the same code measured in two
processes moves by more than within-run spread suggests, and part of that movement is shared by
every benchmark of the run. This module estimates both parts, on a log scale, from whichever
evidence a comparison has: earlier runs of the base branch (history), rounds inside the compared
runs, or the spread across benchmarks of one pair of runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Degrees of freedom of the Student-t used for run-to-run deviations nobody has measured.
PRIOR_TAIL_DF = 3.0
# Spread of a whole run's speed (the common factor) assumed without history.
PRIOR_COMMON_SIGMA = 0.05
# How many pseudo-observations the pooled estimate is worth when shrinking a per-benchmark one.
PRIOR_DF = 4.0
MIN_HISTORY_RUNS = 5
MIN_BENCHMARKS_FOR_COMMON = 5
# A residual beyond this (about +35%) in history marks a benchmark that sometimes lands far off.
EXCURSION_LOG = 0.3
# Run-to-run deviations stay heavy-tailed however long the history: cap the t's df.
HISTORY_TAIL_DF = 2.0

# Residual run-to-run spread (log scale, after the common factor) assumed when nothing better is
# known, per way of sampling (the measurements behind each are in docs/comparator.md). One
# process's median can sit away from another's for reasons its samples cannot show (a neighbour
# on the host during its window, memory placement, a bimodal code path), so with one round a
# side and no history the CI is wide and heavy-tailed: a verdict needs a change well beyond
# that. The spread across the pair's benchmarks (cross-section) raises the single-round figure on
# a noisy pair.


@dataclass(frozen=True)
class Priors:
    """What a comparison assumes where it has no better evidence, for one way of sampling."""

    #: Run-to-run spread of one round a side (the floor of the cross-section).
    single: float
    #: Floor of the pooled per-round spread when rounds are compared.
    rounds: float
    #: Slow drift between the sides' jobs, per side, when their rounds did not alternate: rounds
    #: of one side run back to back agree with each other more than with the other side's.
    drift: float
    #: Degrees of freedom of the Student-t for the rounds' spread (the tails of process noise).
    rounds_tail_df: float
    #: The rounds floor and t df when the sides' rounds alternated in time: no drift between
    #: the sides, and no excursion one side's back-to-back rounds share (see comparison.py).
    alternated_rounds: float
    alternated_tail_df: float
    #: The same for the spread of history's medians, however many runs it has.
    history_tail_df: float
    #: The environment's `sampling` these figures were measured with.
    sampling: str


# Instances sampled one after another: a burst of load lands on all samples of one instance. On
# 55 jobs recorded with the pinned allocator (bench/data/comparator/pinned) a benchmark's
# run-to-run sd was 2.5-12%, median 7%. 8% a round keeps one-round false alarms at 0.3% there (3%
# still let the demo flag an unchanged benchmark in 3 of 6 runs); three rounds a side cannot see
# a benchmark's process modes when all of one side's land in the same one (the demo once saw
# cnn_train_step at -11% with every round agreeing), so no less than 5%; the drift between
# groups of 3 consecutive jobs needed 3% a side to hold three-round false alarms under 1%.
SEQUENTIAL = Priors(
    single=0.08,
    rounds=0.05,
    drift=0.03,
    rounds_tail_df=3.0,
    alternated_rounds=0.05,
    alternated_tail_df=3.0,
    history_tail_df=HISTORY_TAIL_DF,
    sampling="sequential",
)
# Samples taken in slices round-robin across instances (the harness's default on CPU): a burst
# spoils a slice of each, and a benchmark's run-to-run sd after the common factor fell to
# 0.7-5.4%, median 1.1% (bench/data/comparator/interleaved, 36 jobs; the sweeps that chose these
# figures are in docs/comparator.md). For alternating rounds the floor bounds the median
# benchmark's spread, a little above the 1.1% measured, and the t takes the df of the shrunk
# estimate (4 + 4); rounds run one side after the other keep 2% and df 6, which hold the false
# alarms of `--rounds 3` jobs (one job's rounds can share an excursion) under 1%.
INTERLEAVED = Priors(
    single=0.03,
    rounds=0.02,
    drift=0.01,
    rounds_tail_df=6.0,
    alternated_rounds=0.015,
    alternated_tail_df=8.0,
    history_tail_df=4.0,
    sampling="interleaved",
)


def priors_for(samplings: Iterable[object]) -> Priors:
    """INTERLEAVED when every run of a comparison was sampled interleaved, else SEQUENTIAL (the
    cautious figures also cover documents from before the field existed)."""
    values = list(samplings)
    if values and all(value == INTERLEAVED.sampling for value in values):
        return INTERLEAVED
    return SEQUENTIAL


MetricKey = tuple[str, str]


@dataclass(frozen=True)
class NoiseFloor:
    """Run-to-run spread of one benchmark metric's median, on a log scale."""

    sigma: float
    source: str  # "history", "rounds", "rounds+drift", "cross-section" or "prior"
    runs: int = 0
    # The largest residual seen in history when it is an excursion (None otherwise).
    excursion: float | None = None
    # Degrees of freedom behind `sigma`: run-to-run deviations are drawn from a Student-t.
    df: float = PRIOR_TAIL_DF

    def describe(self) -> str:
        if self.source == "history":
            text = f"history of {self.runs} base runs (±{math.expm1(self.sigma):.1%} run to run)"
            if self.excursion is not None:
                text += f", with an excursion of {math.expm1(self.excursion):+.0%}"
            return text
        if self.source == "rounds":
            return f"round-to-round spread (±{math.expm1(self.sigma):.1%})"
        if self.source == "rounds+drift":
            return (
                f"round-to-round spread with drift between the sides' jobs "
                f"(±{math.expm1(self.sigma):.1%})"
            )
        if self.source == "cross-section":
            return f"spread across benchmarks of this pair (±{math.expm1(self.sigma):.1%})"
        return f"default run-to-run noise (±{math.expm1(self.sigma):.1%})"


def mad_sigma(values: Sequence[float] | np.ndarray) -> float:
    """Robust standard deviation (MAD × 1.4826); 0 for fewer than two values."""
    array = np.asarray(values, dtype=np.float64)
    if array.size < 2:
        return 0.0
    return float(1.4826 * np.median(np.abs(array - np.median(array))))


def common_factor(log_ratios: Sequence[float]) -> float:
    """The median per-benchmark log ratio: what the whole run shared (0 for too few benchmarks).

    Per-benchmark verdicts are taken relative to it, since most of a run's shared movement is
    the machine; the comparison reports it as a finding of its own, with its own verdict, so a
    change that slows everything is never hidden.
    """
    if len(log_ratios) < MIN_BENCHMARKS_FOR_COMMON:
        return 0.0
    return float(np.median(np.asarray(log_ratios, dtype=np.float64)))


@dataclass(frozen=True)
class History:
    """What earlier runs of the base branch say about noise."""

    floors: dict[MetricKey, NoiseFloor]
    runs: int
    # Spread of the per-run common factor (None when there is too little history).
    common_sigma: float | None


def history_noise(
    runs: Sequence[Mapping[MetricKey, float]], *, tail_df: float = HISTORY_TAIL_DF
) -> History:
    """Per-metric noise floors from the medians of earlier base-branch runs (oldest first).

    `tail_df` caps the Student-t's degrees of freedom (`Priors.history_tail_df`).

    Each run's own common factor (its median log deviation across benchmarks) is removed before
    measuring a benchmark's spread, matching how comparisons take drift out.
    """
    if len(runs) < MIN_HISTORY_RUNS:
        return History(floors={}, runs=len(runs), common_sigma=None)
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
        # MAD alone would ignore the few runs that land far off, which are exactly the ones
        # that raise false alarms: the 80th percentile of |residual| keeps part of the tail.
        tail = float(np.quantile(np.abs(column - np.median(column)), 0.8)) / 1.2816
        floors[key] = NoiseFloor(
            sigma=max(mad_sigma(column), tail, 1e-4),
            source="history",
            runs=int(column.size),
            excursion=worst if worst >= EXCURSION_LOG else None,
            df=min(float(column.size - 1), tail_df),
        )
    factors = per_run[:, 0]
    factors = factors[~np.isnan(factors)]
    common_sigma = mad_sigma(factors) if factors.size >= MIN_HISTORY_RUNS else None
    return History(floors=floors, runs=len(runs), common_sigma=common_sigma)


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


def with_drift(sigma: float, *, rounds_b: int, rounds_h: int, drift: float) -> float:
    """A per-round spread widened so that it also covers each side's own drift offset.

    The comparison's spread is `sigma * sqrt(1/rounds_b + 1/rounds_h)`; drift adds a variance of
    `2 * drift**2` that no number of rounds averages away, folded into the per-round figure.
    """
    return math.sqrt(sigma**2 + 2.0 * drift**2 / (1.0 / rounds_b + 1.0 / rounds_h))


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
