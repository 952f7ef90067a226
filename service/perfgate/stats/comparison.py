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
    CompareSettings,
    SampledEstimate,
    decide_exact,
    decide_sampled,
    decide_single_value,
    estimate_sampled,
)
from perfgate.stats.model import Comparison, MetricResult, SideInfo, SideSummary, Verdict
from perfgate.stats.noise import MetricKey, NoiseFloor

DETERMINISTIC_METHODS = {"cuda_allocator"}


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
    return math.log(max(float(np.median(np.concatenate(rounds))), 1e-300))


def _round_logs(rounds: Sequence[np.ndarray]) -> list[float]:
    return [math.log(max(float(np.median(r)), 1e-300)) for r in rounds]


def _round_factors(side: Mapping[str, _Bench], keys: Sequence[str]) -> list[float] | None:
    """Each round's own speed factor (shared by its benchmarks), when rounds line up."""
    per_key = [_round_logs(side[k].metrics["time"].rounds) for k in keys]
    counts = {len(logs) for logs in per_key}
    if len(counts) != 1 or len(keys) < noise.MIN_BENCHMARKS_FOR_COMMON:
        return None
    matrix = np.asarray(per_key)
    deviations = matrix - np.median(matrix, axis=1, keepdims=True)
    return [float(v) for v in np.median(deviations, axis=0)]


def _noise_floors(
    base: Mapping[str, _Bench],
    head: Mapping[str, _Bench],
    keys: Sequence[str],
    adjusted: Mapping[str, float],
    history: Sequence[Mapping[MetricKey, float]],
) -> dict[str, NoiseFloor]:
    """One noise floor per benchmark key (its time metric's), from the best evidence at hand."""
    from_history = noise.history_noise(history)
    rounds_b = min((len(base[k].metrics["time"].rounds) for k in keys), default=1)
    rounds_h = min((len(head[k].metrics["time"].rounds) for k in keys), default=1)
    floors: dict[str, NoiseFloor] = {}

    if max(rounds_b, rounds_h) >= 2:
        factors_b = _round_factors(base, keys) or [0.0] * rounds_b
        factors_h = _round_factors(head, keys) or [0.0] * rounds_h
        estimates: dict[str, tuple[float, int]] = {}
        for key in keys:
            sides = []
            for side, factors in ((base, factors_b), (head, factors_h)):
                logs = _round_logs(side[key].metrics["time"].rounds)
                if len(logs) == len(factors):
                    logs = [v - f for v, f in zip(logs, factors, strict=True)]
                sides.append(logs)
            found = noise.rounds_sigma(sides)
            if found is not None:
                estimates[key] = found
        pooled = (
            float(np.median([s for s, _ in estimates.values()])) if estimates else noise.PRIOR_SIGMA
        )
        pooled = max(pooled, noise.PRIOR_SIGMA / 2)
        for key, (sigma, df) in estimates.items():
            floors[key] = NoiseFloor(sigma=noise.shrink(sigma, df, prior=pooled), source="rounds")
    else:
        cross = noise.cross_section_sigma(list(adjusted.values()), rounds_b=1, rounds_h=1)
        if cross is not None and cross > noise.PRIOR_SIGMA:
            for key in keys:
                floors[key] = NoiseFloor(sigma=cross, source="cross-section")

    for key in keys:
        hist = from_history.get((key, "time"))
        if hist is not None:
            floors[key] = hist
        floors.setdefault(key, NoiseFloor(sigma=noise.PRIOR_SIGMA, source="prior"))
    return floors


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
    raw = {
        k: _median_log(head[k].metrics["time"].rounds) - _median_log(base[k].metrics["time"].rounds)
        for k in timed
    }
    common = noise.common_factor(list(raw.values()), drift_limit=math.log1p(settings.threshold))
    common_log = common.log_ratio if common.applied else 0.0
    adjusted = {k: v - common_log for k, v in raw.items()}
    floors = _noise_floors(base, head, timed, adjusted, history)
    notes += _common_factor_warnings(common, settings.threshold)

    results: list[MetricResult] = []
    pending: list[tuple[int, SampledEstimate, float, NoiseFloor]] = []
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
            elif bm.rounds and hm.rounds:
                floor = floors.get(key) or NoiseFloor(sigma=noise.PRIOR_SIGMA, source="prior")
                estimate = estimate_sampled(
                    bm.rounds,
                    hm.rounds,
                    direction=bm.direction,
                    between_sigma=floor.sigma,
                    common_log=common_log,
                    settings=settings,
                    rng=rng,
                )
                pending.append((len(results), estimate, _threshold(floor, settings), floor))
                results.append(_plain(header, bm, hm, "inconclusive", ""))
            else:
                results.append(_valued(header, bm, hm, settings.threshold))

    if pending:
        q_values = scipy_stats.false_discovery_control([e.p_value for _, e, _, _ in pending])
        for (index, estimate, threshold, floor), q in zip(pending, q_values, strict=True):
            verdict, reason = decide_sampled(
                estimate, q_value=float(q), threshold=threshold, alpha=settings.alpha
            )
            prior = results[index]
            b, h = base.get(prior.key), head.get(prior.key)
            attribution = []
            if verdict == "regression" and b and h and b.ops is not None and h.ops is not None:
                attribution = attribute(b.ops, h.ops)
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
            )

    return Comparison(
        base=_side_info(base_docs, base_label),
        head=_side_info(head_docs, head_label),
        alpha=settings.alpha,
        threshold=settings.threshold,
        warnings=notes,
        results=results,
        common_factor=common.ratio
        if common.benchmarks >= noise.MIN_BENCHMARKS_FOR_COMMON
        else None,
    )


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
        pooled = np.concatenate(metric.rounds)
        q1, median, q3 = np.quantile(pooled, [0.25, 0.5, 0.75])
        return SideSummary(
            n=int(pooled.size), median=float(median), iqr=float(q3 - q1), rounds=len(metric.rounds)
        )
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


def _common_factor_warnings(common: noise.CommonFactor, threshold: float) -> list[str]:
    if common.benchmarks < noise.MIN_BENCHMARKS_FOR_COMMON or abs(common.log_ratio) < 0.01:
        return []
    change = f"{common.ratio - 1:+.1%}"
    if common.applied:
        return [
            f"the head run was {change} off the base run across all {common.benchmarks} "
            "benchmarks (the machine's drift, within the threshold): each benchmark is "
            "judged relative to it"
        ]
    return [
        f"every benchmark moved together by {change} across {common.benchmarks} "
        f"benchmarks, beyond the {threshold:.1%} threshold: a change that affects "
        "everything, or a different machine; each benchmark is judged on its raw ratio"
    ]
