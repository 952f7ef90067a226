"""Run-to-run noise: how far a benchmark's median moves between processes, learnt from evidence.

Samples of one process do not predict another process: the same code measured in two processes
moves by more than within-run spread suggests. A comparison's difference of two sides' medians
(log scale) carries two kinds of run-to-run noise:

- each benchmark's own process noise (a variance per benchmark metric), and
- the machine's speed, shared by every benchmark of a process or a job (one variance a runner).

Each is a variance with degrees of freedom (`Evidence`), pooled from whatever evidence there is:
the rounds inside the comparison, the store's earlier base-branch runs, a calibration record of
the runner, the spread across the comparison's benchmarks. A benchmark's own estimate is shrunk
towards the runner's pooled one by the weight its data earns (empirical Bayes, as limma's
moderated t). The documented default (`DEFAULT_PROCESS`, `DEFAULT_MACHINE`) is only the fallback
for a comparison with (almost) no evidence of its own: it is never a floor.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from scipy import special, stats

from perfgate.stats.changepoints import detect_change_points
from perfgate.stats.loadings import measured_slopes, shrunk_loadings
from perfgate.stats.modes import speed_levels, within_offsets
from perfgate.stats.shared_movement import medians_without_each

MetricKey = tuple[str, str]

MIN_HISTORY_RUNS = 5
# Round factors and the cross-section need this many benchmarks to be told from one benchmark.
MIN_BENCHMARKS_FOR_COMMON = 5
MIN_BENCHMARKS_FOR_CROSS_SECTION = 3
# Qn's asymptotic efficiency at the normal: a Qn scale of n values is worth about this share of
# the n - 1 degrees of freedom a sample variance would have, reached slowly (`qn_variance`).
QN_EFFICIENCY = 0.82
# How fast the efficiency approaches it: n / (n + QN_EFFICIENCY_LAG) of it at n values.
QN_EFFICIENCY_LAG = 4.5


@dataclass(frozen=True)
class Evidence:
    """A variance estimate (log scale) with its degrees of freedom."""

    var: float
    df: float

    @property
    def sigma(self) -> float:
        return math.sqrt(max(self.var, 0.0))

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray) -> Evidence | None:
        """The sample variance of `values` around their mean (None below two values)."""
        array = np.asarray(values, dtype=np.float64)
        if array.size < 2:
            return None
        return cls(var=float(np.var(array, ddof=1)), df=float(array.size - 1))


def pool(items: Iterable[Evidence | None]) -> Evidence | None:
    """Several estimates of one variance combined by their degrees of freedom."""
    found = [e for e in items if e is not None and e.df > 0]
    if not found:
        return None
    df = sum(e.df for e in found)
    return Evidence(var=sum(e.df * e.var for e in found) / df, df=df)


# Fallbacks for a comparison with no evidence of its own (two benchmarks, one round a side, no
# history, no calibration). Weakly informative on purpose: a process-to-process sd of 4% and a
# job-to-job machine sd of 2%, each worth `DEFAULT_DF` degrees of freedom, typical of shared CPU
# runners (docs/comparator.md); any evidence of the comparison's own outweighs them as it grows,
# and from `DEFAULT_DF` degrees of freedom on they no longer count at all.
DEFAULT_DF = 3.0
DEFAULT_PROCESS = Evidence(var=0.04**2, df=DEFAULT_DF)
DEFAULT_MACHINE = Evidence(var=0.02**2, df=DEFAULT_DF)


def with_fallback(found: Evidence | None, default: Evidence) -> Evidence:
    """`found`, topped up by the default's degrees of freedom it lacks (none from DEFAULT_DF on)."""
    if found is None:
        return default
    missing = max(default.df - found.df, 0.0)
    if missing == 0.0:
        return found
    pooled = pool([found, Evidence(var=default.var, df=missing)])
    assert pooled is not None
    return pooled


def qn_scale(values: Sequence[float] | np.ndarray) -> float:
    """Rousseeuw and Croux's Qn: a robust standard deviation that also survives two clusters.

    The k-th smallest pairwise distance with k = C(h, 2), h = n // 2 + 1: unlike the MAD it
    stays near the spread inside a group when up to half the values moved together (a change
    that slowed most of a suite), and it is 82% efficient at the normal.
    """
    array = np.asarray(values, dtype=np.float64)
    n = array.size
    if n < 2:
        return 0.0
    distances = np.abs(array[:, None] - array[None, :])[np.triu_indices(n, k=1)]
    k = _qn_rank(n)
    return float(np.partition(distances, k - 1)[k - 1]) * _qn_factor(n)


def _qn_rank(n: int) -> int:
    """Which smallest pairwise distance (1-based) Qn of n values takes: C(h, 2), h = n // 2 + 1."""
    h = n // 2 + 1
    return h * (h - 1) // 2


def _qn_factor(n: int) -> float:
    """Qn's consistency at the normal, with Croux and Rousseeuw's small-sample factors."""
    small = {2: 0.399, 3: 0.994, 4: 0.512, 5: 0.844, 6: 0.611, 7: 0.857, 8: 0.669, 9: 0.872}
    if n in small:
        factor = small[n]
    elif n % 2:
        factor = n / (n + 1.4)
    else:
        factor = n / (n + 3.8)
    return 2.2219 * factor


def qn_scales_without_each(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """`qn_scale` of the values with each one left out in turn, exactly, in O(n² log n).

    The pairwise distances are sorted once. Leaving value l out removes its n - 1 distances; the
    wanted k-th smallest of the rest sits at sorted position k - 1 + q, where q is how many of
    l's own distances lie before it: the first q at which l's q-th own position, less q, passes
    k - 1 (that difference never falls as q grows).
    """
    array = np.asarray(values, dtype=np.float64)
    n = array.size
    if n < 3:
        return np.zeros(n)
    first, second = np.triu_indices(n, k=1)
    distances = np.abs(array[first] - array[second])
    order = np.argsort(distances, kind="stable")
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)
    # own[l]: the sorted positions of the n - 1 distances that involve value l.
    pair = np.zeros((n, n), dtype=np.int64)
    pair[first, second] = np.arange(first.size)
    pair[second, first] = np.arange(first.size)
    others = ~np.eye(n, dtype=bool)
    own = np.sort(position[pair[others].reshape(n, n - 1)], axis=1)
    k = _qn_rank(n - 1)
    before = np.sum(own - np.arange(n - 1) <= k - 1, axis=1)
    return np.asarray(distances[order][k - 1 + before]) * _qn_factor(n - 1)


