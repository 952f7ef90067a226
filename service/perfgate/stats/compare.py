"""Two-sample statistics for one benchmark metric: oriented ratio, bootstrap CI, rank test, verdict.

Ratios are oriented so that > 1 is worse whatever the metric's direction: head/base for
lower-is-better metrics (time), base/head for higher-is-better ones (throughput).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from perfgate.stats.model import SideSummary, Verdict

Z95 = 1.959963984540054
# A round at least this many times nearer the other side's median than its own sits with the
# other side when the sides alternated (see crossing_round); otherwise nearer at all is enough.
CROSSING_NEARER = 2.0


@dataclass(frozen=True)
class CompareSettings:
    alpha: float = 0.05
    threshold: float = 0.03
    resamples: int = 1000
    seed: int = 0
    # With history, a benchmark's threshold is at least this many run-to-run spreads.
    history_k: float = 2.0
    # A side whose median is known to no better than ± this (log) cannot support a verdict.
    noisy_halfwidth: float = 0.15


def orient(log_ratio_head_over_base: float, direction: str) -> float:
    """Turn log(head/base) into a log ratio where > 0 is worse."""
    return log_ratio_head_over_base if direction == "lower" else -log_ratio_head_over_base


def side_median(rounds: Sequence[np.ndarray]) -> float:
    """A side's median: the median of its rounds' medians (the plain median for one round).

    Not the median of the pooled samples: the harness samples a noisy round for longer, so
    pooling would let the one disturbed round of three outweigh the two clean ones. With three
    or more rounds an outlier round moves this by nothing at all.
    """
    return float(np.median([np.median(r) for r in rounds]))


def summarize_side(rounds: Sequence[np.ndarray]) -> SideSummary:
    pooled = np.concatenate(rounds)
    q1, q3 = np.quantile(pooled, [0.25, 0.75])
    return SideSummary(
        n=int(pooled.size), median=side_median(rounds), iqr=float(q3 - q1), rounds=len(rounds)
    )


def bootstrap_medians(samples: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Medians of `resamples` bootstrap resamples of `samples` (vectorised)."""
    index = rng.integers(0, samples.size, size=(resamples, samples.size))
    medians: np.ndarray = np.median(samples[index], axis=1)
    return medians


