"""One comparison's noise model: each benchmark's run-to-run variance, from all its evidence.

For benchmark j the comparator looks at d_j, the log ratio of the sides' medians (each side's
rounds first divided by their own machine speed factor). Under no change its variance is

    V_j = u_j² (1/n_base + 1/n_head) + δ² + V_machine

- u_j²: the benchmark's process-to-process variance, from its own evidence (the rounds compared
  now, the store's history of the base branch on this runner, the runner's calibration record),
  moderated towards the runner's pooled scale (`noise.moderated`); with no evidence of its own,
  the cross-section of this comparison, and last the documented default.
- δ²: drift between the sides that rounds cannot see (sides measured one after the other): how
  much more the comparison's benchmarks disagree with each other than their rounds predict.
- V_machine: the machine's shared speed. It is never subtracted from the benchmarks (a change
  that slows most of a suite must not read as "the machine"); it widens every benchmark's CI by
  its spread: the rounds' machine factors when the sides alternated, the jobs' (history,
  calibration) when they ran one after the other, else the documented default, times the square
  of how much of the machine's speed the benchmark follows (its loading, learnt from history:
  `History.loadings`); and no more than what the suite's own shift between the sides allows
  (`bounded_by_observed_shift`). A shift
  beyond the learnt spread which every benchmark shares (`unexplained_shift`) is the machine's
  for this comparison: it widens every benchmark's CI, and only the suite's finding judges it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as scipy_stats

from perfgate.stats import noise
from perfgate.stats.calibration import Calibration
from perfgate.stats.modes import within_offsets
from perfgate.stats.noise import Evidence, MetricKey
from perfgate.stats.two_sample import exp_or_inf, expm1_or_inf, side_level


@dataclass(frozen=True)
class NoiseFloor:
    """The run-to-run noise of one benchmark metric's comparison (log scale)."""

    #: Variance of the sides' log difference under no change, and its degrees of freedom.
    var: float
    df: float
    #: One process's spread for this benchmark, and the share the machine adds.
    process_sigma: float
    machine_var: float
    #: Where `process_sigma` came from, best first (e.g. "rounds", "history of 24 runs").
    sources: tuple[str, ...]
    #: The runner's typical process spread (what `process_sigma` was shrunk towards): the scale
    #: a side's rounds are robustly averaged with, so a disturbed round cannot widen its own
    #: allowance.
    pooled_sigma: float = 0.0
    #: Run-to-run sd of the benchmark's medians in history (docs/comparator.md's history
    #: threshold), if any.
    history_sigma: float | None = None
    #: Known speed levels (log offsets from the fastest) when it has more than one.
    levels: tuple[float, ...] = ()
    #: `var` times this is the squared scale of the t (`df`) that the difference follows: below
    #: 1 when the runner's learnt heavy tails, not the estimate's degrees of freedom, set `df`.
    tail_factor: float = 1.0
    #: History runs pooled with the base side into the baseline (0: the base side alone).
    baseline_runs: int = 0
    #: Why the base side stands alone although there is history, if it does.
    alone_because: str | None = None
    #: The machine's share is the documented default, not learnt: the sides ran one after the
    #: other (or alternated) with no history or calibration of this runner to measure it.
    machine_assumed: bool = False
    #: Every benchmark moved by this much (log) together, beyond the machine's learnt spread
    #: (`unexplained_shift`): it is in `var` and `machine_var` as the machine's, for this
    #: comparison.
    shared_shift: float | None = None
    #: The machine share (learnt or assumed) was replaced by what this comparison's benchmarks
    #: show the machine did between the sides (`bounded_by_observed_shift`).
    machine_observed: bool = False
    #: The learnt machine share that the observed one replaced (None: it was assumed).
    machine_learnt_var: float | None = None
    #: The degrees of freedom of the benchmark's own part of `var` (process noise and drift),
    #: and the tail weight `df` is capped at: `bounded_by_observed_shift` recombines them.
    relative_df: float = math.inf
    tail_df: float = math.inf
    #: How much of the machine's speed this benchmark follows (`History.loadings`; 1 without
    #: history): its machine share is the machine's variance times its square.
    loading: float = 1.0
    #: In `var` beside the process noise: the drift between sides measured one after the other
    #: that their rounds cannot see (δ²), and how far a new run wanders from history's level
    #: (with a pooled baseline). Log variances, named in the text.
    drift_var: float = 0.0
    wander_var: float = 0.0

    @property
    def scale2(self) -> float:
        """The squared scale of the t with `df` degrees of freedom that the difference follows."""
        return self.var * self.tail_factor

    def describe(self) -> str:
        text = f"±{expm1_or_inf(self.process_sigma):.1%} a process ({', '.join(self.sources)})"
        if self.machine_var > 0:
            text += f"; machine ±{expm1_or_inf(math.sqrt(self.machine_var)):.1%}"
            if self.shared_shift is not None:
                text += (
                    f" (every benchmark moved {expm1_or_inf(self.shared_shift):+.1%} or further "
                    "together, "
                    "beyond the machine's learnt spread: a machine event or a change of the "
                    "whole suite, which one side's run cannot tell apart)"
                )
            elif self.machine_observed and self.machine_learnt_var is not None:
                learnt = expm1_or_inf(math.sqrt(self.machine_learnt_var))
                text += (
                    f" (what the suite's shared shift allows; the machine's measured spread,"
                    f" ±{learnt:.1%}, is wider)"
                )
            elif self.machine_observed:
                text += (
                    " (what the suite's shared shift allows: no history or calibration of this"
                    " runner)"
                )
            elif self.machine_assumed:
                text += " (assumed: no history or calibration of this runner)"
        # Each named once it shows at the text's precision.
        if self.drift_var >= SHOWN_VAR:
            text += f"; drift between the jobs ±{expm1_or_inf(math.sqrt(self.drift_var)):.1%}"
        if self.wander_var >= SHOWN_VAR:
            text += f"; wander from history's level ±{expm1_or_inf(math.sqrt(self.wander_var)):.1%}"
        if abs(self.loading - 1.0) >= 0.005:
            text += f"; follows x{self.loading:.2f} of the machine's speed"
        # The learnt tail weight, where it and not the evidence's df sets the t and is heavy.
        if self.tail_factor < 1.0 and self.tail_df < SHOWN_TAIL_DF:
            text += f"; tails of a t with {self.tail_df:.3g} df"
        if len(self.levels) > 1:
            text += "; speed levels " + " / ".join(f"{exp_or_inf(v):.2f}x" for v in self.levels)
        if self.baseline_runs:
            text += f"; baseline: base and its {self.baseline_runs} history runs"
        elif self.alone_because:
            text += f"; baseline: the base side alone ({self.alone_because})"
        return text