def cross_section(values: Sequence[float] | np.ndarray) -> Evidence | None:
    """The typical benchmark's variance from how far this comparison's benchmarks disagree.

    Robust (Qn) so that a few changed benchmarks, or most of them moving together, do not
    inflate it (`qn_variance`).
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size < MIN_BENCHMARKS_FOR_CROSS_SECTION:
        return None
    return qn_variance(array)


def qn_variance(values: np.ndarray) -> Evidence:
    """Qn² as a variance estimate with its degrees of freedom, for a sample of any size.

    Qn's consistency factors make Qn itself unbiased at the normal, so Qn² runs high by about
    1/n; and at small n the estimate is worth much less than the asymptotic 82% of a sample
    variance's degrees of freedom (0.61 of n - 1 at 13 values, 0.74 at 40). Both are corrected
    here, as simulated at the normal: from 9 values on within a few percent
    (`tests/test_noise_model.py` checks them against a seeded simulation); below, both err on
    the cautious side but for a few percent (the variance within 7% at 4-8 values, 27% high at
    3; the df lower).
    """
    return _qn_evidence(qn_scale(values), values.size)


def _qn_evidence(scale: float, n: int) -> Evidence:
    """Qn of n values as a variance with its degrees of freedom (`qn_variance`)."""
    return Evidence(
        var=scale**2 / (1.0 + 1.0 / n),
        df=QN_EFFICIENCY * (n - 1) * n / (n + QN_EFFICIENCY_LAG),
    )


def cross_sections_without_each(values: Sequence[float] | np.ndarray) -> list[Evidence | None]:
    """`cross_section` of the values with each one left out in turn (None where too few remain).

    What the other benchmarks of a comparison say the typical one's variance is: a benchmark
    that moved far for a reason of its own does not widen the yardstick it is judged with.
    """
    array = np.asarray(values, dtype=np.float64)
    n = array.size
    if n - 1 < MIN_BENCHMARKS_FOR_CROSS_SECTION:
        return [None] * n
    return [_qn_evidence(float(q), n - 1) for q in qn_scales_without_each(array)]


_TINY_VARIANCE = 1e-18
_EXCESS_TOLERANCE = 1e-6


def excess_variance(values: np.ndarray, variances: np.ndarray) -> float:
    """The variance δ² that every value shares beyond its own: the smallest δ² ≥ 0 at which
    the values, each divided by √(its variance + δ²), spread (`qn_variance`) no more than a
    unit normal.

    Paule and Mandel's random-effects estimate, with Qn for the spread so that a few far-off
    values do not carry it. Each value keeps its own variance: values of unequal noise spread
    more across the set than the typical one's variance says, and that is not shared excess.
    With equal variances p it is the set's `qn_variance` less p, exactly.
    """
    values = np.asarray(values, dtype=np.float64)
    variances = np.maximum(np.asarray(variances, dtype=np.float64), _TINY_VARIANCE)

    def excess(shared: float) -> float:
        return qn_variance(values / np.sqrt(variances + shared)).var - 1.0

    if values.size < MIN_BENCHMARKS_FOR_CROSS_SECTION or excess(0.0) <= 0.0:
        return 0.0
    low, high = 0.0, max(qn_variance(values).var, float(np.max(variances)))
    # Qn of the scaled values falls as δ² grows, though not strictly everywhere (two values of
    # one sign and unequal variances can draw apart): widen until it is under 1, then bisect.
    for _ in range(60):
        if excess(high) <= 0.0:
            break
        low, high = high, 2.0 * high
    while high - low > _EXCESS_TOLERANCE * high:
        middle = 0.5 * (low + high)
        if excess(middle) > 0.0:
            low = middle
        else:
            high = middle
    return high


def excess_variances_without_each(
    values: np.ndarray, variances: np.ndarray, excess: float
) -> np.ndarray:
    """`excess_variance` of the values with each one left out in turn, from the whole set's
    `excess`: one Newton step from it, on the leave-one-out Qn of the values scaled at it.

    Exact where the variances are equal (Qn² of values scaled by one factor scales by its
    square); where they differ, the step is the first-order change, which spares a bisection
    per value (a comparison of 500 benchmarks would take minutes). At least 0.
    """
    values = np.asarray(values, dtype=np.float64)
    variances = np.maximum(np.asarray(variances, dtype=np.float64), _TINY_VARIANCE)
    scale = variances + excess
    left_out = cross_sections_without_each(values / np.sqrt(scale))
    typical = float(np.median(scale))
    return np.asarray(
        [
            max(excess + (found.var - 1.0) * typical, 0.0) if found is not None else excess
            for found in left_out
        ]
    )


def round_factors(matrix: np.ndarray) -> np.ndarray | None:
    """Each round's machine speed factor from a (benchmarks x rounds) matrix of log medians.

    A benchmark's rounds are centred on their mean, not their median, so that a round the whole
    machine ran c times slower gets a factor exactly log(c) apart from the others; the factor is
    the median over benchmarks. The factors sum to about zero: dividing them out moves no side.
    """
    deviations = _round_deviations(matrix)
    if deviations is None:
        return None
    factors: np.ndarray = np.median(deviations, axis=0)
    return factors


def round_machine(matrix: np.ndarray) -> Evidence | None:
    """The spread of `round_factors` of a (benchmarks x rounds) matrix as the machine's, less
    what the benchmarks' own noise puts in a median of them (`factor_spread`)."""
    deviations = _round_deviations(matrix)
    return None if deviations is None else factor_spread(deviations)


# Shuffles `median_noise` averages over: its figure's own error is then a few percent of it.
NOISE_SHUFFLES = 64


