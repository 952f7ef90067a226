"""Two-sample statistics for one benchmark metric: oriented ratio, bootstrap CI, rank test, verdict.

Ratios are oriented so that > 1 is worse whatever the metric's direction: head/base for
lower-is-better metrics (time), base/head for higher-is-better ones (throughput).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import stats as scipy_stats

from perfgate.stats.median_ci import MIN_SAMPLES
from perfgate.stats.model import SideSummary, Verdict

# A change whose point estimate is beyond this many thresholds, with a p below FLAG_P (more
# likely a change than not), is never shown as green.
FLAG_TIMES = 3.0
FLAG_P = 0.2


@dataclass(frozen=True)
class CompareSettings:
    alpha: float = 0.05
    threshold: float = 0.03
    resamples: int = 1000
    seed: int = 0
    # With history, a benchmark's threshold is at least this many run-to-run spreads of its
    # medians (docs/comparator.md's k).
    history_k: float = 1.0
    # A side whose median is known to no better than ± this (log) cannot support a verdict.
    noisy_halfwidth: float = 0.15
    # (key, threshold) pairs that replace `threshold` for those benchmarks (a project's policy).
    key_thresholds: tuple[tuple[str, float], ...] = ()

    def threshold_for(self, key: str) -> float:
        """The threshold of one benchmark: its own from `key_thresholds`, else `threshold`."""
        return self._key_thresholds.get(key, self.threshold)

    @cached_property
    def _key_thresholds(self) -> dict[str, float]:
        return dict(self.key_thresholds)


# exp() of more than this is past the largest float: ratios between extreme (valid) samples,
# 1e-300 against 1e300, saturate at infinity instead of raising OverflowError.
_MAX_LOG = math.log(sys.float_info.max)


def exp_or_inf(log_value: float) -> float:
    """`math.exp` that gives infinity where the result is past the largest float."""
    return math.inf if log_value > _MAX_LOG else math.exp(log_value)


def expm1_or_inf(log_value: float) -> float:
    """`math.expm1` (a log ratio as a relative change) that saturates like `exp_or_inf`."""
    return math.inf if log_value > _MAX_LOG else math.expm1(log_value)


def orient(log_ratio_head_over_base: float, direction: str) -> float:
    """Turn log(head/base) into a log ratio where > 0 is worse."""
    return log_ratio_head_over_base if direction == "lower" else -log_ratio_head_over_base


def side_median(rounds: Sequence[np.ndarray]) -> float:
    """A side's median as reports show it: the median of its rounds' medians.

    Not the median of the pooled samples: the harness samples a noisy round for longer, so
    pooling would let the one disturbed round of three outweigh the two clean ones. (The
    statistics use `side_level`, which is as robust and more efficient.)
    """
    return float(np.median([np.median(r) for r in rounds]))


def summarize_side(rounds: Sequence[np.ndarray]) -> SideSummary:
    pooled = np.concatenate(rounds)
    q1, q3 = np.quantile(pooled, [0.25, 0.75])
    return SideSummary(
        n=int(pooled.size), median=side_median(rounds), iqr=float(q3 - q1), rounds=len(rounds)
    )


# Huber's tuning constant, in units of one round's run-to-run spread: rounds within it of the
# side's level count fully (the mean of their medians, 95% efficient), a round further off
# counts as if it sat there, so one disturbed round cannot carry a side.
HUBER_K = 1.5


def side_level(round_logs: np.ndarray, scale: float, *, iterations: int = 20) -> np.ndarray:
    """A side's level from its rounds' log medians (axis 0): Huber's location with known scale.

    Vectorised over the other axes (bootstrap replicates); one or two rounds give their mean,
    and a scale of 0 gives the median of the rounds.
    """
    logs = np.asarray(round_logs, dtype=np.float64)
    if logs.shape[0] <= 2:
        level: np.ndarray = np.mean(logs, axis=0)
        return level
    level = np.median(logs, axis=0)
    if scale <= 0:
        return level
    limit = HUBER_K * scale
    for _ in range(iterations):
        residuals = np.clip(logs - level, -limit, limit)
        level = level + np.mean(residuals, axis=0)
    return level


def bootstrap_medians(samples: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Medians of `resamples` bootstrap resamples of `samples` (vectorised)."""
    index = rng.integers(0, samples.size, size=(resamples, samples.size))
    medians: np.ndarray = np.median(samples[index], axis=1)
    return medians


