"""The comparison document (`perfgate/comparison@1`, docs/architecture.md §9): to JSON and back."""

from __future__ import annotations

from typing import Any

from perfgate.errors import DocumentError
from perfgate.stats.model import (
    COMPARISON_SCHEMA,
    POSSIBLE_REGRESSION,
    VERDICTS,
    CommonFinding,
    Comparison,
    Flag,
    MetricResult,
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


def _common_from(data: dict[str, Any] | None) -> CommonFinding | None:
    if data is None:
        return None
    return CommonFinding(
        ratio=float(data["ratio"]),
        ci=(float(data["ci"][0]), float(data["ci"][1])),
        benchmarks=int(data["benchmarks"]),
        verdict=data["verdict"],
        reason=str(data["reason"]),
        noise=str(data["noise"]),
        # Absent from documents written before the shift named its benchmarks.
        affected=tuple(str(key) for key in data.get("affected") or ()),
    )


def comparison_from_json(data: Any, *, source: str = "") -> Comparison:
    """Read a comparison document back (what `perfgate comment` consumes)."""
    try:
        if not isinstance(data, dict) or data.get("schema") != COMPARISON_SCHEMA:
            raise DocumentError(f"not a {COMPARISON_SCHEMA} document", path="schema", source=source)
        results = [_result(r) for r in data["results"]]
        return Comparison(
            base=SideInfo(**data["base"]),
            head=SideInfo(**data["head"]),
            alpha=float(data["settings"]["alpha"]),
            threshold=float(data["settings"]["threshold"]),
            warnings=[str(w) for w in data.get("warnings", [])],
            results=results,
            common_factor=_common_from(data.get("common_factor")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DocumentError(
            f"malformed comparison document ({type(exc).__name__}: {exc})", source=source
        ) from None


def _summary(data: dict[str, Any] | None) -> SideSummary | None:
    return SideSummary(**data) if data is not None else None


_FLAGS: dict[str, Flag] = {POSSIBLE_REGRESSION: POSSIBLE_REGRESSION}


def _flag(value: Any) -> Flag | None:
    if value is None:
        return None
    if value not in _FLAGS:
        raise ValueError(f"unknown flag {value!r}")
    return _FLAGS[value]


def _result(data: dict[str, Any]) -> MetricResult:
    if data["verdict"] not in VERDICTS:
        raise ValueError(f"unknown verdict {data['verdict']!r}")
    return MetricResult(
        key=data["key"],
        benchmark=data["benchmark"],
        params=data["params"],
        metric=data["metric"],
        unit=data["unit"],
        direction=data["direction"],
        exact=bool(data["exact"]),
        base=_summary(data["base"]),
        head=_summary(data["head"]),
        ratio=data["ratio"],
        ci=(float(data["ci"][0]), float(data["ci"][1])) if data["ci"] else None,
        p_value=data["p_value"],
        q_value=data["q_value"],
        threshold=data["threshold"],
        verdict=data["verdict"],
        reason=data["reason"],
        noise=data.get("noise"),
        attribution=[OpDelta(**d) for d in data.get("attribution", [])],
        history=[float(v) for v in data.get("history") or []],
        # Both absent from documents written before flags and speed levels existed.
        flag=_flag(data.get("flag")),
        levels=tuple(float(v) for v in data.get("levels") or ()),
        baseline_runs=int(data.get("baseline_runs") or 0),
    )
