"""The comparison document (`perfgate/comparison@1`, docs/architecture.md §9): to JSON and back.

Reading goes through the validator in `perfgate.report.comparison_schema`.
"""

from __future__ import annotations

from typing import Any

from perfgate.report.comparison_schema import (
    CommonModel,
    ResultModel,
    SideInfoModel,
    SideSummaryModel,
    validate_comparison,
)
from perfgate.stats.model import (
    COMPARISON_SCHEMA,
    CommonFinding,
    Comparison,
    MetricResult,
    OpBytesDelta,
    OpDelta,
    SideInfo,
    SideSummary,
)


def _side_summary(summary: SideSummary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {"n": summary.n, "median": summary.median, "iqr": summary.iqr, "rounds": summary.rounds}


def _side_info(info: SideInfo) -> dict[str, Any]:
    return {
        "commit": info.commit,
        "runs": list(info.runs),
        "branch": info.branch,
        "label": info.label,
    }


def result_to_json(result: MetricResult) -> dict[str, Any]:
    data = {
        "key": result.key,
        "benchmark": result.benchmark,
        "params": result.params,
        "metric": result.metric,
        "unit": result.unit,
        "direction": result.direction,
        "exact": result.exact,
        "base": _side_summary(result.base),
        "head": _side_summary(result.head),
        "ratio": result.ratio,
        "ci": list(result.ci) if result.ci else None,
        "p_value": result.p_value,
        "q_value": result.q_value,
        "threshold": result.threshold,
        "verdict": result.verdict,
        "reason": result.reason,
        "noise": result.noise,
        # "possible_regression" on an inconclusive result that must not read as a pass; else null.
        "flag": result.flag,
        "attribution": [
            {
                "op": d.op,
                "base_us": d.base_us,
                "head_us": d.head_us,
                "delta_us": d.delta_us,
                "base_count": d.base_count,
                "head_count": d.head_count,
            }
            for d in result.attribution
        ],
    }
    if result.history:
        # Optional: base-branch medians (oldest first) behind the comment's trend chart.
        data["history"] = list(result.history)
    if result.levels:
        # Optional: a benchmark's known speed levels (process modes), as ratios to its fastest.
        data["levels"] = list(result.levels)
    if result.baseline_runs:
        # Optional: history runs pooled with the base side into the baseline of `ratio`.
        data["baseline_runs"] = result.baseline_runs
    if result.informational:
        # Optional: a metric the documents declare informational (never acted on).
        data["informational"] = True
    if result.allocation_attribution:
        # Optional: a memory metric's allocating ops whose bytes per call moved.
        data["allocation_attribution"] = [
            {
                "op": d.op,
                "base_bytes": d.base_bytes,
                "head_bytes": d.head_bytes,
                "delta_bytes": d.delta_bytes,
                "base_count": d.base_count,
                "head_count": d.head_count,
            }
            for d in result.allocation_attribution
        ]
    return data


def comparison_to_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "schema": COMPARISON_SCHEMA,
        "base": _side_info(comparison.base),
        "head": _side_info(comparison.head),
        "settings": {"alpha": comparison.alpha, "threshold": comparison.threshold},
        "warnings": list(comparison.warnings),
        "summary": comparison.summary(),
        "common_factor": _common(comparison.common_factor),
        "results": [result_to_json(r) for r in comparison.results],
    }


def _common(finding: CommonFinding | None) -> dict[str, Any] | None:
    if finding is None:
        return None
    return {
        "ratio": finding.ratio,
        "ci": list(finding.ci),
        "benchmarks": finding.benchmarks,
        "verdict": finding.verdict,
        "reason": finding.reason,
        "noise": finding.noise,
        "affected": list(finding.affected),
    }


def comparison_from_json(data: Any, *, source: str = "") -> Comparison:
    """Read a comparison document back (what `perfgate comment` consumes).

    `validate_comparison` checks every field first, so a DocumentError names the bad one.
    """
    document = validate_comparison(data, source=source)
    return Comparison(
        base=_side_info_from(document.base),
        head=_side_info_from(document.head),
        alpha=document.settings.alpha,
        threshold=document.settings.threshold,
        warnings=list(document.warnings),
        results=[_result_from(r) for r in document.results],
        common_factor=_common_from(document.common_factor),
    )


def _side_info_from(info: SideInfoModel) -> SideInfo:
    return SideInfo(commit=info.commit, runs=list(info.runs), branch=info.branch, label=info.label)


def _summary_from(summary: SideSummaryModel | None) -> SideSummary | None:
    if summary is None:
        return None
    return SideSummary(n=summary.n, median=summary.median, iqr=summary.iqr, rounds=summary.rounds)


def _common_from(finding: CommonModel | None) -> CommonFinding | None:
    if finding is None:
        return None
    return CommonFinding(
        ratio=finding.ratio,
        ci=finding.ci,
        benchmarks=finding.benchmarks,
        verdict=finding.verdict,
        reason=finding.reason,
        noise=finding.noise,
        affected=tuple(finding.affected),
    )


def _result_from(result: ResultModel) -> MetricResult:
    return MetricResult(
        key=result.key,
        benchmark=result.benchmark,
        params=dict(result.params),
        metric=result.metric,
        unit=result.unit,
        direction=result.direction,
        exact=result.exact,
        base=_summary_from(result.base),
        head=_summary_from(result.head),
        ratio=result.ratio,
        ci=result.ci,
        p_value=result.p_value,
        q_value=result.q_value,
        threshold=result.threshold,
        verdict=result.verdict,
        reason=result.reason,
        noise=result.noise,
        attribution=[
            OpDelta(
                op=d.op,
                base_us=d.base_us,
                head_us=d.head_us,
                delta_us=d.delta_us,
                base_count=d.base_count,
                head_count=d.head_count,
            )
            for d in result.attribution
        ],
        history=list(result.history),
        flag=result.flag,
        levels=tuple(result.levels),
        baseline_runs=result.baseline_runs,
        informational=result.informational,
        allocation_attribution=[
            OpBytesDelta(
                op=d.op,
                base_bytes=d.base_bytes,
                head_bytes=d.head_bytes,
                delta_bytes=d.delta_bytes,
                base_count=d.base_count,
                head_count=d.head_count,
            )
            for d in result.allocation_attribution
        ],
    )