# A spread of ±0.05% or more shows as ±0.1% in the noise text.
SHOWN_VAR = 0.0005**2
# A tail weight is named below this many df: from 30 on, the t's quantile the false-discovery
# correction asks of one changed benchmark among 13 (p = 0.05 / 13) is within 9% of the normal's.
SHOWN_TAIL_DF = 30.0

# n · Var(side level of n rounds) / σ² for normal rounds: Huber's location at k = 1.5 is 96%
# as efficient as the mean (one or two rounds: the mean itself).
HUBER_FACTOR = 1.04


def level_variance(n: int) -> float:
    """Var(a side's level from n rounds) in units of one round's variance."""
    return (1.0 if n <= 2 else HUBER_FACTOR) / max(n, 1)


@dataclass(frozen=True)
class SideShape:
    """How a comparison's sides were measured."""

    rounds_base: int
    rounds_head: int
    jobs_base: int
    jobs_head: int
    alternated: bool

    def weights(self, base_share: float) -> tuple[float, float]:
        """Var(d) over a round's variance and over a job's machine variance.

        `base_share` scales the base side's part: 1 for the base side alone, less when history
        runs are pooled into the baseline (`Baseline.base_share`).
        """
        rounds = level_variance(self.rounds_head) + level_variance(self.rounds_base) * base_share
        if self.alternated:
            return rounds, rounds
        # The machine's part is not shrunk by a pooled baseline: its speed drifts and jumps
        # from job to job (recorded runners: a head job 3 spreads off history's average
        # raised 4-6% false alarms when it was), so the base job next to the head in time
        # stays the reference for it.
        return rounds, 1.0 / self.jobs_head + 1.0 / self.jobs_base


# The base side's level is pooled with history's only when it sits within this many of the
# history's job-to-job spreads of the current level: further off, the base run either drew an
# outlier or is the first run of a new level, and one run cannot tell which.
BASELINE_AGREEMENT = 3.0


@dataclass(frozen=True)
class Baseline:
    """A benchmark's baseline: the base side's level pooled with history's current level.

    When the sides ran one after the other, the base side is one job like each run in history:
    the baseline is their average, each job counting once (the history's part a Huber location
    of its current segment, so one outlying run cannot carry it).
    """

    level: float
    runs: int
    segment: noise.Segment

    @property
    def base_share(self) -> float:
        """Var(baseline) over Var(one job's level): (1 + n·HUBER) / (n + 1)²."""
        return base_share(self.runs)

    def pooled(self, base_level: float | np.ndarray) -> float | np.ndarray:
        """The baseline from the base side's level (log): (base + n · history) / (n + 1)."""
        return (base_level + self.runs * self.level) / (self.runs + 1)

    @property
    def machine_free_level(self) -> float:
        """The current segment's level with each run's machine factor taken out (log)."""
        residuals = self.segment.residuals
        return float(side_level(residuals, noise.qn_scale(residuals)))


def base_share(runs: int) -> float:
    """Var(baseline) over Var(one job's level) for the base side pooled with `runs` history
    runs (1 for the base side alone)."""
    return (1.0 + runs * HUBER_FACTOR) / (runs + 1) ** 2


