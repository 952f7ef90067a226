"""Compare two sets of results documents (base and head) into one Comparison.

Each side may hold several documents of the same commit: their rounds are pooled. `history`
(medians of earlier base-branch runs on the same runner, oldest first) and `calibration` (the
runner's calibration record) are evidence for each benchmark's noise (`noise_model`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats as scipy_stats

from perfgate.allocation_note import ALLOCATION_METRICS, AllocationsByOp, allocations_of
from perfgate.results import Op, ResultsDocument
from perfgate.stats import noise, noise_model
from perfgate.stats.attribution import attribute, attribute_allocations
from perfgate.stats.calibration import Calibration
from perfgate.stats.model import (
    POSSIBLE_REGRESSION,
    CommonFinding,
    Comparison,
    Flag,
    MetricResult,
    OpBytesDelta,
    OpDelta,
    SideInfo,
    SideSummary,
    Verdict,
)
from perfgate.stats.noise_model import NoiseFloor
from perfgate.stats.two_sample import (
    CompareSettings,
    SampledEstimate,
    decide_exact,
    decide_sampled,
    decide_single_value,
    estimate_sampled,
    exp_or_inf,
    expm1_or_inf,
    possible_regression,
    side_median,
    summarize_side,
    without_round_factors,
)

DETERMINISTIC_METHODS = {"cuda_allocator"}
# A `method` with this prefix is a digest of what ran (kernel_launches: the kernels' names), not
# how the figure was measured: sides that differ in it are compared, the change being the point.
DIGEST_METHOD_PREFIX = "kernels:"
# How a results document declares a metric informational: its note starts with this word.
INFORMATIONAL_NOTE_PREFIX = "informational"
# Peak RSS is counted in pages and per-thread batches: below this, a difference is no change.
RSS_RESOLUTION_BYTES = 1024 * 1024


@dataclass
class _Metric:
    unit: str
    direction: str
    exact: bool
    method: str | None
    rounds: list[np.ndarray] = field(default_factory=list)
    value: float | None = None
    informational: bool = False


@dataclass(frozen=True)
class _Header:
    """What every result row of one (key, metric) shares."""

    key: str
    benchmark: str
    params: dict[str, object]
    metric: str
    unit: str
    direction: str
    exact: bool
    threshold: float


@dataclass
class _Bench:
    name: str
    params: dict[str, object]
    error: str | None = None
    metrics: dict[str, _Metric] = field(default_factory=dict)
    ops: list[Op] | None = None
    # Bytes allocated per call by op, from the `allocated_bytes` note of the document whose
    # value the side reports; None when no document says.
    allocations: AllocationsByOp | None = None


def _collect(documents: Sequence[ResultsDocument]) -> dict[str, _Bench]:
    side: dict[str, _Bench] = {}
    for document in documents:
        for bench in document.benchmarks:
            entry = side.setdefault(bench.key, _Bench(name=bench.name, params=dict(bench.params)))
            entry.error = entry.error or bench.error
            if entry.ops is None and bench.profile is not None:
                entry.ops = list(bench.profile.ops)
            for name, metric in bench.metrics.items():
                slot = entry.metrics.setdefault(
                    name, _Metric(metric.unit, metric.direction, metric.exact, metric.method)
                )
                slot.informational |= _declared_informational(metric.note)
                if metric.samples is not None:
                    slot.rounds.extend(
                        np.asarray(r, dtype=np.float64) for r in metric.round_slices()
                    )
                elif slot.value is None:
                    slot.value = metric.value
                    if name == "allocated_bytes":
                        entry.allocations = allocations_of(metric.value, metric.note)
    return side


def _declared_informational(note: str | None) -> bool:
    """Whether a metric's note declares it informational (how the harness marks the figures it
    records but never decides on: peak RSS, a compile's wall seconds)."""
    return note is not None and note.lstrip().lower().startswith(INFORMATIONAL_NOTE_PREFIX)


def _median_log(rounds: Sequence[np.ndarray]) -> float:
    return math.log(max(side_median(rounds), 1e-300))