def factor_spread(deviations: np.ndarray) -> Evidence | None:
    """The machine's speed variance from a (benchmarks x rounds or runs) matrix of deviations
    whose column medians are the machine factors (NaN where a benchmark is missing).

    A factor is a median of M noisy benchmarks: even on a machine whose speed never moves it
    varies, by about pi/2 sigma^2 / M for normal noise. Every benchmark's own variance already
    holds that noise, so the factors' spread counted as the machine's counts it twice, which
    widened an alternated comparison's CIs by 5% on simulated Gaussian suites (docs/comparator.md,
    "The machine's spread"). What the noise alone gives (`median_noise`) is taken off, to no
    less than nothing; the df stay the factors'.
    """
    factors = np.nan_to_num(_nanmedian(deviations, axis=0))
    found = Evidence.of(factors)
    if found is None:
        return None
    phantom = median_noise(deviations - factors)
    return Evidence(var=max(found.var - phantom, 0.0), df=found.df)


def median_noise(residuals: np.ndarray) -> float:
    """The variance from column to column of the column medians of a (benchmarks x columns)
    matrix of residuals, were each benchmark's residuals in no shared order: each row shuffled
    on its own (NaN moving with it), averaged over `NOISE_SHUFFLES` fixed shuffles.

    Shuffled, the rows keep their own scales, tails and modes but share nothing, so this is
    what the benchmarks' noise alone puts in the medians, however heavy the tails (the normal
    pi/2 sigma^2 / M would take t3 noise's median for 2.5 times as wide as it is).
    """
    if residuals.ndim != 2 or residuals.shape[1] < 2:
        return 0.0
    rng = np.random.default_rng(0)
    stacked = np.broadcast_to(residuals, (NOISE_SHUFFLES, *residuals.shape))
    shuffled = rng.permuted(stacked, axis=2)
    medians = np.nan_to_num(_nanmedian(shuffled, axis=1))
    return float(np.mean(np.var(medians, axis=1, ddof=1)))


def _round_deviations(matrix: np.ndarray) -> np.ndarray | None:
    """Each benchmark's rounds less their mean (`round_factors`); None with too few benchmarks
    or rounds for a factor."""
    if matrix.ndim != 2 or matrix.shape[0] < MIN_BENCHMARKS_FOR_COMMON or matrix.shape[1] < 2:
        return None
    deviations: np.ndarray = matrix - matrix.mean(axis=1, keepdims=True)
    return deviations


def moderated(
    own: Mapping[MetricKey, Evidence], pooled_default: Evidence, *, set_apart: bool = False
) -> tuple[dict[MetricKey, Evidence], Evidence, frozenset[MetricKey]]:
    """Each metric's variance shrunk towards the pooled one by the weight its data earns.

    The prior (scale s0², worth d0 degrees of freedom) is estimated from how much the metrics'
    own estimates disagree beyond what their degrees of freedom explain (Smyth's moment method
    on log variances, as limma does): metrics that all share one scale pool fully, metrics with
    truly different scales keep most of their own. With `set_apart`, a few metrics far noisier
    than the rest (`scale_apart`: process modes, bursts) keep their own estimate and the others
    pool by how much *they* disagree; otherwise the few alone read as scales that truly differ
    and cost every other metric its pooling. Returns the moderated estimates (each with df =
    own df + d0), the prior fitted to all of them (what a metric without evidence of its own
    takes) and the metrics set apart.
    """
    usable = [e for e in own.values() if e.df > 0 and e.var > 0]
    if len(usable) < 3:
        prior = pool(usable) or pooled_default
        prior = Evidence(var=prior.var, df=min(prior.df, pooled_default.df))
    else:
        prior = _smyth_prior(usable)
    split = scale_apart(own) if set_apart else None
    shared, apart = split or (prior, frozenset())
    out = {}
    for key, estimate in own.items():
        if key in apart:
            out[key] = estimate
            continue
        df = estimate.df + shared.df
        out[key] = Evidence(var=(estimate.df * estimate.var + shared.df * shared.var) / df, df=df)
    return out, prior, apart


#: A metric is taken to have a scale of its own when its variance is beyond the upper
#: 1 - APART_LEVEL / M quantile of what the others' shared scale predicts (Bonferroni over the
#: M metrics): where all share one scale, at most one comparison in twenty sets a metric apart
#: (1.5-3% of them at 13 metrics of 2-20 degrees of freedom each, simulated), and that metric
#: then keeps its own estimate, wider than the pooled one: it costs the metric its pooling,
#: never a false alarm.
APART_LEVEL = 0.05


def scale_apart(
    own: Mapping[MetricKey, Evidence],
) -> tuple[Evidence, frozenset[MetricKey]] | None:
    """The prior the metrics share once the few far noisier than the rest are set apart.

    Starts as if every metric shared the median variance with full weight, so that far-off
    metrics cannot hide each other by widening the prior they are tested against; then sets
    apart each metric whose variance is beyond that prior's F quantile (its own df against the
    prior's) and fits the prior again to the rest, until the set stops changing. Only an upper
    tail sets a metric apart: a quiet metric pulled up to the shared scale is conservative.
    None where nothing is set apart, or where the metrics set apart would be half or more of
    them (then the scales truly differ and the ordinary prior already says so).
    """
    keys = [k for k, e in own.items() if e.df > 0 and e.var > 0]
    if len(keys) < 3:
        return None
    quantile = 1 - APART_LEVEL / len(keys)
    prior = Evidence(var=float(np.median([own[k].var for k in keys])), df=MAX_PRIOR_DF)
    apart: set[MetricKey] = set()
    for _ in range(len(keys)):
        found = {
            k for k in keys if own[k].var / prior.var > stats.f.ppf(quantile, own[k].df, prior.df)
        }
        if not found or 2 * len(found) >= len(keys) or len(keys) - len(found) < 3:
            return None
        if found == apart:
            break
        apart = found
        prior = _smyth_prior([own[k] for k in keys if k not in apart])
    return prior, frozenset(apart)


MAX_PRIOR_DF = 100.0


def _smyth_prior(estimates: Sequence[Evidence]) -> Evidence:
    """The scaled inverse-chi² prior (s0², d0) that explains a set of variance estimates."""
    dfs = np.asarray([e.df for e in estimates])
    logs = np.log([e.var for e in estimates])
    # log s² = log σ² + (digamma(d/2) - log(d/2)) + noise with variance trigamma(d/2).
    centred = logs - special.digamma(dfs / 2) + np.log(dfs / 2)
    excess = float(np.var(centred, ddof=1) - np.mean(special.polygamma(1, dfs / 2)))
    # No more weight than the estimates behind the prior hold between them.
    cap = min(MAX_PRIOR_DF, float(np.sum(dfs)))
    d0 = cap if excess <= 0 else min(2.0 * _trigamma_inverse(excess), cap)
    mean = float(np.mean(centred))
    s0_log = mean + special.digamma(d0 / 2) - math.log(d0 / 2)
    return Evidence(var=math.exp(s0_log), df=d0)


