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
  its learnt spread: the rounds' machine factors when the sides alternated, the jobs' (history,
  calibration, the default) when they ran one after the other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfgate.stats import noise
from perfgate.stats.calibration import Calibration
from perfgate.stats.modes import speed_levels, within_offsets
from perfgate.stats.noise import Evidence, MetricKey


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
    #: Run-to-run sd of the benchmark's medians in history (DESIGN's history threshold), if any.
    history_sigma: float | None = None
    #: Known speed levels (log offsets from the fastest) when it has more than one.
    levels: tuple[float, ...] = ()

    def describe(self) -> str:
        text = f"±{math.expm1(self.process_sigma):.1%} a process ({', '.join(self.sources)})"
        if self.machine_var > 0:
            text += f"; machine ±{math.expm1(math.sqrt(self.machine_var)):.1%}"
        if len(self.levels) > 1:
            text += "; speed levels " + " / ".join(f"{math.exp(v):.2f}x" for v in self.levels)
        return text


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

    @property
    def round_weight(self) -> float:
        """Var(d) / a round's variance (each side's level from its rounds, `side_level`)."""
        return level_variance(self.rounds_base) + level_variance(self.rounds_head)

    @property
    def job_weight(self) -> float:
        return 1.0 / self.jobs_base + 1.0 / self.jobs_head


def build(
    *,
    keys: Sequence[str],
    round_logs: Mapping[str, tuple[list[float], list[float]]],
    differences: Mapping[str, float],
    factors: tuple[np.ndarray | None, np.ndarray | None],
    shape: SideShape,
    history: noise.History,
    calibration: Calibration | None,
) -> tuple[dict[str, NoiseFloor], Evidence]:
    """Every timed key's noise floor, and the machine's shared variance of the comparison.

    `round_logs` holds each key's base and head round log medians (machine factors already
    divided out); `differences` each key's d_j; `factors` each side's round factors.
    """
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
        past = history.residuals.get((key, "time"))
        if past is not None:
            found = _within(past, levels[key])
            if found is not None:
                history_sigma[key] = found.sigma
                # A history run is a job of `rounds_base` rounds: its median's variance is a
                # round's divided by that, so the per-round figure is the job's times it.
                pieces.append(Evidence(var=found.var * shape.rounds_base, df=found.df))
                sources[key].append(f"history of {history.runs} runs")
        if calibration is not None:
            entry = calibration.metrics.get((key, "time"))
            if entry is not None:
                pieces.append(Evidence(var=entry.sigma**2, df=entry.df))
                sources[key].append(f"calibration of {calibration.rounds} rounds")
        found = noise.pool(pieces)
        if found is not None:
            own[(key, "time")] = found

    cross = noise.cross_section([differences[key] for key in keys])
    per_round_cross = (
        Evidence(var=cross.var / shape.round_weight, df=cross.df) if cross is not None else None
    )
    fallback = noise.with_fallback(per_round_cross, noise.DEFAULT_PROCESS)
    moderated, prior = noise.moderated(own, fallback)
    prior_source = (
        "runner's pooled scale"
        if own
        else ("cross-section" if per_round_cross is not None else "default")
    )
    # Drift the rounds cannot see when the sides ran one after the other: the benchmarks
    # disagree with each other more than their rounds predict. Alternating sides share it.
    drift = 0.0
    if own and cross is not None and not shape.alternated:
        predicted = float(np.median([e.var for e in moderated.values()])) * shape.round_weight
        drift = max(cross.var - predicted, 0.0)

    machine = _machine(factors, shape, history, calibration)
    # How heavy the runner's tails are, from its history or calibration: the CI's t takes no
    # more degrees of freedom than that, however much evidence the scale has. Unmeasured tails
    # are not assumed (a t with few df and the false-discovery correction together would cost
    # most of the power on ordinary noise; bench/eval_comparator.py measured it).
    tail = history.tail or (calibration.tail_df if calibration is not None else None)
    tail = tail or math.inf
    floors: dict[str, NoiseFloor] = {}
    for key in keys:
        process = moderated.get((key, "time"), prior)
        relative = process.var * shape.round_weight + drift
        total = relative + machine.var
        df = total**2 / (relative**2 / max(process.df, 1.0) + machine.var**2 / max(machine.df, 1.0))
        df = min(df, tail)
        floors[key] = NoiseFloor(
            var=total,
            df=df,
            process_sigma=process.sigma,
            machine_var=machine.var,
            sources=tuple(sources[key]) or (prior_source,),
            pooled_sigma=min(prior.sigma, process.sigma),
            history_sigma=history_sigma.get(key),
            levels=tuple(v - levels[key][0] for v in levels[key]) if len(levels[key]) > 1 else (),
        )
    return floors, machine


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
    past = history.residuals.get((key, "time"))
    if past is not None:
        found = speed_levels(past)
        if len(found) > 1:
            return [v - found[0] for v in found]
    if calibration is not None:
        entry = calibration.metrics.get((key, "time"))
        if entry is not None and len(entry.levels) > 1:
            return list(entry.levels)
    return [0.0]


def _machine(
    factors: tuple[np.ndarray | None, np.ndarray | None],
    shape: SideShape,
    history: noise.History,
    calibration: Calibration | None,
) -> Evidence:
    """The variance the machine's speed adds to every benchmark's difference, with its df."""
    rounds = noise.pool(Evidence.of(f) if f is not None else None for f in factors)
    calibrated = (
        Evidence(var=calibration.machine_sigma**2, df=calibration.machine_df)
        if calibration is not None and calibration.machine_df > 0
        else None
    )
    if shape.alternated:
        # Alternating rounds share the machine's drift; what is left is each round's own speed.
        per_round = noise.with_fallback(noise.pool([rounds, calibrated]), noise.DEFAULT_MACHINE)
        return Evidence(var=per_round.var * shape.round_weight, df=per_round.df)
    # One side after the other: each job sits wherever the machine was at the time, which the
    # history's whole runs or the calibration's rounds show; a job's own rounds, back to back,
    # show at least as much but not the drift between the jobs (taken as evidence, they let the
    # recorded sets' sequential pairs raise 7-8% false alarms: docs/comparator.md).
    per_job = noise.with_fallback(noise.pool([history.machine, calibrated]), noise.DEFAULT_MACHINE)
    if rounds is not None and rounds.var > per_job.var:
        per_job = Evidence(var=rounds.var, df=min(rounds.df, per_job.df))
    return Evidence(var=per_job.var * shape.job_weight, df=per_job.df)


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