def sides_alternated(
    base_docs: Sequence[ResultsDocument], head_docs: Sequence[ResultsDocument]
) -> bool:
    """Whether the sides' runs alternated in time, so that slow drift reached both sides alike.

    True when each side has a run that started before a run of the other side.
    """
    base = [d.run.started_at for d in base_docs]
    head = [d.run.started_at for d in head_docs]
    if len(base) < 2 or len(head) < 2:
        return False
    return min(head) < max(base) and min(base) < max(head)


def _positive(rounds: Sequence[np.ndarray]) -> bool:
    """Rounds that all have a positive median, so that their logarithms are measurements.

    A round whose median is 0 has no log: it would enter the noise model and the rounds' speed
    factors at the 1e-300 floor, 690 units away from everything else.
    """
    return bool(rounds) and all(float(np.median(r)) > 0 for r in rounds)


def _round_logs(rounds: Sequence[np.ndarray]) -> list[float]:
    return [math.log(max(float(np.median(r)), 1e-300)) for r in rounds]


def _round_matrix(side: Mapping[str, _Bench], keys: Sequence[str]) -> np.ndarray | None:
    """A side's (benchmarks x rounds) log medians, when its rounds line up."""
    per_key = [_round_logs(side[k].metrics["time"].rounds) for k in keys]
    if len({len(logs) for logs in per_key}) != 1:
        return None
    return np.asarray(per_key)


# Where the suite's finding rests on the documented default machine spread (docs/comparator.md).
_ASSUMED_MACHINE = (
    "assumed: no history or calibration of this runner (`perfgate calibrate` measures it)"
)


def _machine_assumed(floors: Mapping[str, NoiseFloor]) -> bool:
    """Whether the suite's machine spread is the documented default, nothing measured."""
    return bool(floors) and all(f.machine_assumed for f in floors.values())


def _common_finding(
    differences: Mapping[str, float],
    floors: Mapping[str, NoiseFloor],
    machine: noise.Evidence,
    *,
    settings: CompareSettings,
) -> CommonFinding:
    """How the suite moved as a whole (the median benchmark's change), judged as a finding.

    Its CI carries the machine's learnt spread and the median's own uncertainty; it is never
    subtracted from the benchmarks, whose verdicts stand on their own changes.
    """
    values = np.asarray(list(differences.values()))
    log_ratio = float(np.median(values))
    relative = float(np.median([f.var - f.machine_var for f in floors.values()]))
    relative_df = float(np.median([f.df for f in floors.values()]))
    # The machine's share of the typical difference (less where history pooled the baseline).
    machine_var = float(np.median([f.machine_var for f in floors.values()]))
    spread = math.pi / 2 * relative / values.size
    var = machine_var + spread
    # Welch-Satterthwaite: the machine's few degrees of freedom weigh by their share only.
    df = var**2 / (machine_var**2 / max(machine.df, 1.0) + spread**2 / max(relative_df, 1.0))
    half = float(scipy_stats.t.ppf(0.975, max(df, 1.0))) * math.sqrt(var)
    low, high = exp_or_inf(log_ratio - half), exp_or_inf(log_ratio + half)
    ratio = exp_or_inf(log_ratio)
    threshold = settings.threshold
    change = f"{ratio - 1:+.1%} (95% CI {low - 1:+.1%} to {high - 1:+.1%})"
    noise_text = (
        f"the machine's speed (±{expm1_or_inf(math.sqrt(machine_var)):.1%} between the sides)"
    )
    if _machine_assumed(floors):
        # The suite's finding rests on this spread alone: say it is assumed, and how to learn it.
        noise_text += f", {_ASSUMED_MACHINE}"
    verdict: Verdict
    if low > 1 + threshold:
        verdict, reason = "regression", f"the suite got slower: the median benchmark {change}"
    elif high < 1 - threshold:
        verdict, reason = "improvement", f"the suite got faster: the median benchmark {change}"
    elif low >= 1 - threshold and high <= 1 + threshold:
        verdict, reason = "unchanged", f"the suite's overall speed agrees: {change}"
    else:
        verdict, reason = (
            "inconclusive",
            f"the median benchmark moved {change}, within what the machine moves by",
        )
    return CommonFinding(
        ratio=ratio,
        ci=(low, high),
        benchmarks=int(values.size),
        verdict=verdict,
        reason=reason,
        noise=noise_text,
    )