def median_halfwidth(samples: np.ndarray) -> float | None:
    """Half-width of the distribution-free 95% CI of log(median), from order statistics.

    How well a side pins its own median down: bimodal or very spread samples give a wide one.
    None under `MIN_SAMPLES` samples, where no such interval exists (one figure per process,
    e.g. compile_time over 5 rounds): that is few samples, not spread ones, and the rank test's
    smallest p and the noise model's floor answer for it.
    """
    n = samples.size
    if n < MIN_SAMPLES:
        return None
    ordered = np.sort(samples)
    # Ranks (1-based) of the order statistics bracketing the median with >= 95% coverage.
    low = int(scipy_stats.binom.ppf(0.025, n, 0.5))
    high = n - low + 1
    low, high = max(low, 1), min(high, n)
    lo_value, hi_value = max(float(ordered[low - 1]), 1e-300), max(float(ordered[high - 1]), 1e-300)
    return (math.log(hi_value) - math.log(lo_value)) / 2.0


def min_two_sided_p(n1: int, n2: int) -> float:
    """The smallest p-value a two-sided Mann-Whitney test can give for these sample sizes."""
    log_combinations = math.lgamma(n1 + n2 + 1) - math.lgamma(n1 + 1) - math.lgamma(n2 + 1)
    return min(1.0, 2.0 * math.exp(-log_combinations))