def _trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (Newton's method on 1/trigamma, as limma's trigammaInverse)."""
    if y > 1e7:
        return 1.0 / math.sqrt(y)
    if y < 1e-6:
        return 1.0 / y
    x = 0.5 + 1.0 / y
    for _ in range(50):
        tri = float(special.polygamma(1, x))
        step = tri * (1 - tri / y) / float(special.polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


@dataclass(frozen=True)
class PastRun:
    """One earlier run of the base branch: its commit and each sampled metric's median."""

    commit: str
    medians: Mapping[MetricKey, float]
    #: When it started; None where unknown (the wander is then measured one run ahead).
    started_at: datetime | None = None
    #: How many rounds (separate processes) its medians pool: a job's `perfgate run --rounds N`.
    rounds: int = 1


@dataclass(frozen=True)
class Segment:
    """A metric's current level in history: the runs after its last change point (or all).

    A step in history (a change that landed on the base branch) is not noise: the spread is
    measured inside segments, and the baseline is the current segment's level.
    """

    #: The raw log medians of the segment's runs, oldest first (the machine's speed included).
    raw: np.ndarray
    #: The same after each run's machine factor.
    residuals: np.ndarray
    #: The commit of the segment's first run when a change point starts it, else None.
    since: str | None

    @property
    def runs(self) -> int:
        return int(self.raw.size)

    def describe(self) -> str:
        if self.since is None:
            return f"history of {self.runs} runs"
        return f"history: last {self.runs} runs, after the change at {self.since[:7]}"