def history_baseline(
    segment: noise.Segment | None,
    base_level: float,
    shape: SideShape,
    spread: float | None = None,
) -> Baseline | None:
    """The pooled baseline of one benchmark, or None when the base side must stand alone.

    Alone when the sides alternated (their rounds share the machine's drift, which history's
    runs do not), when the current segment is shorter than `MIN_HISTORY_RUNS` without a step
    before it (or shorter than `noise.MIN_STEP_RUNS`), or when the base sits more than
    `BASELINE_AGREEMENT` job spreads from it. The runs since a recent step
    (`noise.current_segment_start`) are too few to measure their own spread: their level is
    read with `spread`, the metric's job-to-job spread that history measured inside its
    segments (`job_spread`), and pooled like any other. Left out, a change that landed on the
    base branch days ago made every comparison of the benchmark one run against one run until
    its fifth run since.
    """
    if shape.alternated or segment is None or not _is_level(segment):
        return None
    if segment.runs >= noise.MIN_HISTORY_RUNS:
        level, spread = segment_level(segment)
    elif spread is not None:
        level = float(side_level(segment.raw, spread))
    else:
        return None
    if abs(base_level - level) > BASELINE_AGREEMENT * spread:
        return None
    return Baseline(level=level, runs=segment.runs, segment=segment)


def job_spread(history: noise.History, key: str) -> float | None:
    """A timed metric's job-to-job spread (log) as history measured it inside its segments:
    its own noise and its share of the machine's (None without a measure of its own)."""
    own = history.metrics.get((key, "time"))
    if own is None:
        return None
    machine = history.machine.var if history.machine is not None else 0.0
    return math.sqrt(own.var + history.loadings.get((key, "time"), 1.0) ** 2 * machine)


def segment_level(segment: noise.Segment) -> tuple[float, float]:
    """The current segment's level and job-to-job spread (log): Huber location, Qn scale."""
    spread = noise.qn_scale(segment.raw)
    return float(side_level(segment.raw, spread)), spread


def shift_samples(
    base_levels: Mapping[str, float],
    head_levels: Mapping[str, float],
    baselines: Mapping[str, Baseline],
    history: noise.History,
) -> dict[int, dict[str, float]]:
    """For each size of baseline the comparison uses (0: the base side alone), the differences
    the machine's shift for that size is read from (`bounded_by_observed_shift`).

    A baseline of the base side and n history runs holds the machine's speed in those runs:
    an unchanged benchmark's difference carries m_head - (m_base + S_n) / (n + 1), S_n the sum
    of the last n runs' machine factors. Benchmarks whose history steps at different runs pool
    different numbers of runs, each too few for a group of its own, but every benchmark with a
    baseline shows that shift for any n: its head less (its base + n · its machine-free level +
    its loading · S_n) / (n + 1). The base side alone (n = 0) is every benchmark's head less
    its base.
    """
    samples = {0: {k: head_levels[k] - base_levels[k] for k in head_levels}}
    free = {k: b.machine_free_level for k, b in baselines.items()}
    for runs in sorted({b.runs for b in baselines.values()}):
        machine = float(np.sum(history.factors[-runs:]))
        samples[runs] = {
            k: head_levels[k]
            - (base_levels[k] + runs * level + history.loadings.get((k, "time"), 1.0) * machine)
            / (runs + 1)
            for k, level in free.items()
        }
    return samples


def off_level(segment: noise.Segment | None, value: float) -> float | None:
    """How far (log) `value` sits from history's current level, if beyond its agreement.

    None when it agrees (within `BASELINE_AGREEMENT` job spreads) or there is too little
    history to say.
    """
    if segment is None or segment.runs < noise.MIN_HISTORY_RUNS:
        return None
    level, spread = segment_level(segment)
    gap = value - level
    return gap if abs(gap) > BASELINE_AGREEMENT * spread else None