def bootstrap_side_medians(
    rounds: Sequence[np.ndarray], rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """`side_median` of `resamples` bootstrap replicates, each round resampled on its own."""
    per_round = np.stack([bootstrap_medians(r, rng, resamples) for r in rounds])
    medians: np.ndarray = np.median(per_round, axis=0)
    return medians


def median_halfwidth(samples: np.ndarray) -> float:
    """Half-width of the distribution-free 95% CI of log(median), from order statistics.

    How well a side pins its own median down: bimodal or very spread samples give a wide one.
    """
    n = samples.size
    if n < 6:
        return math.inf
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
    log_ratio: float  # oriented (> 0 worse), relative to the common factor when applied
    ci_log: tuple[float, float]
    p_value: float
    min_p: float
    noisy_side: str | None  # "base" or "head" when that side cannot support a verdict
    # A round of one side closer to the other side's median than to its own (rounds only).
    crossing_round: str | None = None

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    @property
    def ci(self) -> tuple[float, float]:
        return (math.exp(self.ci_log[0]), math.exp(self.ci_log[1]))


def without_round_factors(
    rounds: Sequence[np.ndarray], factors: Sequence[float] | None
) -> list[np.ndarray]:
    """Each round's samples divided by its own speed factor (log `factors`, one per round).

    None, or factors that do not line up with the rounds, leave the rounds as they are.
    """
    if factors is None or len(factors) != len(rounds):
        return list(rounds)
    return [r * math.exp(-f) for r, f in zip(rounds, factors, strict=True)]


def estimate_sampled(
    base_rounds: Sequence[np.ndarray],
    head_rounds: Sequence[np.ndarray],
    *,
    direction: str,
    between_sigma: float,
    between_df: float,
    common_log: float,
    settings: CompareSettings,
    rng: np.random.Generator,
    base_factors: Sequence[float] | None = None,
    head_factors: Sequence[float] | None = None,
    crossing_nearer: float = 1.0,
) -> SampledEstimate:
    """Ratio of medians with a CI that carries both within-run and between-run uncertainty.

    The bootstrap resamples each side's samples (within-run uncertainty of the medians); each
    replicate also draws a run-to-run deviation (Student-t with `between_df` degrees of freedom,
    scale `between_sigma` per round), because the medians of two separate processes differ by
    more than their samples suggest. The common factor (`common_log`, in the time orientation)
    is taken out of both the ratio and the rank test.

    `base_factors` / `head_factors` are each round's own speed factor within its side (log,
    shared by all benchmarks of that round): the statistics divide them out, as the noise model
    does, so a round the whole machine slowed does not move one benchmark's median; the
    summaries show the samples as measured.
    """
    shown_base, shown_head = base_rounds, head_rounds
    base_rounds = without_round_factors(base_rounds, base_factors)
    head_rounds = without_round_factors(head_rounds, head_factors)
    base = np.concatenate(base_rounds)
    head = np.concatenate(head_rounds)
    # In "time-like" orientation a common slowdown multiplies head times by exp(common_log).
    scale = math.exp(-common_log) if direction == "lower" else math.exp(common_log)
    head_adjusted = head * scale
    base_boot = bootstrap_side_medians(base_rounds, rng, settings.resamples)
    head_boot = bootstrap_side_medians(head_rounds, rng, settings.resamples) * scale
    raw = np.log(np.maximum(head_boot, 1e-300)) - np.log(np.maximum(base_boot, 1e-300))
    oriented = raw if direction == "lower" else -raw
    spread = between_sigma * math.sqrt(1.0 / len(base_rounds) + 1.0 / len(head_rounds))
    # Student-t, not normal: process-to-process deviations have heavy tails (bimodal processes,
    # a disturbed neighbour), and few rounds pin their spread down only loosely.
    draws = oriented + spread * rng.standard_t(max(between_df, 1.0), size=oriented.size)
    ci_low, ci_high = np.quantile(draws, [0.025, 0.975])
    point = orient(math.log(side_median(head_rounds) * scale / side_median(base_rounds)), direction)

    crossing = crossing_round(base_rounds, [r * scale for r in head_rounds], nearer=crossing_nearer)
    noisy = None
    for name, samples in (("base", base), ("head", head_adjusted)):
        if median_halfwidth(samples) > settings.noisy_halfwidth:
            noisy = name
            break
    return SampledEstimate(
        base=summarize_side(shown_base),
        head=summarize_side(shown_head),
        log_ratio=point,
        ci_log=(float(ci_low), float(ci_high)),
        p_value=mann_whitney_p(base, head_adjusted),
        min_p=min_two_sided_p(base.size, head.size),
        noisy_side=noisy,
        crossing_round=crossing,
    )


def crossing_round(
    base_rounds: Sequence[np.ndarray], head_rounds: Sequence[np.ndarray], *, nearer: float = 1.0
) -> str | None:
    """Which side ("base" or "head") has a round that sits with the other side.

    A process can land in one of a benchmark's speed modes (softmax here: 0.50 or 0.65 ms); with
    three rounds a side, base may get two slow ones and head none. When a round of one side
    already sits with the other side, the sides' difference is which mode each process drew,
    not the code, whatever a t-model of the round spread says. A round "sits with" the other
    side when it is `nearer` times as near the other side's median as its own. Rounds of a side
    run back to back can share an excursion, and a stray round is the only sign of it, so 1
    (past the midpoint) is the default; for alternating rounds `CROSSING_NEARER` (two thirds
    of the way across), since a round just past the midpoint is what ordinary round noise
    does to a real change. None with one round a side.
    """
    if len(base_rounds) < 2 or len(head_rounds) < 2:
        return None
    base_log = math.log(max(side_median(base_rounds), 1e-300))
    head_log = math.log(max(side_median(head_rounds), 1e-300))
    sides = (("base", base_rounds, base_log, head_log), ("head", head_rounds, head_log, base_log))
    for name, rounds, own, other in sides:
        for r in rounds:
            value = math.log(max(float(np.median(r)), 1e-300))
            if abs(value - other) * nearer < abs(value - own):
                return name
    return None


def decide_sampled(
    estimate: SampledEstimate, *, q_value: float, threshold: float, alpha: float
) -> tuple[Verdict, str]:
    """The verdict words of DESIGN §5 for a sampled metric, with a one-line reason."""
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
    decisive = q_value < alpha and (low > 1 + threshold or high < 1 - threshold)
    if decisive and estimate.crossing_round is not None:
        return "inconclusive", (
            f"noisy: a {estimate.crossing_round} round sits nearer the other side's median than "
            f"its own, so the rounds do not separate the sides; {change}"
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