def compare_documents(
    base_docs: Sequence[ResultsDocument],
    head_docs: Sequence[ResultsDocument],
    *,
    settings: CompareSettings | None = None,
    history: Sequence[noise.PastRun] = (),
    calibration: Calibration | None = None,
    base_label: str | None = None,
    head_label: str | None = None,
    warnings: Sequence[str] = (),
) -> Comparison:
    """Every (key, metric) present on either side, with its verdict (docs/comparator.md).

    `history` holds the medians of earlier base-branch runs on the same runner (oldest first);
    `calibration` the runner's calibration record. Both are evidence for the noise model.
    """
    settings = settings or CompareSettings()
    rng = np.random.default_rng(settings.seed)
    base, head = _collect(base_docs), _collect(head_docs)
    notes = list(warnings) + _environment_warnings(base_docs, head_docs)

    timed = [
        k
        for k in base
        if k in head
        and not base[k].error
        and not head[k].error
        and "time" in base[k].metrics
        and "time" in head[k].metrics
        and _positive(base[k].metrics["time"].rounds)
        and _positive(head[k].metrics["time"].rounds)
    ]
    # Each round's own speed factor (what the whole machine did during that round), centred
    # within its side so that dividing it out moves neither side as a whole.
    matrices = [_round_matrix(side, timed) for side in (base, head)]
    factors = tuple(noise.round_factors(m) if m is not None else None for m in matrices)
    steady = {
        k: tuple(
            without_round_factors(side[k].metrics["time"].rounds, _listed(f))
            for side, f in zip((base, head), factors, strict=True)
        )
        for k in timed
    }
    shape = noise_model.SideShape(
        rounds_base=min((len(base[k].metrics["time"].rounds) for k in timed), default=1),
        rounds_head=min((len(head[k].metrics["time"].rounds) for k in timed), default=1),
        jobs_base=max(len(base_docs), 1),
        jobs_head=max(len(head_docs), 1),
        alternated=sides_alternated(base_docs, head_docs),
    )
    # The head is as far ahead of history as it started after history's last run: the further,
    # the more the benchmarks have wandered from history's level.
    past = noise.history_noise(
        history, compared_at=min((d.run.started_at for d in head_docs), default=None)
    )
    # Sides one after the other: the base side is one job like each run of history, and the
    # baseline is the base branch's current level, not one run of it.
    baselines = {
        k: found
        for k in timed
        if (
            found := noise_model.history_baseline(
                past.current.get((k, "time")),
                _median_log(steady[k][0]),
                shape,
                noise_model.job_spread(past, k),
            )
        )
        is not None
    }
    levels = {k: (_median_log(steady[k][0]), _median_log(steady[k][1])) for k in timed}
    differences = {
        k: head - (float(baselines[k].pooled(base)) if k in baselines else base)
        for k, (base, head) in levels.items()
    }
    floors, machine = noise_model.build(
        keys=timed,
        round_logs={k: (_round_logs(steady[k][0]), _round_logs(steady[k][1])) for k in timed},
        differences=differences,
        round_machine=noise.pool(noise.round_machine(m) for m in matrices if m is not None),
        shape=shape,
        history=past,
        calibration=calibration,
        baselines=baselines,
        within={
            k: spread
            for k in timed
            if (spread := noise_model.within_run_spread([*steady[k][0], *steady[k][1]])) is not None
        },
    )
    # The suite's finding keeps the machine's learnt spread; a shift beyond it that every
    # benchmark shares widens the benchmarks' own CIs instead (`unexplained_shift`).
    learnt_floors = floors
    shift = noise_model.unexplained_shift(differences, floors, machine)
    if shift is not None:
        floors = {k: noise_model.with_shared_shift(f, shift) for k, f in floors.items()}
    elif (
        bounded := noise_model.bounded_by_observed_shift(
            differences,
            floors,
            samples=noise_model.shift_samples(
                {k: base for k, (base, _) in levels.items()},
                {k: head for k, (_, head) in levels.items()},
                baselines,
                past,
            ),
            shape=shape,
        )
    ) is not None:
        floors = bounded
    default_floor = _default_floor(floors, machine.var * shape.weights(1.0)[1])

    results: list[MetricResult] = []
    pending: list[tuple[int, SampledEstimate, float, NoiseFloor]] = []
    # Throughput is items over the same timed blocks: it takes the time metric's verdict rather
    # than a second, separately drawn one that could disagree at the threshold.
    mirrors: list[int] = []
    timed_set = set(timed)
    for key in [*base, *(k for k in head if k not in base)]:
        b, h = base.get(key), head.get(key)
        bench = b or h
        assert bench is not None
        names = sorted({*(b.metrics if b else {}), *(h.metrics if h else {})}) or ["time"]
        for metric in names:
            bm = b.metrics.get(metric) if b else None
            hm = h.metrics.get(metric) if h else None
            ref = bm or hm
            header = _Header(
                key=key,
                benchmark=bench.name,
                params=bench.params,
                metric=metric,
                unit=ref.unit if ref else "s",
                direction=ref.direction if ref else "lower",
                exact=bool(ref and ref.exact),
                threshold=settings.threshold_for(key),
            )
            if (b and b.error) or (h and h.error):
                side, message = (
                    ("head", h.error) if h and h.error else ("base", b.error if b else "")
                )
                results.append(_plain(header, bm, hm, "error", f"{side} failed: {message}"))
            elif bm is None or hm is None:
                verdict: Verdict = "missing" if hm is None else "new"
                reason = "only in base" if hm is None else "only in head"
                results.append(_plain(header, bm, hm, verdict, reason))
            elif (unlike := _unlike_methods(bm, hm)) is not None:
                results.append(_plain(header, bm, hm, "inconclusive", unlike))
            elif metric == "throughput" and key in timed_set and bm.rounds and hm.rounds:
                mirrors.append(len(results))
                results.append(_plain(header, bm, hm, "inconclusive", ""))
            elif bm.rounds and hm.rounds:
                floor = floors.get(key, default_floor) if metric == "time" else default_floor
                if metric != "time":
                    floor = (
                        _one_per_process_floor(
                            bm.rounds, hm.rounds, floor, alternated=shape.alternated
                        )
                        or floor
                    )
                own_factors = metric == "time" and key in timed_set
                baseline = baselines.get(key) if metric == "time" else None
                estimate = estimate_sampled(
                    bm.rounds,
                    hm.rounds,
                    direction=bm.direction,
                    between_var=floor.scale2,
                    between_df=floor.df,
                    round_scale=floor.pooled_sigma,
                    settings=settings,
                    rng=rng,
                    base_factors=_listed(factors[0]) if own_factors else None,
                    head_factors=_listed(factors[1]) if own_factors else None,
                    history_level=baseline.level if baseline else None,
                    history_runs=baseline.runs if baseline else 0,
                )
                pending.append((len(results), estimate, _threshold(floor, settings, key), floor))
                results.append(_plain(header, bm, hm, "inconclusive", ""))
            else:
                valued = _valued(header, bm, hm, header.threshold)
                if metric in ALLOCATION_METRICS and valued.verdict in ("regression", "improvement"):
                    valued = replace(valued, allocation_attribution=_allocation_attribution(b, h))
                # A memory change with its allocating ops named needs no time table beside it.
                if valued.verdict == "regression" and not valued.allocation_attribution:
                    valued = replace(valued, attribution=_attribution(b, h))
                results.append(valued)

    if pending:
        q_values = scipy_stats.false_discovery_control([e.p_value for _, e, _, _ in pending])
        for (index, estimate, threshold, floor), q in zip(pending, q_values, strict=True):
            verdict, reason = decide_sampled(
                estimate, q_value=float(q), threshold=threshold, alpha=settings.alpha
            )
            flag: Flag | None = None
            prior = results[index]
            gap = noise_model.explained_by_levels(estimate.log_ratio, floor)
            base_off = _base_off_level(
                prior.key, prior.metric, past=past, steady=steady, baselines=baselines, shape=shape
            )
            if verdict in ("regression", "improvement") and base_off is not None:
                verdict, reason = (
                    "inconclusive",
                    (
                        f"{estimate.ratio - 1:+.1%}, but the base run sits "
                        f"{expm1_or_inf(base_off):+.1%} off the base branch's level in history, "
                        "where the head agrees with it"
                    ),
                )
            elif verdict in ("regression", "improvement") and gap is not None:
                verdict, reason = (
                    "inconclusive",
                    (
                        f"{estimate.ratio - 1:+.1%}: a side landed in another of this benchmark's "
                        f"known speed levels ({_levels_text(floor)}), not a new one"
                    ),
                )
            elif prior.informational:
                # Recorded for people to read, never decided on, nor flagged (docs/results.md).
                if verdict in ("regression", "improvement"):
                    verdict, reason = "inconclusive", f"informational: {reason}"
            elif verdict == "inconclusive" and possible_regression(estimate, threshold=threshold):
                flag = POSSIBLE_REGRESSION
                reason = f"possible regression: {reason}"
            b, h = base.get(prior.key), head.get(prior.key)
            results[index] = replace(
                prior,
                ratio=estimate.reported_ratio,
                ci=estimate.reported_ci,
                p_value=estimate.p_value,
                q_value=float(q),
                threshold=threshold,
                verdict=verdict,
                reason=reason,
                noise=floor.describe(),
                attribution=_attribution(b, h) if verdict == "regression" or flag else [],
                history=_history_of(history, prior.key, prior.metric),
                flag=flag,
                levels=tuple(exp_or_inf(v) for v in floor.levels),
                baseline_runs=floor.baseline_runs if prior.metric == "time" else 0,
            )

    by_time = {r.key: r for r in results if r.metric == "time"}
    for index in mirrors:
        prior = results[index]
        time = by_time[prior.key]
        results[index] = replace(
            prior,
            ratio=time.ratio,
            ci=time.ci,
            p_value=time.p_value,
            q_value=time.q_value,
            threshold=time.threshold,
            verdict=time.verdict,
            reason=f"as time (the same blocks): {time.reason}",
            noise=time.noise,
            history=_history_of(history, prior.key, prior.metric),
            flag=time.flag,
            levels=time.levels,
            baseline_runs=time.baseline_runs,
        )

    common = None
    if len(timed) >= noise.MIN_BENCHMARKS_FOR_COMMON:
        common = _common_finding(differences, learnt_floors, machine, settings=settings)
        if common.verdict in ("regression", "improvement"):
            moved = [r.key for r in results if r.metric == "time" and r.verdict == common.verdict]
            common = replace(common, affected=tuple(moved))
            note = (
                f"{common.verdict} across the suite: {common.reason}; {len(moved)} of "
                f"{common.benchmarks} benchmarks are a {common.verdict} on their own"
            )
            if _machine_assumed(learnt_floors):
                note += f"; the machine's spread between jobs is {_ASSUMED_MACHINE}"
            notes.append(note)

    return Comparison(
        base=_side_info(base_docs, base_label),
        head=_side_info(head_docs, head_label),
        alpha=settings.alpha,
        threshold=settings.threshold,
        warnings=notes,
        results=results,
        common_factor=common,
    )