def build(
    *,
    keys: Sequence[str],
    round_logs: Mapping[str, tuple[list[float], list[float]]],
    differences: Mapping[str, float],
    round_machine: Evidence | None,
    shape: SideShape,
    history: noise.History,
    calibration: Calibration | None,
    baselines: Mapping[str, Baseline] | None = None,
    within: Mapping[str, WithinRun] | None = None,
) -> tuple[dict[str, NoiseFloor], Evidence]:
    """Every timed key's noise floor, and the machine's shared variance of the comparison.

    `round_logs` holds each key's base and head round log medians (machine factors already
    divided out); `differences` each key's d_j (against its baseline); `round_machine` the
    spread of the sides' round factors (`noise.round_machine`); `baselines` the keys whose
    baseline pools history (`history_baseline`); `within` each key's spread of log samples
    inside a run (`within_run_spread`).
    """
    baselines = baselines or {}
    share = {key: baselines[key].base_share if key in baselines else 1.0 for key in keys}
    weights = {key: shape.weights(share[key]) for key in keys}
    levels = {key: _known_levels(key, history, calibration) for key in keys}
    own: dict[MetricKey, Evidence] = {}
    sources: dict[str, list[str]] = {key: [] for key in keys}
    history_sigma: dict[str, float] = {}
    for key in keys:
        pieces: list[Evidence] = []
        base, head = round_logs[key]
        rounds = noise.pool([_within(np.asarray(side), levels[key]) for side in (base, head)])
        if rounds is not None:
            pieces.append(rounds)
            sources[key].append("rounds")
        parts = history.segments.get((key, "time"), [])
        found = noise.pool(_within(part, levels[key]) for part in parts)
        if found is not None:
            history_sigma[key] = found.sigma
        # History's runs are separate jobs: their spread holds how far the benchmark moves
        # between jobs, which alternated sides share and cancel. Their own rounds measure what
        # their difference holds; history's spread scaled to a round would add that drift,
        # times the rounds a side ran (docs/comparator.md, "The noise model").
        if found is not None and (rounds is None or not shape.alternated):
            # A history run is a job of its own rounds: its median's variance is a round's
            # divided by that, so the per-round figure is the job's times it.
            pieces.append(Evidence(var=found.var * history.rounds, df=found.df))
            sources[key].append(history.current[(key, "time")].describe())
        if calibration is not None:
            entry = calibration.metrics.get((key, "time"))
            if entry is not None:
                pieces.append(Evidence(var=entry.sigma**2, df=entry.df))
                sources[key].append(f"calibration of {calibration.rounds} rounds")
        found = noise.pool(pieces)
        if found is not None:
            own[(key, "time")] = found

    typical_weight = float(np.median([w for w, _ in weights.values()])) if keys else 1.0
    # With nothing measured, every benchmark's scale is the whole suite's cross-section, its
    # own difference included: with one round, the only trace of its own scale the comparison
    # holds. Leaving it out there, as an externally studentized residual would, let recorded
    # suites whose benchmarks differ in noise raise more false alarms (docs/comparator.md,
    # "The noise model").
    cross = noise.cross_section([differences[key] for key in keys])
    fallback = noise.with_fallback(_per_round(cross, typical_weight), noise.DEFAULT_PROCESS)
    # Alternated sides share the job, so their rounds see all that the difference holds but
    # tails: there a few benchmarks far noisier than the rest keep their own scale and leave
    # the rest their pooling. One side after the other, the rounds do not see how far each
    # benchmark moves between the jobs, and the prior the noisier benchmarks widen is kept
    # (docs/comparator.md, "The noise model").
    moderated, prior, apart = noise.moderated(own, fallback, set_apart=shape.alternated)
    for key, _ in apart:
        sources[key].append("its own: far noisier than the rest")
    prior_source = (
        "runner's pooled scale" if own else ("cross-section" if cross is not None else "default")
    )
    # Drift the rounds cannot see when the sides ran one after the other: the benchmarks
    # disagree with each other more than their rounds predict, each by its own (a noisy
    # benchmark's wider difference is its own noise, not drift the quiet ones share). A
    # benchmark's own difference may narrow its allowance but never widen it (the smaller of
    # the excess with and without it): a changed one would otherwise widen its own CI by its
    # change, and one among many that moved together narrows the spread inside their group.
    # Alternating sides share drift, and a benchmark with history has it measured (below).
    drift: dict[str, float] = {}
    if own and cross is not None and not shape.alternated:
        values = np.asarray([differences[key] for key in keys])
        predicted = np.asarray(
            [moderated.get((k, "time"), prior).var * weights[k][0] for k in keys]
        )
        excess = noise.excess_variance(values, predicted)
        alone = noise.excess_variances_without_each(values, predicted, excess)
        drift = {key: min(excess, float(other)) for key, other in zip(keys, alone, strict=True)}

    machine, machine_assumed = _machine(round_machine, shape, history, calibration)
    # How heavy the tails are (each benchmark's from history, shrunk towards the runner's; else
    # the runner's, from history or calibration, which stops at 3 df: `shared_tail`): the CI's t
    # takes no more degrees of freedom than that,
    # however much evidence the scale has. Unmeasured tails
    # are not assumed (a t with few df and the false-discovery correction together would cost
    # most of the power on ordinary noise; bench/eval_comparator.py measured it).
    # Both measured on the levels of whole runs (a calibration's rounds are one process each),
    # and taken for the level of the comparison's fewer-rounds side (`tail_for_rounds`).
    side_rounds = min(shape.rounds_base, shape.rounds_head)
    if history.tail is not None:
        runner_tail = shared_tail(history.tail, measured_on=history.rounds, rounds=side_rounds)
    else:
        runner_tail = shared_tail(
            calibration.tail_df if calibration is not None else None, rounds=side_rounds
        )
    # A benchmark with no evidence of its own takes the pooled scale, widened where its calls
    # spread more inside a run than the suite's typical benchmark's do.
    widening = within_run_widening(keys, within or {})
    floors: dict[str, NoiseFloor] = {}
    for key in keys:
        own_tail = history.tails.get((key, "time"))
        if own_tail is not None:
            own_tail = tail_for_rounds(own_tail, measured_on=history.rounds, rounds=side_rounds)
        tail = own_tail or runner_tail or math.inf
        process = moderated.get((key, "time"))
        if process is None:
            process = Evidence(var=prior.var * widening[key] ** 2, df=prior.df)
            # Named once it shows at the text's precision.
            if widening[key] >= 1.05:
                sources[key].append(f"{prior_source}, x{widening[key]:.1f} for its spread in a run")
        round_weight, machine_weight = weights[key]
        # History's runs are separate jobs: their spread already holds the drift between jobs;
        # a baseline averaged over them also carries how far the benchmarks wander from it.
        drift_var = 0.0 if key in history_sigma else drift.get(key, 0.0)
        wander_var = history.wander.var if key in baselines and history.wander is not None else 0.0
        relative = process.var * round_weight + drift_var + wander_var
        loading = history.loadings.get((key, "time"), 1.0)
        machine_var = machine.var * machine_weight * loading**2
        total = relative + machine_var
        df = total**2 / (relative**2 / max(process.df, 1.0) + machine_var**2 / max(machine.df, 1.0))
        floors[key] = NoiseFloor(
            var=total,
            df=min(df, tail),
            process_sigma=process.sigma,
            machine_var=machine_var,
            sources=tuple(sources[key]) or (prior_source,),
            pooled_sigma=min(prior.sigma, process.sigma),
            history_sigma=history_sigma.get(key),
            levels=tuple(v - levels[key][0] for v in levels[key]) if len(levels[key]) > 1 else (),
            tail_factor=tail_factor(tail) if tail < df else 1.0,
            baseline_runs=baselines[key].runs if key in baselines else 0,
            alone_because=None
            if key in baselines or shape.alternated
            else alone_because(history.current.get((key, "time")), job_spread(history, key)),
            machine_assumed=machine_assumed,
            relative_df=process.df,
            tail_df=tail,
            loading=loading,
            drift_var=drift_var,
            wander_var=wander_var,
        )
    return floors, machine


