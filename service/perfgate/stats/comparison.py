"""Compare two sets of results documents (base and head) into one Comparison.

Each side may hold several documents of the same commit: their rounds are pooled. `history`
(medians of earlier base-branch runs, oldest first) sets per-benchmark noise floors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats as scipy_stats

from perfgate.results import Op, ResultsDocument
from perfgate.stats import noise
from perfgate.stats.attribution import attribute
from perfgate.stats.compare import (
    CROSSING_NEARER,
    CompareSettings,
    SampledEstimate,
    decide_exact,
    decide_sampled,
    decide_single_value,
    estimate_sampled,
    side_median,
    summarize_side,
    without_round_factors,
)
from perfgate.stats.model import (
    CommonFinding,
    Comparison,
    MetricResult,
    OpDelta,
    SideInfo,
    SideSummary,
    Verdict,
)
from perfgate.stats.noise import MetricKey, NoiseFloor

DETERMINISTIC_METHODS = {"cuda_allocator"}
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
                if metric.samples is not None:
                    slot.rounds.extend(
                        np.asarray(r, dtype=np.float64) for r in metric.round_slices()
                    )
                elif slot.value is None:
                    slot.value = metric.value
    return side


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


def _round_logs(rounds: Sequence[np.ndarray]) -> list[float]:
    return [math.log(max(float(np.median(r)), 1e-300)) for r in rounds]


def _round_factors(side: Mapping[str, _Bench], keys: Sequence[str]) -> list[float] | None:
    """Each round's own speed factor (shared by its benchmarks), when rounds line up.

    A benchmark's rounds are centred on their mean, not their median, so that a round the
    whole machine ran c times slower gets a factor exactly log(c) apart from the others.
    """
    per_key = [_round_logs(side[k].metrics["time"].rounds) for k in keys]
    counts = {len(logs) for logs in per_key}
    if len(counts) != 1 or len(keys) < noise.MIN_BENCHMARKS_FOR_COMMON:
        return None
    matrix = np.asarray(per_key)
    deviations = matrix - np.mean(matrix, axis=1, keepdims=True)
    return [float(v) for v in np.median(deviations, axis=0)]


def _noise_floors(
    base: Mapping[str, _Bench],
    head: Mapping[str, _Bench],
    keys: Sequence[str],
    adjusted: Mapping[str, float],
    history: noise.History,
    *,
    factors: tuple[list[float] | None, list[float] | None],
    alternated: bool,
    priors: noise.Priors,
) -> dict[str, NoiseFloor]:
    """One noise floor per benchmark key (its time metric's), from the best evidence at hand.

    History beats rounds (rounds spread wider than history widen it), rounds beat the spread
    across benchmarks of this one pair, and that beats the prior; a benchmark without its own
    figure gets the pooled one. Rounds of sides measured one after the other (not
    `alternated`) also carry the drift between them.
    `factors` are each side's round factors (`_round_factors`), divided out of the rounds.
    """
    rounds_b = min((len(base[k].metrics["time"].rounds) for k in keys), default=1)
    rounds_h = min((len(head[k].metrics["time"].rounds) for k in keys), default=1)
    floors: dict[str, NoiseFloor] = {}
    estimates: dict[str, tuple[float, int]] = {}

    if max(rounds_b, rounds_h) >= 2:
        for key in keys:
            sides = []
            for side, side_factors in zip((base, head), factors, strict=True):
                rounds = side[key].metrics["time"].rounds
                sides.append(_round_logs(without_round_factors(rounds, side_factors)))
            found = noise.rounds_sigma(sides)
            if found is not None:
                estimates[key] = found
        pooled = float(np.median([s for s, _ in estimates.values()])) if estimates else 0.0
        pooled = max(pooled, priors.alternated_rounds if alternated else priors.rounds)
        tail_df = priors.alternated_tail_df if alternated else priors.rounds_tail_df
        for key, (sigma, df) in estimates.items():
            shrunk = noise.shrink(sigma, df, prior=pooled)
            if not alternated:
                shrunk = noise.with_drift(
                    shrunk, rounds_b=rounds_b, rounds_h=rounds_h, drift=priors.drift
                )
            floors[key] = NoiseFloor(
                sigma=shrunk,
                source="rounds" if alternated else "rounds+drift",
                df=min(df + noise.PRIOR_DF, tail_df),
            )
    else:
        cross = noise.cross_section_sigma(list(adjusted.values()), rounds_b=1, rounds_h=1) or 0.0
        sigma = max(cross, priors.single)
        source = "cross-section" if cross > priors.single else "prior"
        for key in keys:
            floors[key] = NoiseFloor(sigma=sigma, source=source)

    for key in keys:
        hist = history.floors.get((key, "time"))
        if hist is None:
            continue
        own = estimates.get(key)
        if own is not None:
            # History is this benchmark's prior; the rounds compared now are more evidence on
            # the same spread. Rounds spread wider than history knows (a process mode history
            # has not seen) widen the CI; rounds that agree by chance do not narrow it.
            sigma, df = own
            prior_df = max(hist.runs - 1, 1)
            pooled_sigma = math.sqrt((prior_df * hist.sigma**2 + df * sigma**2) / (prior_df + df))
            hist = replace(hist, sigma=max(hist.sigma, pooled_sigma))
        floors[key] = hist
    return floors


def _common_finding(
    log_ratio: float,
    benchmarks: int,
    *,
    rounds_b: int,
    rounds_h: int,
    history: noise.History,
    settings: CompareSettings,
    rng: np.random.Generator,
) -> CommonFinding:
    """The common factor as a finding of its own, judged against how much whole runs move."""
    if history.common_sigma is not None:
        sigma, df, source = history.common_sigma, float(history.runs - 1), "history"
    else:
        sigma, df, source = noise.PRIOR_COMMON_SIGMA, noise.PRIOR_TAIL_DF, "prior"
    spread = max(sigma, 1e-4) * math.sqrt(1.0 / rounds_b + 1.0 / rounds_h)
    draws = log_ratio + spread * rng.standard_t(df, size=settings.resamples)
    low, high = (math.exp(v) for v in np.quantile(draws, [0.025, 0.975]))
    ratio = math.exp(log_ratio)
    threshold = settings.threshold
    change = f"{ratio - 1:+.1%} (95% CI {low - 1:+.1%} to {high - 1:+.1%})"
    verdict: Verdict
    if low > 1 + threshold:
        verdict, reason = "regression", f"all {benchmarks} benchmarks slower together: {change}"
    elif high < 1 - threshold:
        verdict, reason = "improvement", f"all {benchmarks} benchmarks faster together: {change}"
    elif low >= 1 - threshold and high <= 1 + threshold:
        verdict, reason = "unchanged", f"the runs' overall speed agrees: {change}"
    else:
        verdict, reason = (
            "inconclusive",
            (
                f"all {benchmarks} benchmarks moved together by {change}, within what whole runs "
                "move by on this machine"
            ),
        )
    described = (
        f"history of {history.runs} base runs (whole runs move ±{math.expm1(sigma):.1%})"
        if source == "history"
        else f"default run-to-run speed noise (±{math.expm1(sigma):.1%})"
    )
    return CommonFinding(
        ratio=ratio,
        ci=(low, high),
        benchmarks=benchmarks,
        verdict=verdict,
        reason=reason,
        noise=described,
    )


def compare_documents(
    base_docs: Sequence[ResultsDocument],
    head_docs: Sequence[ResultsDocument],
    *,
    settings: CompareSettings | None = None,
    history: Sequence[Mapping[MetricKey, float]] = (),
    base_label: str | None = None,
    head_label: str | None = None,
    warnings: Sequence[str] = (),
) -> Comparison:
    """Every (key, metric) present on either side, with its verdict (DESIGN §5)."""
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
        and base[k].metrics["time"].rounds
        and head[k].metrics["time"].rounds
    ]
    # Each round's own speed factor (what the whole machine did during that round): the noise
    # model measures the rounds' spread without it. When the sides alternated, the sides'
    # medians are taken without it too. Rounds run one side after the other keep it: there a
    # side's rounds can share an excursion (cnn_train_step +20% for a whole `--rounds 3` job),
    # and the medians as measured, with the strict crossing rule, are what hold their false
    # alarms under 1% (docs/comparator.md).
    factors = (_round_factors(base, timed), _round_factors(head, timed))
    alternated = sides_alternated(base_docs, head_docs)
    base_steady, head_steady = factors if alternated else (None, None)
    raw = {
        k: _median_log(without_round_factors(head[k].metrics["time"].rounds, head_steady))
        - _median_log(without_round_factors(base[k].metrics["time"].rounds, base_steady))
        for k in timed
    }
    # Figures measured with the way these runs were sampled (see noise.Priors).
    priors = noise.priors_for(
        getattr(d.environment, "sampling", None) for d in (*base_docs, *head_docs)
    )
    past = noise.history_noise(history, tail_df=priors.history_tail_df)
    common_log = noise.common_factor(list(raw.values()))
    adjusted = {k: v - common_log for k, v in raw.items()}
    floors = _noise_floors(
        base,
        head,
        timed,
        adjusted,
        past,
        factors=factors,
        alternated=alternated,
        priors=priors,
    )
    common = None
    if len(raw) >= noise.MIN_BENCHMARKS_FOR_COMMON:
        common = _common_finding(
            common_log,
            len(raw),
            rounds_b=min(len(base[k].metrics["time"].rounds) for k in timed),
            rounds_h=min(len(head[k].metrics["time"].rounds) for k in timed),
            history=past,
            settings=settings,
            rng=rng,
        )
        if common.verdict != "unchanged" and abs(common_log) >= 0.01:
            notes.append(
                f"{common.verdict} across the suite: {common.reason}; each benchmark is judged "
                "relative to that shared movement"
            )

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
                threshold=settings.threshold,
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
            elif metric == "throughput" and key in timed_set and bm.rounds and hm.rounds:
                mirrors.append(len(results))
                results.append(_plain(header, bm, hm, "inconclusive", ""))
            elif bm.rounds and hm.rounds:
                floor = floors.get(key) or NoiseFloor(sigma=priors.single, source="prior")
                estimate = estimate_sampled(
                    bm.rounds,
                    hm.rounds,
                    direction=bm.direction,
                    between_sigma=floor.sigma,
                    between_df=floor.df,
                    common_log=common_log,
                    settings=settings,
                    rng=rng,
                    base_factors=base_steady if metric == "time" and key in timed_set else None,
                    head_factors=head_steady if metric == "time" and key in timed_set else None,
                    crossing_nearer=CROSSING_NEARER if alternated else 1.0,
                )
                pending.append((len(results), estimate, _threshold(floor, settings), floor))
                results.append(_plain(header, bm, hm, "inconclusive", ""))
            else:
                valued = _valued(header, bm, hm, settings.threshold)
                if valued.verdict == "regression":
                    valued = replace(valued, attribution=_attribution(b, h))
                results.append(valued)

    if pending:
        q_values = scipy_stats.false_discovery_control([e.p_value for _, e, _, _ in pending])
        for (index, estimate, threshold, floor), q in zip(pending, q_values, strict=True):
            verdict, reason = decide_sampled(
                estimate, q_value=float(q), threshold=threshold, alpha=settings.alpha
            )
            prior = results[index]
            b, h = base.get(prior.key), head.get(prior.key)
            attribution = _attribution(b, h) if verdict == "regression" else []
            results[index] = replace(
                prior,
                ratio=estimate.ratio,
                ci=estimate.ci,
                p_value=estimate.p_value,
                q_value=float(q),
                threshold=threshold,
                verdict=verdict,
                reason=reason,
                noise=floor.describe(),
                attribution=attribution,
                history=[
                    run[(prior.key, prior.metric)]
                    for run in history
                    if (prior.key, prior.metric) in run
                ],
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
            history=[
                run[(prior.key, prior.metric)]
                for run in history
                if (prior.key, prior.metric) in run
            ],
        )

    return Comparison(
        base=_side_info(base_docs, base_label),
        head=_side_info(head_docs, head_label),
        alpha=settings.alpha,
        threshold=settings.threshold,
        warnings=notes,
        results=results,
        common_factor=common,
    )


def _attribution(base: _Bench | None, head: _Bench | None) -> list[OpDelta]:
    if base is None or head is None or base.ops is None or head.ops is None:
        return []
    return attribute(base.ops, head.ops)


def _threshold(floor: NoiseFloor, settings: CompareSettings) -> float:
    threshold = settings.threshold
    if floor.source == "history":
        threshold = max(threshold, math.expm1(settings.history_k * floor.sigma))
        if floor.excursion is not None:
            # This benchmark has landed this far off before with unchanged code.
            threshold = max(threshold, math.expm1(floor.excursion * 1.1))
    return threshold


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