def _one_per_process_floor(
    base_rounds: Sequence[np.ndarray],
    head_rounds: Sequence[np.ndarray],
    suite: NoiseFloor,
    *,
    alternated: bool,
) -> NoiseFloor | None:
    """The floor of a metric measured once per process (compile_time), from its own rounds.

    Each round is then one process's figure, so the rounds' spread is exactly the
    process-to-process noise that the suite's timing floor only stands in for (a compile's CPU
    seconds spread unlike a call's time). Nothing divides the machine's speed out of these
    figures, so each process's share of it is already in that spread: when the sides
    alternated (their processes share the machine's drift) nothing is added for the machine;
    one side after the other, the suite's share between the sides is added. None (the suite's
    floor applies) with fewer than two rounds a side, a round of several samples, or a figure
    of 0.
    """
    rounds = (base_rounds, head_rounds)
    if any(len(side) < 2 or any(r.size != 1 for r in side) for side in rounds):
        return None
    logs = [np.log(np.concatenate(side)) for side in rounds if _positive(side)]
    if len(logs) != 2:
        return None
    df = sum(side.size for side in logs) - 2
    process_var = sum(float(np.sum((side - side.mean()) ** 2)) for side in logs) / df
    own = process_var * sum(noise_model.level_variance(side.size) for side in logs)
    machine = 0.0 if alternated else suite.machine_var
    # Welch-Satterthwaite: the machine's share carries the suite's degrees of freedom.
    weight = own**2 / df + machine**2 / max(suite.df, 1.0)
    return NoiseFloor(
        var=own + machine,
        df=(own + machine) ** 2 / weight if weight > 0 else float(df),
        process_sigma=math.sqrt(process_var),
        machine_var=machine,
        sources=(f"its own {df + 2} processes",),
        pooled_sigma=math.sqrt(process_var),
        machine_assumed=suite.machine_assumed and not alternated,
        machine_observed=suite.machine_observed and not alternated,
        machine_learnt_var=None if alternated else suite.machine_learnt_var,
    )


