"""Shared wording for reports: the summary line, verdict labels, ordering, raw-direction CIs."""

from __future__ import annotations

from perfgate.stats.model import VERDICTS, Comparison, MetricResult

_NOUNS = {
    "regression": ("regression", "regressions"),
    "improvement": ("improvement", "improvements"),
    "unchanged": ("unchanged", "unchanged"),
    "inconclusive": ("inconclusive", "inconclusive"),
    "missing": ("missing", "missing"),
    "new": ("new", "new"),
    "error": ("error", "errors"),
}
ICONS = {
    "regression": "🔴",
    "improvement": "🟢",
    "unchanged": "⚪",
    "inconclusive": "🟡",
    "missing": "⚫",
    "new": "🆕",
    "error": "❌",
}


def summary_phrase(comparison: Comparison) -> str:
    """`2 regressions, 1 improvement, 31 unchanged` (verdicts with a zero count are left out).

    A suite-wide shift that is a finding of its own comes first: "all 13 benchmarks +21% together".
    """
    parts = []
    common = comparison.common_factor
    if common is not None and common.verdict in ("regression", "improvement"):
        parts.append(f"all {common.benchmarks} benchmarks {common.ratio - 1:+.1%} together")
    for verdict, count in comparison.summary().items():
        if count:
            singular, plural = _NOUNS[verdict]
            parts.append(f"{count} {singular if count == 1 else plural}")
    return ", ".join(parts) if parts else "nothing to compare"


def headline_icon(comparison: Comparison) -> str:
    summary = comparison.summary()
    if comparison.has_regression():
        return "⚠️"
    if summary["error"]:
        return "❌"
    if sum(summary.values()) == 0:
        return "➖"
    return "✅"


def short_commit(commit: str | None) -> str:
    return commit[:7] if commit else "?"


def side_label(commit: str | None, label: str | None) -> str:
    text = f"`{short_commit(commit)}`"
    return f"{text} ({label})" if label else text


def raw_ci(result: MetricResult) -> tuple[float, float] | None:
    """The CI of head/base in the metric's own direction (the stored CI is oriented > 1 worse)."""
    if result.ci is None:
        return None
    low, high = result.ci
    if result.direction == "lower":
        return (low, high)
    return (1.0 / high if high else float("inf"), 1.0 / low if low else float("inf"))


def raw_ratio(result: MetricResult) -> float | None:
    if result.base is None or result.head is None or result.base.median == 0:
        return None
    return result.head.median / result.base.median


def severity_order(results: list[MetricResult]) -> list[MetricResult]:
    """Regressions (worst first), improvements (best first), then the rest by verdict and key."""
    rank = {verdict: i for i, verdict in enumerate(VERDICTS)}

    def key(result: MetricResult) -> tuple[int, float, str, str]:
        ratio = result.ratio if result.ratio is not None else 1.0
        strength = -ratio if result.verdict == "regression" else ratio
        if result.verdict not in ("regression", "improvement"):
            strength = 0.0
        return (rank[result.verdict], strength, result.key, result.metric)

    return sorted(results, key=key)