@dataclass(frozen=True)
class WithinRun:
    """A benchmark's spread of log samples inside a run, and the samples it rests on."""

    spread: float
    samples: int

    @property
    def log_error(self) -> float:
        """Standard error of log(spread): a MAD scale is 37% as efficient as the sd."""
        return 1.166 / math.sqrt(self.samples)


def within_run_spread(rounds: Sequence[np.ndarray]) -> WithinRun | None:
    """The typical spread of log samples inside one round (1.4826 MAD, the median over the
    rounds with at least 5 positive samples) and how many samples it rests on; None without
    such a round, or where the samples tie (quantised timings)."""
    spreads, count = [], 0
    for samples in rounds:
        positive = samples[samples > 0]
        if len(positive) >= 5:
            logs = np.log(positive)
            spreads.append(1.4826 * float(np.median(np.abs(logs - np.median(logs)))))
            count += len(positive)
    if not spreads or float(np.median(spreads)) <= 0:
        return None
    return WithinRun(spread=float(np.median(spreads)), samples=count)


def within_run_widening(keys: Sequence[str], within: Mapping[str, WithinRun]) -> dict[str, float]:
    """How much wider than the suite's typical benchmark each one's process spread is taken to
    be, for a benchmark with no evidence of its own: its spread inside a run over the typical
    one, beyond twice that ratio's sampling error, never below 1."""
    known = [within[k].spread for k in keys if k in within]
    if len(known) < 3:
        return dict.fromkeys(keys, 1.0)
    typical = math.log(float(np.median(known)))
    out = {}
    for k in keys:
        found = within.get(k)
        excess = 0.0 if found is None else math.log(found.spread) - typical - 2 * found.log_error
        out[k] = math.exp(max(excess, 0.0))
    return out


def _per_round(cross: Evidence | None, typical_weight: float) -> Evidence | None:
    """A cross-section of differences as one round's variance (None stays None)."""
    return None if cross is None else Evidence(var=cross.var / typical_weight, df=cross.df)


def alone_because(segment: noise.Segment | None, spread: float | None) -> str | None:
    """Why history did not join the baseline of sides measured one after the other
    (`history_baseline` with the metric's job spread `spread`)."""
    if segment is None:
        return None
    # The runs since a recent step are read with the job spread; without one they are too few.
    if not _is_level(segment) or (segment.runs < noise.MIN_HISTORY_RUNS and spread is None):
        return f"{segment.describe()}: too few for a level"
    return "it sits off history's level"


def _is_level(segment: noise.Segment) -> bool:
    """Whether a current segment is a level the baseline may pool (`history_baseline`)."""
    return segment.runs >= noise.MIN_HISTORY_RUNS or (
        segment.since is not None and segment.runs >= noise.MIN_STEP_RUNS
    )


MIN_TAIL_FOR_SCALE = noise.MIN_SHARED_TAIL