def _unlike_methods(base: _Metric, head: _Metric) -> str | None:
    """Why the sides cannot be compared when they measured the metric in different ways (say
    compile_time as wall seconds in base, CPU seconds in head); None when they can."""
    b, h = base.method, head.method
    if b is None or h is None or b == h:
        return None
    if b.startswith(DIGEST_METHOD_PREFIX) and h.startswith(DIGEST_METHOD_PREFIX):
        return None
    return f"not comparable: measured as {b} in base, {h} in head"


def _listed(factors: np.ndarray | None) -> list[float] | None:
    return None if factors is None else [float(v) for v in factors]


def _default_floor(floors: Mapping[str, NoiseFloor], machine_var: float) -> NoiseFloor:
    """The floor of a sampled metric with no timed benchmark behind it: the suite's typical one.

    Without timed benchmarks: the default process spread and `machine_var`, the machine's
    share of a difference of the base side alone.
    """
    if floors:
        typical = sorted(floors.values(), key=lambda f: f.var)[len(floors) // 2]
        # Another metric's baseline is the base side alone, whatever the typical key's was.
        return replace(typical, baseline_runs=0, alone_because=None)
    process = noise.DEFAULT_PROCESS
    return NoiseFloor(
        var=2 * process.var + machine_var,
        df=process.df,
        process_sigma=process.sigma,
        machine_var=machine_var,
        sources=("default",),
    )


def _base_off_level(
    key: str,
    metric: str,
    *,
    past: noise.History,
    steady: Mapping[str, tuple[list[np.ndarray], ...]],
    baselines: Mapping[str, noise_model.Baseline],
    shape: noise_model.SideShape,
) -> float | None:
    """How far the base run sits off history's current level when the head agrees with it.

    Then the difference is the base run's excursion (a slow process, another speed level),
    not the head's change; None otherwise.
    """
    if metric != "time" or key in baselines or key not in steady or shape.alternated:
        return None
    segment = past.current.get((key, "time"))
    base_log, head_log = _median_log(steady[key][0]), _median_log(steady[key][1])
    gap = noise_model.off_level(segment, base_log)
    if gap is None or noise_model.off_level(segment, head_log) is not None:
        return None
    return gap


def _levels_text(floor: NoiseFloor) -> str:
    return " / ".join(f"{exp_or_inf(v):.2f}x" for v in floor.levels)


def _history_of(history: Sequence[noise.PastRun], key: str, metric: str) -> list[float]:
    return [run.medians[(key, metric)] for run in history if (key, metric) in run.medians]


def _attribution(base: _Bench | None, head: _Bench | None) -> list[OpDelta]:
    if base is None or head is None or base.ops is None or head.ops is None:
        return []
    return attribute(base.ops, head.ops)


def _allocation_attribution(base: _Bench | None, head: _Bench | None) -> list[OpBytesDelta]:
    if base is None or head is None or base.allocations is None or head.allocations is None:
        return []
    return attribute_allocations(
        base.allocations, head.allocations, base_ops=base.ops, head_ops=head.ops
    )


def _threshold(floor: NoiseFloor, settings: CompareSettings, key: str) -> float:
    """The key's threshold, raised with history to `history_k` run-to-run spreads of the medians."""
    if floor.history_sigma is None:
        return settings.threshold_for(key)
    return max(settings.threshold_for(key), expm1_or_inf(settings.history_k * floor.history_sigma))


def _summary(metric: _Metric | None) -> SideSummary | None:
    if metric is None:
        return None
    if metric.rounds:
        return summarize_side(metric.rounds)
    if metric.value is not None:
        return SideSummary(n=1, median=metric.value, iqr=0.0)
    return None


def _plain(
    header: _Header, bm: _Metric | None, hm: _Metric | None, verdict: Verdict, reason: str
) -> MetricResult:
    informational = any(m is not None and m.informational for m in (bm, hm))
    return MetricResult(
        key=header.key,
        benchmark=header.benchmark,
        params=dict(header.params),
        metric=header.metric,
        unit=header.unit,
        direction=header.direction,
        exact=header.exact,
        base=_summary(bm),
        head=_summary(hm),
        ratio=None,
        ci=None,
        p_value=None,
        q_value=None,
        threshold=header.threshold,
        verdict=verdict,
        reason=reason,
        informational=informational,
    )


def _valued(header: _Header, bm: _Metric, hm: _Metric, threshold: float) -> MetricResult:
    if bm.value is None or hm.value is None:
        return _plain(header, bm, hm, "inconclusive", "one side has samples, the other a value")
    if bm.exact or hm.exact:
        verdict, reason = decide_exact(bm.value, hm.value, direction=bm.direction)
    else:
        verdict, reason = decide_single_value(
            bm.value,
            hm.value,
            direction=bm.direction,
            threshold=threshold,
            deterministic=bm.method in DETERMINISTIC_METHODS,
            resolution=RSS_RESOLUTION_BYTES
            if bm.unit == "B" and bm.method != "cuda_allocator"
            else 0.0,
        )
    ratio = None
    if bm.value:
        ratio = (
            hm.value / bm.value
            if bm.direction == "lower"
            else (bm.value / hm.value if hm.value else None)
        )
    return replace(_plain(header, bm, hm, verdict, reason), ratio=ratio)


def _side_info(documents: Sequence[ResultsDocument], label: str | None) -> SideInfo:
    first = documents[0].run if documents else None
    return SideInfo(
        commit=first.commit if first else None,
        runs=[d.run.id for d in documents],
        branch=first.branch if first else None,
        label=label,
    )


def _environment_warnings(
    base: Sequence[ResultsDocument], head: Sequence[ResultsDocument]
) -> list[str]:
    if not base or not head:
        return []
    b, h = base[0].environment.as_dict(), head[0].environment.as_dict()
    if b.get("fingerprint") == h.get("fingerprint"):
        return []
    volatile = {"fingerprint", "hostname"}
    changed = [
        f"{k}: {b.get(k)!r} -> {h.get(k)!r}"
        for k in sorted(b.keys() | h.keys())
        if k not in volatile and b.get(k) != h.get(k)
    ]
    detail = "; ".join(changed[:6]) if changed else "fingerprints differ"
    return [
        f"environment changed between base and head ({detail}): ratios may reflect the "
        "machine, not the code"
    ]