@dataclass(frozen=True)
class History:
    """What earlier runs of the base branch say about noise, and where each metric's level is."""

    #: Per metric: the spread of a run's log median after its machine factor, inside segments.
    metrics: dict[MetricKey, Evidence]
    #: Per metric: each segment's run medians after their machine factor, oldest first.
    segments: dict[MetricKey, list[np.ndarray]]
    #: Per metric: the current segment (the level the base branch is at now).
    current: dict[MetricKey, Segment]
    runs: int
    #: The spread of the runs' machine factors (None with too little history).
    machine: Evidence | None
    #: The runner's tail weight (`tail_df`) in these runs, inside each benchmark's speed levels
    #: (`inside_levels`); None with too few of them.
    tail: float | None = None
    #: Each metric's own tail weight, shrunk towards the runner's (`tails_from`); a metric with
    #: speed levels keeps the weight of its values as they are, its jumps included.
    tails: dict[MetricKey, float] = field(default_factory=dict)
    #: How much further a new run, as far ahead of history as the compared run is, sits from
    #: the level of the runs before it than their spread predicts (variance, log), inside the
    #: speed levels: the benchmarks' slow wander, with df (`wander`).
    wander: Evidence | None = None
    #: Each timed metric's loading on the runs' machine factors (`loadings.shrunk_loadings`):
    #: how much of the machine's speed it follows, 1 for the typical benchmark.
    loadings: dict[MetricKey, float] = field(default_factory=dict)
    #: Each timed metric's speed levels in its current segment, as log offsets from the fastest
    #: (`modes.speed_levels`), where it shows more than one.
    levels: dict[MetricKey, tuple[float, ...]] = field(default_factory=dict)
    #: Each run's machine factor (log, oldest first; zeros with too few benchmarks to read it):
    #: what `Segment.residuals` took out of `Segment.raw`, times each metric's loading.
    factors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: The rounds a typical run pooled (the median run's): what the spreads and tail weights
    #: above were measured on.
    rounds: int = 1

    @classmethod
    def empty(cls, runs: int = 0) -> History:
        return cls(metrics={}, segments={}, current={}, runs=runs, machine=None)


def _nanmedian(values: np.ndarray, axis: int) -> np.ndarray:
    """np.nanmedian without its warning for a slice that is all NaN (a metric or run whose
    medians were all 0, which has no log): such a slice's median is NaN, as numpy gives it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        median: np.ndarray = np.nanmedian(values, axis=axis)
    return median


def history_noise(runs: Sequence[PastRun], *, compared_at: datetime | None = None) -> History:
    """Per-metric noise and current level from the medians of earlier base-branch runs.

    `compared_at` is when the compared (head) run started: the wander is measured that far
    ahead of the runs it is measured on (`wander`).

    Each run's machine factor (the median over its timed benchmarks of how far they sat from
    their own level: `_machine_deviations`) is taken out before a benchmark's spread is measured,
    in the proportion the benchmark follows it (its loading, `loadings.shrunk_loadings`, measured
    against the other benchmarks' factors inside its segments), and is itself the evidence for
    how far whole runs move. Each metric's residuals are then cut at its change points
    (`segments`): a step is a change of level, not spread.
    """
    if len(runs) < MIN_HISTORY_RUNS:
        return History.empty(len(runs))
    keys = sorted({key for run in runs for key in run.medians})
    logs = np.full((len(runs), len(keys)), np.nan)
    for i, run in enumerate(runs):
        for j, key in enumerate(keys):
            value = run.medians.get(key)
            if value is not None and value > 0:
                logs[i, j] = math.log(value)
    timed = [j for j, key in enumerate(keys) if key[1] == "time"]
    deviations = _machine_deviations(logs[:, timed])
    per_run = _factors(deviations, len(runs))
    column = {j: c for c, j in enumerate(timed)}
    starts: dict[MetricKey, int] = {}
    fits: dict[MetricKey, tuple[np.ndarray, np.ndarray]] = {}
    # Against the factor of the other benchmarks: a benchmark's own noise in the median it is
    # regressed on would read as following the machine.
    others = (
        np.nan_to_num(medians_without_each(deviations.T, ~np.isnan(deviations.T), least=1))
        if deviations is not None
        else None
    )
    for j, key in enumerate(keys):
        sign = -1.0 if key[1] == "throughput" else 1.0
        present = np.flatnonzero(~np.isnan(logs[:, j]))
        if present.size < MIN_HISTORY_RUNS:
            continue
        starts[key] = current_segment_start(logs[present, j] - sign * per_run[present])
        if others is not None and key[1] == "time":
            factor = others[column[j]]
            fits[key] = _within_segments(logs[present, j], factor[present], starts[key])
    loadings = shrunk_loadings(measured_slopes(fits))
    metrics: dict[MetricKey, Evidence] = {}
    segments: dict[MetricKey, list[np.ndarray]] = {}
    tail_parts: dict[MetricKey, list[np.ndarray]] = {}
    current: dict[MetricKey, Segment] = {}
    commits = [run.commit for run in runs]
    for j, key in enumerate(keys):
        if key not in starts:
            continue
        sign = -1.0 if key[1] == "throughput" else 1.0
        present = np.flatnonzero(~np.isnan(logs[:, j]))
        raw = logs[present, j]
        # Throughput is items over the time metric's blocks: it follows the machine as they do.
        loading = loadings.get((key[0], "time"), 1.0) if key[1] in ("time", "throughput") else 1.0
        residuals = raw - sign * loading * per_run[present]
        start = starts[key]
        cuts = [0, *([start] if start else []), residuals.size]
        parts = [residuals[a:b] for a, b in itertools.pairwise(cuts)]
        segments[key] = parts
        if others is not None and key[1] == "time":
            # Tails against the other benchmarks' factor: a run's median over benchmarks is,
            # for a benchmark that sat in the middle of them, its own value, so its residual
            # there is exactly nothing; each benchmark has such a run in every 13 or so, and a t
            # with a free scale reads that peak as tails (24 normal runs of 13 benchmarks, 60
            # suites: 28% of the weights at 10 df or heavier; against the others' factor 12%, on
            # the values as drawn 11%).
            free = raw - loading * others[column[j]][present]
            tail_parts[key] = [free[a:b] for a, b in itertools.pairwise(cuts)]
        current[key] = Segment(
            raw=raw[start:],
            residuals=residuals[start:],
            since=commits[int(present[start])] if start else None,
        )
        found = pool(Evidence.of(part) for part in parts)
        if found is not None:
            metrics[key] = found
    machine = factor_spread(deviations.T) if deviations is not None else None
    timed_segments = {key: parts for key, parts in segments.items() if key[1] == "time"}
    # Tails and wander are measured inside each benchmark's speed levels: a process mode's jumps
    # between levels counted as tails set the runner's weight near 1.5 df, and every steady
    # benchmark's +10% read "not significant" (docs/comparator.md, "Tails inside speed levels").
    levels = {
        key: offsets
        for key, parts in timed_segments.items()
        if len(offsets := level_offsets(parts[-1])) > 1
    }
    inside = {
        key: inside_levels(parts, levels[key]) if key in levels else parts
        for key, parts in timed_segments.items()
    }
    tail: float | None = None
    tails: dict[MetricKey, float] = {}
    tailed = {key: tail_parts.get(key, parts) for key, parts in timed_segments.items()}
    tables = tail_tables(
        {
            key: inside_levels(parts, levels[key]) if key in levels else parts
            for key, parts in tailed.items()
        }
    )
    if tables is not None:
        # A benchmark with levels keeps the tail weight of its values as they are, shrunk
        # towards the runner's raw one: with a few runs a level its tails cannot be measured
        # inside them, and on recorded runners a process lands further from a level than a fit
        # inside a few levels says.
        raw = tail_tables({key: tailed[key] for key in levels}, least=0) or {}
        counts = tail_values(timed_segments)
        tail, tails = tails_from(tables, counts)
        _, as_recorded = tails_from({**tables, **raw}, counts)
        tails.update({key: as_recorded[key] for key in raw})
    return History(
        metrics=metrics,
        segments=segments,
        current=current,
        runs=len(runs),
        machine=machine,
        tail=tail,
        tails=tails,
        wander=wander(inside, lead=_lead(runs, compared_at)),
        loadings=loadings,
        levels=levels,
        factors=per_run,
        rounds=max(1, round(float(np.median([run.rounds for run in runs])))),
    )


def round_factors_without_each(matrix: np.ndarray) -> np.ndarray | None:
    """Each benchmark's rounds' machine factors from the other benchmarks alone, from the
    (benchmarks x rounds) matrix `round_factors` takes; None where it gives none.

    Tails are measured against these: `round_factors`' median is, in a round where a benchmark
    sat in the middle of the suite, that benchmark's own deviation, and its residual there is
    exactly nothing, a peak a t with a free scale reads as tails (`history_noise`).
    """
    deviations = _round_deviations(matrix)
    if deviations is None:
        return None
    return np.asarray(medians_without_each(deviations, ~np.isnan(deviations), least=1))


def level_offsets(values: np.ndarray) -> tuple[float, ...]:
    """The speed levels of `values` (`modes.speed_levels`) as log offsets from the fastest."""
    levels = speed_levels(values)
    return tuple(level - levels[0] for level in levels) if levels else ()


def inside_levels(parts: Sequence[np.ndarray], offsets: Sequence[float]) -> list[np.ndarray]:
    """A metric's segments with its process modes taken out: each value's deviation from the
    nearest of its speed levels (`offsets` from the fastest), the levels placed in each segment
    where they fit it best (`modes.within_offsets`)."""
    return [within_offsets(part, offsets) if part.size else part for part in parts]


def _within_segments(
    raw: np.ndarray, factors: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """A benchmark's history and the runs' machine factors, each segment centred on its own
    median: its loading is measured inside its segments, so that a step is not read as
    following the machine."""
    parts = [(0, start), (start, raw.size)] if start else [(0, raw.size)]
    values = np.concatenate([raw[a:b] - np.median(raw[a:b]) for a, b in parts])
    movement = np.concatenate([factors[a:b] - np.median(factors[a:b]) for a, b in parts])
    return values, movement


def _machine_deviations(logs: np.ndarray) -> np.ndarray | None:
    """How far each timed benchmark sat from its own level in each run, from a (runs x timed
    benchmarks) matrix of log medians (None with too few benchmarks); a run's machine factor is
    the median of its row.

    A benchmark's level is first its median over all the runs. Where some benchmarks have a
    step (their current segment starts later: `current_segment_start`, on what the first
    factors leave), the deviations are taken again against each benchmark's level in its own
    segments: benchmarks that stepped at different runs otherwise move the median of the
    deviations from run to run, which reads as the machine (a +-30% step in each benchmark's
    history, at its own run: a machine spread of 11% where there was none, and a comparison
    that then could not see 60% of its suite 25% slower). A shift most benchmarks share at one
    run stays in the factors: the first factors take it out before the steps are looked for.
    """
    if logs.shape[1] < MIN_BENCHMARKS_FOR_COMMON:
        return None
    deviations: np.ndarray = logs - _nanmedian(logs, axis=0)
    per_run: np.ndarray = np.nan_to_num(_nanmedian(deviations, axis=1))
    for j in range(logs.shape[1]):
        present = np.flatnonzero(~np.isnan(logs[:, j]))
        if present.size < MIN_HISTORY_RUNS:
            continue
        start = current_segment_start(logs[present, j] - per_run[present])
        if start:
            for part in (present[:start], present[start:]):
                deviations[part, j] = logs[part, j] - np.median(logs[part, j])
    return deviations


def _factors(deviations: np.ndarray | None, runs: int) -> np.ndarray:
    """Each run's machine factor: the median of its row of deviations (zeros without them)."""
    if deviations is None:
        return np.zeros(runs)
    factors: np.ndarray = np.nan_to_num(_nanmedian(deviations, axis=1))
    return factors


def wander(groups: Mapping[MetricKey, Sequence[np.ndarray]], *, lead: int = 1) -> Evidence | None:
    """The runner's excess variance of a new run, `lead` runs after a segment's last, around
    the segment's level: how much further it sits from the mean of the segment's runs than their
    spread predicts (variance, log), with df.

    A baseline that averages a segment's runs is only as good as the level it averages still
    holding: benchmarks that wander slowly (thermal state, neighbours, a drifting clock) sit
    further from their past average than independent runs would, and the further the later the
    run. The wander is read off the runner's variogram v(k), half the typical square difference
    of two runs k apart inside a segment, pooled over every segment of every metric with the
    differences beyond four robust spreads screened out (`_robust_semivariance`), to which
    v(k) = a + b (1 - ρ^k) is fitted (`_fit_variogram`) over the lags that hold at least half as
    many pairs as lag 1. For a baseline of n runs and a run h = n - 1 + lead runs on,

        E[(x_h - mean)²] = 2/n Σ_i v(h - i) - S/n²,    E[s²] = S / (n (n - 1)),

    with S = Σ_i Σ_j v(|i - j|); the wander is the first less (1 + 1/n) times the second: 0 for
    runs that are independent (b = 0), at any lead. Every lag of every segment counts, so a far
    lead does not rest on the few runs that reach it. n is the typical current segment's length;
    df one per run after the first `MIN_HISTORY_RUNS` of a segment.
    """
    differences: dict[int, list[np.ndarray]] = {}
    runs, lengths = 0, []
    for parts in groups.values():
        for part in parts:
            if part.size <= MIN_HISTORY_RUNS:
                continue
            runs += part.size - MIN_HISTORY_RUNS
            for k in range(1, part.size):
                differences.setdefault(k, []).append(part[k:] - part[: part.size - k])
        if parts and parts[-1].size > MIN_HISTORY_RUNS:
            lengths.append(parts[-1].size)
    if not runs or not lengths:
        return None
    counts = {k: sum(d.size for d in found) for k, found in differences.items()}
    lags = np.arange(1, max(k for k in counts if 2 * counts[k] >= counts[1]) + 1)
    v = _fit_variogram(
        lags,
        np.asarray([_robust_semivariance(np.concatenate(differences[int(k)])) for k in lags]),
        np.asarray([counts[int(k)] for k in lags], dtype=np.float64),
    )
    n = int(np.median(lengths))
    index = np.arange(n)
    total = float(np.sum(v(np.abs(index[:, None] - index[None, :]))))
    gap = 2.0 / n * float(np.sum(v(n - 1 + max(lead, 1) - index))) - total / n**2
    spread = total / (n * (n - 1))
    return Evidence(var=max(gap - spread * (1 + 1 / n), 0.0), df=float(runs))


# The correlations between runs one apart that the variogram's fit tries (`_fit_variogram`).
_RHO_GRID = np.linspace(0.0, 0.99, 100)


def _fit_variogram(
    lags: np.ndarray, values: np.ndarray, weights: np.ndarray
) -> Callable[[np.ndarray], np.ndarray]:
    """v(k) = a + b (1 - ρ^k) with a, b ≥ 0 (a nugget and an AR(1) sill: how the runs of a
    runner that wanders drift apart with time), fitted by weighted least squares over ρ's grid;
    v(0) = 0. One lag alone is a flat v."""
    flat_level = max(float(np.average(values, weights=weights)), 0.0)
    best = (math.inf, flat_level, 0.0, 0.0)  # error, a, b, ρ
    for rho in _RHO_GRID if lags.size > 1 else ():
        shape = 1.0 - rho**lags
        design = np.column_stack([np.ones_like(shape), shape]) * np.sqrt(weights)[:, None]
        target = values * np.sqrt(weights)
        coef, *_ = np.linalg.lstsq(design, target, rcond=None)
        a, b = float(coef[0]), float(coef[1])
        if a < 0 or b < 0:
            # On the boundary: the better of one term alone.
            b1 = max(float(np.sum(weights * values * shape) / np.sum(weights * shape**2)), 0.0)
            flat = float(np.sum(weights * (values - flat_level) ** 2))
            sill = float(np.sum(weights * (values - b1 * shape) ** 2))
            a, b = (flat_level, 0.0) if flat <= sill else (0.0, b1)
        error = float(np.sum(weights * (values - a - b * shape) ** 2))
        if error < best[0]:
            best = (error, a, b, float(rho))
    _, a, b, rho = best

    def v(k: np.ndarray) -> np.ndarray:
        return np.where(k == 0, 0.0, a + b * (1.0 - rho ** np.maximum(k, 0)))

    return v


# Differences further than this many robust spreads from 0 are screened out of the variogram.
SCREEN_SPREADS = 4.0
_CHI2_1_MEDIAN = 0.454936423119572  # median of a squared standard normal
_SCREEN_KEPT = math.erf(SCREEN_SPREADS / math.sqrt(2.0))
# E[z² | |z| < c] for a standard normal z: what the screen leaves of a normal variance.
_SCREEN_LEFT = 1.0 - 2.0 * SCREEN_SPREADS * math.exp(-(SCREEN_SPREADS**2) / 2.0) / (
    math.sqrt(2.0 * math.pi) * _SCREEN_KEPT
)


def _robust_semivariance(differences: np.ndarray) -> float:
    """Half the mean square of `differences`, screened at `SCREEN_SPREADS` robust spreads.

    The spread is the median square's (consistent at the normal), so a far difference cannot
    widen its own screen; what passes is averaged as squares and rescaled by what the screen
    takes from a normal, so the estimate is unbiased for normal differences and nearly as
    efficient as their mean square. What it screens is what the variogram must not read as
    wander: a step the detector placed a run off leaves its ±30% at every lag past it, and a run
    that landed between a benchmark's speed levels sits far from both. Cressie and Hawkins'
    |d|^(1/2) estimate, used before, counted each such difference by its square root
    (docs/comparator.md, "The baseline").
    """
    squares = differences**2
    if not squares.size:
        return 0.0
    cut = SCREEN_SPREADS**2 * float(np.median(squares)) / _CHI2_1_MEDIAN
    kept = squares[squares <= cut]
    return 0.5 * float(np.mean(kept)) / _SCREEN_LEFT


def _lead(runs: Sequence[PastRun], compared_at: datetime | None) -> int:
    """How many runs after history's last the compared run started, in history's typical
    spacing between runs (1 unless every start is known, oldest first)."""
    starts = [run.started_at for run in runs if run.started_at is not None]
    if compared_at is None or len(starts) < 2 or len(starts) < len(runs):
        return 1
    steps = np.diff([(start - starts[0]).total_seconds() for start in starts])
    spacing = float(np.median(steps))
    if np.any(steps < 0) or spacing <= 0:
        return 1
    return max(1, round((compared_at - starts[-1]).total_seconds() / spacing))


# A step fewer than MIN_HISTORY_RUNS runs ago is too short for the change-point detector; the
# last few runs all this many spreads off the level before them, on one side, are one.
RECENT_STEP_SPREADS = 3.0
# The fewest runs since a step that `_recent_step` reads as one: a single run off the level is
# an outlier as much as a step.
MIN_STEP_RUNS = 2


def _recent_step(residuals: np.ndarray) -> int:
    """Where a step of the last 2 to MIN_HISTORY_RUNS - 1 runs starts, or 0 without one.

    Too short a segment to be a level, but its runs are not noise of the level before either:
    left in, they would widen every CI exactly while a team watches the benchmark.
    """
    for k in range(MIN_HISTORY_RUNS - 1, MIN_STEP_RUNS - 1, -1):
        before, after = residuals[:-k], residuals[-k:]
        if before.size < MIN_HISTORY_RUNS:
            continue
        level, spread = float(np.median(before)), qn_scale(before)
        gaps = after - level
        far = bool(np.all(np.abs(gaps) > RECENT_STEP_SPREADS * spread))
        if far and np.unique(np.sign(gaps)).size == 1 and not _known_level(before, after):
            return int(residuals.size - k)
    return 0


def _known_level(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether the runs `after` sit in a speed level that runs `before` already visited."""
    values = np.concatenate([before, after])
    levels = np.asarray(speed_levels(values))
    if levels.size < 2:
        return False
    nearest = np.argmin(np.abs(values[:, None] - levels[None, :]), axis=1)
    return bool(np.isin(nearest[before.size :], nearest[: before.size]).all())


def current_segment_start(residuals: np.ndarray) -> int:
    """Where a metric's current level starts in its history (0: no step in it).

    The last change point (`detect_change_points`), unless what it cut off is a process mode
    rather than a step: when the runs after it still land in two of the history's speed levels
    (`_step_at`), the levels alternate and the whole history is one segment. Then a step in the
    last few runs of that segment (`_recent_step`), too recent for the detector's minimum
    segment.
    """
    if residuals.size < 2 * MIN_HISTORY_RUNS:
        return 0
    # Every segment, as this rule was measured: dropping a burst would move the current level's
    # start back over the burst's runs.
    points = detect_change_points(residuals, min_size=MIN_HISTORY_RUNS, max_burst=0)
    start = _step_at(residuals, points[-1]) if points else 0
    # The detector's last cut can land a run or two early on a step at the very end; the level
    # before it (from the change before) says where the step really starts.
    previous = points[-2] if start and len(points) > 1 else 0
    recent = _recent_step(residuals[previous:])
    if not recent or previous + recent <= start:
        return start
    candidate = previous + recent
    # Later than the detector's cut only if the runs in between are the old level's.
    old = float(np.median(residuals[previous:candidate]))
    new = float(np.median(residuals[candidate:]))
    between = residuals[start:candidate]
    return candidate if np.all(np.abs(between - old) < np.abs(between - new)) else start


def _step_at(residuals: np.ndarray, start: int) -> int:
    """`start` if the change there is a step, 0 if it is the edge of a process mode.

    A mode: the runs after it still land in two of the history's speed levels, the other one
    at least twice or in a level that was not the main one before the change. One run after a
    step in the level the runs left is a stray (a burst that landed there, or a cut the
    detector placed a run early), as a single far-off process is not a level of its own
    (`modes.speed_levels`): taken for a mode, it kept a ±30% step in the baseline's level, and
    a `bursts` runner with such steps raised 10 false alarms in 1,300 results from it alone.
    """
    levels = np.asarray(speed_levels(residuals))
    if levels.size < 2 or start <= 0:
        return start
    nearest = np.argmin(np.abs(residuals[:, None] - levels[None, :]), axis=1)
    before = np.bincount(nearest[:start], minlength=levels.size)
    after = np.bincount(nearest[start:], minlength=levels.size)
    main_before, main_after = int(np.argmax(before)), int(np.argmax(after))
    for level, count in enumerate(after):
        if level == main_after or not count:
            continue
        if count >= 2 or level != main_before:
            return 0
    return start


# Candidate tail weights for `tail_df`: from Cauchy-like to normal.
_TAIL_GRID = (1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 60.0)
# The fewest deviations a tail estimate is made from.
MIN_TAIL_VALUES = 40
# The fewest a metric's own tail weight is made from; with fewer it takes the typical metric's
# (`tails_from`). On normal values, 13 metrics' own weights came out at 3 df or heavier for 7%
# of metrics of 8 values, 4% of 12, 1.4% of 16 and 0.3% of 24 (60 suites each).
MIN_OWN_TAIL_VALUES = 16
# Below this many degrees of freedom a t's variance says little of its scale (infinite at 2): a
# weight shared by benchmarks is taken no heavier (`noise_model.shared_tail`), and a variance is
# turned into a t's scale as at this weight at most (`noise_model.tail_factor`).
MIN_SHARED_TAIL = 3.0
# The shortest series (a segment of history, a benchmark's calibration rounds) a tail is fitted on.
MIN_TAIL_SERIES = 6


def tail_df(groups: Sequence[np.ndarray]) -> float | None:
    """The Student-t degrees of freedom that best describe all of `groups` at once: one weight
    for the runner, what history keeps as `History.tail`.

    Each group holds one benchmark's values (its runs' medians in history, its calibration
    rounds); each gets its own location and scale, and the degrees of freedom are chosen on a
    grid by profile likelihood. Fitted to all benchmarks at once it is set by the heaviest: a
    benchmark whose own values are too few takes the typical one's instead (`typical_tail`,
    `tails_from`). None with fewer than `MIN_TAIL_VALUES` values in groups of at least 6.
    """
    tables = tail_tables({("", str(i)): [g] for i, g in enumerate(groups)})
    return None if tables is None else _own_tails(tables)[0]


def tail_values(groups: Mapping[MetricKey, Sequence[np.ndarray]]) -> dict[MetricKey, int]:
    """How many values each metric's tail weight rests on (its series of `MIN_TAIL_SERIES` or
    more)."""
    return {
        key: sum(len(g) for g in parts if len(g) >= MIN_TAIL_SERIES)
        for key, parts in groups.items()
    }


def tail_tables(
    groups: Mapping[MetricKey, Sequence[np.ndarray]], least: int = MIN_TAIL_VALUES
) -> dict[MetricKey, np.ndarray] | None:
    """Each metric's log-likelihood of its segments of at least 6 values under a t of each
    `_TAIL_GRID` df (free location and scale per segment); None below `least` values."""
    usable = {
        key: [np.asarray(g, dtype=np.float64) for g in parts if len(g) >= MIN_TAIL_SERIES]
        for key, parts in groups.items()
    }
    usable = {key: parts for key, parts in usable.items() if parts}
    if sum(g.size for parts in usable.values() for g in parts) < least:
        return None
    return {
        key: np.asarray([sum(_t_loglik(g, nu) for g in parts) for nu in _TAIL_GRID])
        for key, parts in usable.items()
    }


def tails_from(
    tables: Mapping[MetricKey, np.ndarray], values: Mapping[MetricKey, int]
) -> tuple[float, dict[MetricKey, float]]:
    """The runner's tail weight from `tail_tables` and each metric's, shrunk towards it (the
    runner's average table as a prior, worth one metric's data); a metric of fewer than
    `MIN_OWN_TAIL_VALUES` `values` takes the typical metric's (the median of those, at least
    `MIN_SHARED_TAIL`). A t's tails show in about one normal value in twenty beyond two
    spreads: a few values say nothing of them, and the free scale of a t with few degrees of
    freedom fits one far-off value among them better than a normal does (a history of 8 runs
    gave three of a normal suite's 13 benchmarks 1.5 df)."""
    runner, own = _own_tails(tables)
    # The typical benchmark's, no heavier than a weight the runner shares may be: one weight
    # fitted to all of them is set by the heaviest (a few process modes' jumps in runs of
    # several rounds, where their levels blur), which the typical one does not have.
    typical = _typical_tail(own.values())
    return runner, {
        key: weight if values.get(key, 0) >= MIN_OWN_TAIL_VALUES else typical
        for key, weight in own.items()
    }


def typical_tail(groups: Mapping[MetricKey, Sequence[np.ndarray]]) -> float | None:
    """The typical metric's tail weight (`tails_from`: each metric's own, shrunk towards the
    runner's; the lower median of those, no heavier than `MIN_SHARED_TAIL`); None below
    `MIN_TAIL_VALUES` values. What a metric whose own series are too short to show its tails
    takes, rather than the runner's one weight, which its heaviest metrics set."""
    tables = tail_tables(groups)
    return None if tables is None else _typical_tail(_own_tails(tables)[1].values())


def _own_tails(tables: Mapping[MetricKey, np.ndarray]) -> tuple[float, dict[MetricKey, float]]:
    """The runner's weight (the best of the summed tables) and each metric's, its own table
    plus the runner's average one."""
    total = np.sum(list(tables.values()), axis=0)
    prior = total / len(tables)
    own = {key: _TAIL_GRID[int(np.argmax(t + prior))] for key, t in tables.items()}
    return _TAIL_GRID[int(np.argmax(total))], own


def _typical_tail(weights: Iterable[float]) -> float:
    # The lower median: an even count's middle pair is split to the heavier side.
    ordered = sorted(weights)
    return max(ordered[(len(ordered) - 1) // 2], MIN_SHARED_TAIL)


def _t_loglik(values: np.ndarray, nu: float, iterations: int = 30) -> float:
    """Maximised log-likelihood of `values` under a t(nu) with free location and scale (EM)."""
    location = float(np.median(values))
    scale2 = max(float(np.mean((values - location) ** 2)), 1e-12)
    for _ in range(iterations):
        z2 = (values - location) ** 2 / scale2
        weights = (nu + 1) / (nu + z2)
        location = float(np.sum(weights * values) / np.sum(weights))
        scale2 = max(float(np.mean(weights * (values - location) ** 2)), 1e-12)
    z2 = (values - location) ** 2 / scale2
    per_value = (
        special.gammaln((nu + 1) / 2)
        - special.gammaln(nu / 2)
        - 0.5 * math.log(nu * math.pi * scale2)
        - (nu + 1) / 2 * np.log1p(z2 / nu)
    )
    return float(np.sum(per_value))