def mann_whitney_p(base: np.ndarray, head: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value (normal approximation with tie and continuity corrections).

    Written out because scipy's wrapper costs more than the test itself when a comparison runs
    thousands of them; small samples go to scipy's exact test. Checked against scipy in tests.
    """
    n1, n2 = head.size, base.size
    pooled = np.concatenate([head, base])
    if np.ptp(pooled) == 0:
        return 1.0  # identical constant samples: no evidence of any difference
    if min(n1, n2) < 8:
        return float(scipy_stats.mannwhitneyu(head, base, alternative="two-sided").pvalue)
    ranks = scipy_stats.rankdata(pooled)
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    _, counts = np.unique(pooled, return_counts=True)
    n = n1 + n2
    tie = float(np.sum(counts**3 - counts)) / (n * (n - 1))
    sd = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie))
    if sd == 0:
        return 1.0
    z = (abs(u - mean) - 0.5) / sd
    return float(min(1.0, 2.0 * scipy_stats.norm.sf(max(z, 0.0))))


@dataclass(frozen=True)
class SampledEstimate:
    """A metric's comparison before the false-discovery correction and the verdict."""

    base: SideSummary
    head: SideSummary
    log_ratio: float  # oriented (> 0 worse)
    ci_log: tuple[float, float]
    #: The significance of the change: the larger of the rank test's p on the samples and the
    #: noise model's p on the medians (a change must pass both).
    p_value: float
    min_p: float
    noisy_side: str | None  # "base" or "head" when that side cannot support a verdict

    @property
    def ratio(self) -> float:
        return exp_or_inf(self.log_ratio)

    @property
    def ci(self) -> tuple[float, float]:
        return (exp_or_inf(self.ci_log[0]), exp_or_inf(self.ci_log[1]))

    @property
    def reported_ratio(self) -> float | None:
        """The ratio a report shows: None where it would divide by a median of 0 (or overflow).

        0 -> x has no ratio, as an exact value of 0 has none (`decide_single_value`); x -> 0
        is a ratio of 0 (for lower-is-better metrics).
        """
        ratio = self.ratio
        if self.zero_median and ratio != 0.0:
            return None
        return ratio if math.isfinite(ratio) else None

    @property
    def reported_ci(self) -> tuple[float, float] | None:
        """The CI a report shows: None for a side with a median of 0, or bounds past a float."""
        ci = self.ci
        if self.zero_median or not all(math.isfinite(bound) for bound in ci):
            return None
        return ci

    @property
    def zero_median(self) -> bool:
        """Whether a side's median is 0, which has no logarithm (see `zero_estimate`)."""
        return self.base.median == 0 or self.head.median == 0


def without_round_factors(
    rounds: Sequence[np.ndarray], factors: Sequence[float] | None
) -> list[np.ndarray]:
    """Each round's samples divided by its own speed factor (log `factors`, one per round).

    None, or factors that do not line up with the rounds, leave the rounds as they are.
    """
    if factors is None or len(factors) != len(rounds):
        return list(rounds)
    return [r * exp_or_inf(-f) for r, f in zip(rounds, factors, strict=True)]


def zero_estimate(
    base_rounds: Sequence[np.ndarray], head_rounds: Sequence[np.ndarray], *, direction: str
) -> SampledEstimate:
    """The estimate when a side's median is 0 (a timer that did not tick): no log ratio.

    0 against 0 is no change (a log ratio of 0); 0 against a positive median is a log ratio of
    minus or plus infinity, and whether the sides differ at all is the rank test's to say.
    """
    base, head = np.concatenate(base_rounds), np.concatenate(head_rounds)
    base_median, head_median = side_median(base_rounds), side_median(head_rounds)
    log_ratio = 0.0
    if base_median != head_median:
        log_ratio = orient(math.inf if head_median > base_median else -math.inf, direction)
    return SampledEstimate(
        base=summarize_side(base_rounds),
        head=summarize_side(head_rounds),
        log_ratio=log_ratio,
        ci_log=(log_ratio, log_ratio),
        p_value=mann_whitney_p(base, head),
        min_p=min_two_sided_p(base.size, head.size),
        noisy_side=None,
    )


def estimate_sampled(
    base_rounds: Sequence[np.ndarray],
    head_rounds: Sequence[np.ndarray],
    *,
    direction: str,
    between_var: float,
    between_df: float,
    round_scale: float,
    settings: CompareSettings,
    rng: np.random.Generator,
    base_factors: Sequence[float] | None = None,
    head_factors: Sequence[float] | None = None,
    history_level: float | None = None,
    history_runs: int = 0,
) -> SampledEstimate:
    """Ratio of medians with a CI that carries both within-run and between-run uncertainty.

    The bootstrap resamples each side's samples (within-run uncertainty of the medians); each
    replicate also draws a run-to-run deviation of the sides' difference (Student-t with
    `between_df` degrees of freedom and variance `between_var`, log scale: the noise model's),
    because the medians of separate processes differ by more than their samples suggest.
    Each side's level is `side_level` of its rounds with `round_scale` (one round's run-to-run
    spread, log).

    `base_factors` / `head_factors` are each round's own speed factor within its side (log,
    shared by all benchmarks of that round): the statistics divide them out, as the noise model
    does; the summaries show the samples as measured.

    With `history_level` (log) of `history_runs` earlier base-branch runs, the baseline is the
    base side's level pooled with it, each job counting once (`noise_model.Baseline`).
    """
    if side_median(base_rounds) == 0 or side_median(head_rounds) == 0:
        return zero_estimate(base_rounds, head_rounds, direction=direction)
    shown_base, shown_head = base_rounds, head_rounds
    base_rounds = without_round_factors(base_rounds, base_factors)
    head_rounds = without_round_factors(head_rounds, head_factors)
    base = np.concatenate(base_rounds)
    head = np.concatenate(head_rounds)
    levels = []
    for rounds in (base_rounds, head_rounds):
        per_round = np.stack([bootstrap_medians(r, rng, settings.resamples) for r in rounds])
        logs = np.log(np.maximum(per_round, 1e-300))
        point_logs = np.log(np.maximum([float(np.median(r)) for r in rounds], 1e-300))
        levels.append((side_level(point_logs, round_scale), side_level(logs, round_scale)))
    (base_point, base_boot), (head_point, head_boot) = levels
    if history_level is not None and history_runs > 0:
        base_point = (base_point + history_runs * history_level) / (history_runs + 1)
        base_boot = (base_boot + history_runs * history_level) / (history_runs + 1)
    raw = head_boot - base_boot
    oriented = raw if direction == "lower" else -raw
    df = max(between_df, 1.0)
    draws = oriented + math.sqrt(max(between_var, 0.0)) * rng.standard_t(df, size=oriented.size)
    ci_low, ci_high = np.quantile(draws, [0.025, 0.975])
    point = orient(float(head_point - base_point), direction)
    # The model's test of "no change": the point against the run-to-run and within-run spread.
    spread = math.sqrt(max(between_var, 0.0) + float(np.var(oriented)))
    model_p = 1.0 if spread == 0 else float(2.0 * scipy_stats.t.sf(abs(point) / spread, df))
    noisy = None
    for name, samples in (("base", base), ("head", head)):
        halfwidth = median_halfwidth(samples)
        if halfwidth is not None and halfwidth > settings.noisy_halfwidth:
            noisy = name
            break
    return SampledEstimate(
        base=summarize_side(shown_base),
        head=summarize_side(shown_head),
        log_ratio=point,
        ci_log=(float(ci_low), float(ci_high)),
        p_value=max(mann_whitney_p(base, head), model_p),
        min_p=min_two_sided_p(base.size, head.size),
        noisy_side=noisy,
    )


def possible_regression(estimate: SampledEstimate, *, threshold: float) -> bool:
    """A change too big to call green that the evidence cannot yet call a regression.

    The point estimate is beyond `FLAG_TIMES` thresholds and some evidence of a change (p below
    `FLAG_P`, before the false-discovery correction) is there, yet the verdict is
    `inconclusive` (the CI reaches below the threshold, the false-discovery correction or a
    noisy side held it back). Only asked of inconclusive results.
    """
    return estimate.ratio - 1 > FLAG_TIMES * threshold and estimate.p_value < FLAG_P


def decide_sampled(
    estimate: SampledEstimate, *, q_value: float, threshold: float, alpha: float
) -> tuple[Verdict, str]:
    """The verdict words of docs/architecture.md §5 for a sampled metric, with a one-line reason."""
    if estimate.zero_median:
        return _decide_zero(estimate, q_value=q_value, alpha=alpha)
    low, high = estimate.ci
    change = f"{estimate.ratio - 1:+.1%} (95% CI {low - 1:+.1%} to {high - 1:+.1%})"
    if estimate.min_p >= alpha:
        return "inconclusive", (
            f"too few samples ({estimate.base.n} vs {estimate.head.n}) for the rank test to "
            f"ever reach alpha {alpha:g}"
        )
    if estimate.noisy_side is not None:
        return "inconclusive", (
            f"noisy: the {estimate.noisy_side} samples are too spread (or bimodal) to pin the "
            f"median down; {change}"
        )
    if q_value < alpha and low > 1 + threshold:
        return "regression", f"{change}, beyond the {threshold:.1%} threshold (q={q_value:.2g})"
    if q_value < alpha and high < 1 - threshold:
        return "improvement", f"{change}, beyond the {threshold:.1%} threshold (q={q_value:.2g})"
    if low >= 1 - threshold and high <= 1 + threshold:
        return "unchanged", f"{change}, within ±{threshold:.1%}"
    if q_value >= alpha:
        return "inconclusive", f"{change}; not significant (q={q_value:.2g})"
    return "inconclusive", f"{change}; the CI straddles the {threshold:.1%} threshold"


def _decide_zero(estimate: SampledEstimate, *, q_value: float, alpha: float) -> tuple[Verdict, str]:
    """A side's median is 0: equal medians are no change, else the rank test decides alone."""
    base, head = estimate.base.median, estimate.head.median
    if base == head:
        return "unchanged", "a median of 0 on both sides"
    change = f"median {base:.3g} -> {head:.3g}"
    if estimate.min_p >= alpha:
        return "inconclusive", (
            f"{change}; too few samples ({estimate.base.n} vs {estimate.head.n}) for the rank "
            f"test to ever reach alpha {alpha:g}"
        )
    if q_value >= alpha:
        return "inconclusive", f"{change}; not significant (q={q_value:.2g})"
    verdict: Verdict = "regression" if estimate.log_ratio > 0 else "improvement"
    origin = "from" if base == 0 else "to"
    return verdict, f"{change}: a change {origin} a median of 0 (q={q_value:.2g})"


def decide_exact(base: float, head: float, *, direction: str) -> tuple[Verdict, str]:
    """Exact counters compare exactly: any increase (for lower-is-better) is a regression."""
    if base == head:
        return "unchanged", f"exactly {_number(base)} on both sides"
    worse = head > base if direction == "lower" else head < base
    verdict: Verdict = "regression" if worse else "improvement"
    return verdict, f"changed from {_number(base)} to {_number(head)}"


def decide_single_value(
    base: float,
    head: float,
    *,
    direction: str,
    threshold: float,
    deterministic: bool,
    resolution: float = 0.0,
) -> tuple[Verdict, str]:
    """One measured value per side (peak memory): only the allocator's numbers are trusted.

    `resolution` is the smallest difference the measurement can tell apart (peak RSS moves in
    pages and per-thread batches); a difference below it is no change, whatever the ratio.
    """
    if base == head:
        return "unchanged", f"{_number(base)} on both sides"
    if abs(head - base) < resolution:
        return "unchanged", (
            f"{_number(base)} -> {_number(head)}, within the measurement's resolution"
        )
    if not deterministic and base == 0:
        return "inconclusive", f"0 -> {_number(head)} from a single noisy measurement per side"
    if base == 0:
        return ("regression" if direction == "lower" else "improvement"), f"0 -> {_number(head)}"
    ratio = head / base if direction == "lower" else base / head if head else math.inf
    if abs(ratio - 1) <= threshold:
        return "unchanged", f"{ratio - 1:+.1%}, within ±{threshold:.1%}"
    if not deterministic:
        return "inconclusive", f"{ratio - 1:+.1%} from a single noisy measurement per side"
    return ("regression" if ratio > 1 else "improvement"), f"{ratio - 1:+.1%} (single value)"


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.6g}"