def tail_factor(tail: float) -> float:
    """The squared scale of a t with `tail` df over its variance: (ν - 2) / ν.

    The variance estimates (sample variances of runs that include the tails' far values) are
    the t's variance, not its scale; a t of the runner's tail weight on them would count the
    tails twice. Below `MIN_TAIL_FOR_SCALE` df the factor stays at that value's.
    """
    nu = max(tail, MIN_TAIL_FOR_SCALE)
    return (nu - 2.0) / nu


def rounds_to_move(rounds: int) -> int:
    """How many of a side's rounds must land far off together to carry its level with them.

    The level of one or two rounds is their mean, which one far-off round moves; of three or
    more it is a robust location (`side_level`), which about half of them must move: ⌈n/2⌉,
    as for their median (Huber's location with a known scale needs one more for even n).
    """
    return max(1, (rounds + 1) // 2)


def tail_for_rounds(tail: float, *, measured_on: int, rounds: int) -> float:
    """A tail weight (t df) measured on levels of `measured_on` rounds, for a level of `rounds`.

    A Student-t's tail falls as x^-ν. A level that k far-off rounds must carry together is far
    off with probability about P(one round is)^k, a tail of x^-kν: the weight scales with
    `rounds_to_move`. History's runs of one round measured at 3 df describe a side of three
    alternating rounds at about 6.
    """
    return tail * rounds_to_move(rounds) / rounds_to_move(measured_on)


def shared_tail(tail: float | None, *, measured_on: int = 1, rounds: int = 1) -> float | None:
    """The runner's tail weight as every benchmark without one of its own takes it: no lower
    than `MIN_TAIL_FOR_SCALE` as measured (on levels of `measured_on` rounds), nor as it
    stands for a side of `rounds` (`tail_for_rounds`).

    One weight shared by the whole suite (the calibration's, or history's for a benchmark whose
    own history does not measure it) is set by its heaviest-tailed benchmarks: on a recorded set
    whose calibration rounds put a few benchmarks far off it came out at 1.5 df and took one
    round's +50% of a steady 2% benchmark from 92% found to 17% (docs/comparator.md, *Tails*).
    Below 3 df a t has no finite variance, while the CI rests on the benchmark's variance;
    `tail_factor` already stops there. A benchmark's own tail, measured in its history, is
    kept as it is.
    """
    if tail is None:
        return None
    measured = max(tail, MIN_TAIL_FOR_SCALE)
    return max(
        tail_for_rounds(measured, measured_on=measured_on, rounds=rounds), MIN_TAIL_FOR_SCALE
    )


def _within(values: np.ndarray, levels: Sequence[float]) -> Evidence | None:
    """The spread of `values` inside the benchmark's known speed levels (offsets)."""
    if values.size < 2:
        return None
    if len(levels) <= 1:
        return Evidence.of(values)
    residuals = within_offsets(values, levels)
    df = values.size - len(levels)
    if df < 1:
        return None
    return Evidence(var=float(np.sum(residuals**2)) / df, df=float(df))


def _known_levels(key: str, history: noise.History, calibration: Calibration | None) -> list[float]:
    """The benchmark's speed levels (log offsets, ascending, the fastest first) seen so far."""
    found = history.levels.get((key, "time"))
    if found is not None:
        return list(found)
    if calibration is not None:
        entry = calibration.metrics.get((key, "time"))
        if entry is not None and len(entry.levels) > 1:
            return list(entry.levels)
    return [0.0]


def _machine(
    rounds: Evidence | None,
    shape: SideShape,
    history: noise.History,
    calibration: Calibration | None,
) -> tuple[Evidence, bool]:
    """The machine's speed variance with its df: a round's when the sides alternated, else a job's;
    and whether it is the documented default rather than anything measured.

    `SideShape.weights` turns it into what it adds to a benchmark's difference.
    """
    calibrated = (
        Evidence(var=calibration.machine_sigma**2, df=calibration.machine_df)
        if calibration is not None and calibration.machine_df > 0
        else None
    )
    if shape.alternated:
        # Alternating rounds share the machine's drift; what is left is each round's own speed.
        measured = noise.pool([rounds, calibrated])
        return noise.with_fallback(measured, noise.DEFAULT_MACHINE), measured is None
    # One side after the other: each job sits wherever the machine was at the time, which the
    # history's whole runs or the calibration's rounds show; a job's own rounds, back to back,
    # show at least as much but not the drift between the jobs (taken as evidence, they let the
    # recorded sets' sequential pairs raise 7-8% false alarms: docs/comparator.md).
    learnt = noise.pool([history.machine, calibrated])
    per_job = noise.with_fallback(learnt, noise.DEFAULT_MACHINE)
    if rounds is not None and rounds.var > per_job.var:
        return Evidence(var=rounds.var, df=min(rounds.df, per_job.df)), False
    return per_job, learnt is None


# The consistency of every benchmark with the suite's shift is tested at this family-wise level
# (Bonferroni over the suite): under "all moved together" no benchmark should stand apart.
SHIFT_TOGETHER_ALPHA = 0.05
# Where not every benchmark moved alike, the shift they all made at least is the least-moved
# quarter's (this quantile of the changes; its mirror for a speed-up). A quarter, not the least
# moved one: a single benchmark's own noise must not set it.
SHARED_QUANTILE = 0.25
# Benchmarks that must move clearly against a suite-wide shift beyond the machine's spread for
# the side to be read as a disturbed machine (`unexplained_shift`).
DISTURBED_AGAINST = 2


def unexplained_shift(
    differences: Mapping[str, float],
    floors: Mapping[str, NoiseFloor],
    machine: Evidence,
) -> float | None:
    """The suite's shift (log) when every benchmark moved by it (or further) beyond the
    machine's learnt spread; None otherwise.

    The shift is the median benchmark's change. It is unexplained when it lies outside the 95%
    interval of the machine's learnt spread (with its degrees of freedom) and the median's own
    uncertainty; it is shared when no benchmark's change departs from it, times the
    benchmark's loading (how much of the machine it follows), by more than the benchmark's own
    noise allows (each at `SHIFT_TOGETHER_ALPHA` over the suite). Where some moved further, the
    shift is the least-moved quarter's, provided it too lies beyond the machine's spread and no
    benchmark moved less than its loading's share of it by more than its noise allows. The CIs
    are widened by the whole shift, not the loading's share: an event beyond the machine's
    learnt spread is not one its ordinary movement describes. A shift like
    that is what a one-off machine event (a clock dip during the only round of a side) looks
    like, and equally what a change that slows every benchmark alike looks like: the
    benchmarks' own results cannot tell which, so the shift widens their CIs
    (`with_shared_shift`), and only the suite's finding judges it.
    """
    keys = [k for k in differences if k in floors]
    if len(keys) < noise.MIN_BENCHMARKS_FOR_COMMON:
        return None
    values = np.asarray([differences[k] for k in keys])
    shift = float(np.median(values))
    relative = [max(floors[k].var - floors[k].machine_var, 0.0) for k in keys]
    machine_var = float(np.median([floors[k].machine_var for k in keys]))
    spread = math.pi / 2 * float(np.median(relative)) / len(keys)
    allowed = float(scipy_stats.t.ppf(0.975, max(machine.df, 1.0))) * math.sqrt(
        machine_var + spread
    )
    if abs(shift) <= allowed:
        return None
    level = 1.0 - SHIFT_TOGETHER_ALPHA / (2 * len(keys))
    limits = [
        float(scipy_stats.t.ppf(level, max(floors[key].df, 1.0))) * math.sqrt(var)
        for key, var in zip(keys, relative, strict=True)
    ]
    loadings = np.asarray([floors[k].loading for k in keys])
    if all(
        abs(v - b * shift) <= limit for v, b, limit in zip(values, loadings, limits, strict=True)
    ):
        return shift
    # Not all alike: some benchmarks moved further. If every one still moved at least as far as
    # the least-moved quarter did, that part is shared, as when a clock dip slows the whole
    # side's run and the code slows some benchmarks more: their own changes are judged with it
    # as the machine's, and the least-moved are not called changed for the dip alone.
    sign = 1.0 if shift > 0 else -1.0
    # A side that moved most of the suite beyond anything the machine does while benchmarks
    # moved clearly the other way ran on a disturbed machine (a job whose benchmarks each went
    # their own way, 20-60%): no benchmark's change there can be read on its own. One against
    # the suite is what a change of that one benchmark looks like on a machine that moved.
    against = sum(sign * v < -limit for v, limit in zip(values, limits, strict=True))
    if against >= DISTURBED_AGAINST:
        return shift
    floor_shift = float(np.quantile(values, SHARED_QUANTILE if sign > 0 else 1 - SHARED_QUANTILE))
    if abs(floor_shift) <= allowed:
        return None
    if any(
        sign * (v - b * floor_shift) < -limit
        for v, b, limit in zip(values, loadings, limits, strict=True)
    ):
        return None
    return floor_shift


def bounded_by_observed_shift(
    differences: Mapping[str, float],
    floors: Mapping[str, NoiseFloor],
    *,
    samples: Mapping[int, Mapping[str, float]],
    shape: SideShape,
) -> dict[str, NoiseFloor] | None:
    """Floors whose machine share is bounded by what this comparison shows the machine did
    between the sides; None where the rule does not apply.

    The machine's share is a spread: the documented default when nothing is learnt about the
    runner (an assumed job-to-job spread with few degrees of freedom, which costs most of the
    power of three sequential rounds on a runner that barely drifts), else what its history or
    calibration showed the machine does from job to job, which is what it does in a typical
    comparison, not in this one. The comparison itself shows the machine's shift between its
    sides: it moved every benchmark by the same amount m, so the median benchmark's change c
    estimates m with the median's own variance s² (as long as fewer than half the benchmarks
    changed; where more did, c holds their change, and c² only widens further). m is then
    known to about c ± s, and its contribution to an unchanged benchmark's difference is at most
    c² + s² in mean square: that replaces the spread where it is smaller. Nothing is
    subtracted (an unchanged benchmark is still judged on its own change, with the shift's
    square in its variance), and the suite's finding keeps the spread (`_common_finding`), so
    a change of most of the suite still fails the gate. A shift beyond the spread
    (`unexplained_shift`) is handled before this, which then does not apply.

    A baseline that pools history holds the machine of its runs too: `samples` gives, for each
    size of baseline (`NoiseFloor.baseline_runs`), the differences c is read from for the
    benchmarks of that size (`shift_samples`), and `shape` what a round's variance adds to them.
    """
    keys = [k for k in differences if k in floors]
    if len(keys) < noise.MIN_BENCHMARKS_FOR_COMMON:
        return None
    if any(floors[k].shared_shift is not None for k in keys):
        return None
    # One shift is shared by the benchmarks whose baselines hold the same runs: the base side
    # alone, or it pooled with history's last n runs (a benchmark whose segment is shorter
    # averages the machine over fewer runs, so its share of the shift differs). Each group's
    # shift is read off every benchmark that shows it (`shift_samples`), not the group alone.
    groups: dict[int, list[str]] = {}
    for key in keys:
        groups.setdefault(floors[key].baseline_runs, []).append(key)
    bounded = dict(floors)
    applied = False
    for runs, members in groups.items():
        sample = {k: v for k, v in samples[runs].items() if k in floors}
        if len(sample) < noise.MIN_BENCHMARKS_FOR_COMMON:
            continue
        applied = True
        relative = [_relative_at(floors[k], runs, shape) for k in sample]
        bounded.update(_bounded_group(sample, relative, members, floors))
    return bounded if applied else None


def _relative_at(floor: NoiseFloor, runs: int, shape: SideShape) -> float:
    """A benchmark's own variance (all but the machine's) against a baseline of `runs` history
    runs (0: the base side alone), from what its floor holds for its own baseline."""
    if runs == floor.baseline_runs:
        return max(floor.var - floor.machine_var, 0.0)
    rounds = floor.process_sigma**2 * shape.weights(base_share(runs))[0]
    return rounds + floor.drift_var + (floor.wander_var if runs else 0.0)


def _bounded_group(
    sample: Mapping[str, float],
    relative: Sequence[float],
    members: Sequence[str],
    floors: Mapping[str, NoiseFloor],
) -> dict[str, NoiseFloor]:
    """`bounded_by_observed_shift` for the `members`, whose machine shift the benchmarks of
    `sample` show (their differences against a baseline like the members', and each one's own
    variance there, `relative`)."""
    shift = float(np.median(list(sample.values())))
    spread = math.pi / 2 * float(np.median(relative)) / len(sample)
    observed = shift**2 + spread
    # The bound's uncertainty is the median's spread, estimated from the benchmarks' own
    # variances: it has their typical degrees of freedom (the shift itself is observed).
    observed_df = float(np.median([floors[k].relative_df for k in sample]))
    bounded: dict[str, NoiseFloor] = {}
    for key in members:
        floor = floors[key]
        # The shift the median benchmark shows, in the proportion this one follows the machine.
        share = observed * floor.loading**2
        if share >= floor.machine_var:
            continue
        own = max(floor.var - floor.machine_var, 0.0)
        total = own + share
        weight = own**2 / max(floor.relative_df, 1.0) + share**2 / max(observed_df, 1.0)
        df = total**2 / weight if weight > 0 else floor.relative_df
        bounded[key] = replace(
            floor,
            var=total,
            df=min(df, floor.tail_df),
            tail_factor=tail_factor(floor.tail_df) if floor.tail_df < df else 1.0,
            machine_var=share,
            machine_observed=True,
            machine_learnt_var=None if floor.machine_assumed else floor.machine_var,
        )
    return bounded


def with_shared_shift(floor: NoiseFloor, shift: float) -> NoiseFloor:
    """`floor` with an unexplained shared shift counted as the machine's spread this time.

    The shift's square joins the machine's variance: the benchmark's CI then reaches from
    about no change to twice the shift, the honest range when its change is either the
    machine's or the code's.
    """
    return replace(
        floor,
        var=floor.var + shift**2,
        machine_var=floor.machine_var + shift**2,
        shared_shift=shift,
    )


def explained_by_levels(log_ratio: float, floor: NoiseFloor) -> float | None:
    """The known level gap (log) that a change of `log_ratio` matches, if it matches one.

    A side that lands in another of the benchmark's known speed levels moves by the gap
    between the levels; within two noise spreads of such a gap, the change is that, not code.
    """
    if len(floor.levels) < 2:
        return None
    tolerance = 2.0 * math.sqrt(max(floor.var - floor.machine_var, 0.0)) + 0.02
    for a in floor.levels:
        for b in floor.levels:
            if a != b and abs(log_ratio - (a - b)) <= tolerance:
                return a - b
    return None
