"""Shared wording for reports: the summary line, verdict labels, ordering, raw-direction CIs."""

from __future__ import annotations

from collections.abc import Callable

from perfgate.stats.model import (
    POSSIBLE_REGRESSION,
    VERDICTS,
    CommonFinding,
    Comparison,
    Flag,
    MetricResult,
)

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
# What a flag reads as, after the verdict: "inconclusive · possible regression".
FLAG_WORDS: dict[Flag, str] = {POSSIBLE_REGRESSION: "possible regression"}
# The headline's icon for a possible regression: needs a look, but not a proven regression (⚠️).
POSSIBLE_REGRESSION_ICON = "🟡"
# Benchmarks of a suite-wide shift named in a report before "and N more".
AFFECTED_SHOWN = 8


def verdict_label(result: MetricResult) -> str:
    """The verdict in words, with its flag: `regression`, `inconclusive · possible regression`."""
    if result.flag is None:
        return result.verdict
    return f"{result.verdict} · {FLAG_WORDS[result.flag]}"


def levels_note(result: MetricResult) -> str | None:
    """`speed levels 1.00x / 1.31x` for a benchmark whose processes land in one of several."""
    if not result.levels:
        return None
    return "speed levels " + " / ".join(f"{level:.2f}x" for level in result.levels)


def shifted(comparison: Comparison) -> CommonFinding | None:
    """The suite-wide shift when it is a finding of its own (a regression or an improvement)."""
    common = comparison.common_factor
    if common is not None and common.verdict in ("regression", "improvement"):
        return common
    return None


def shift_phrase(common: CommonFinding) -> str:
    """`8 of 13 benchmarks +24.0% together` (`all 13 ...` when no affected list was given)."""
    moved = f"{len(common.affected)} of " if common.affected else "all "
    return f"{moved}{common.benchmarks} benchmarks {common.ratio - 1:+.1%} together"


def affected_list(
    common: CommonFinding, *, shown: int = AFFECTED_SHOWN, name: Callable[[str], str] = str
) -> str:
    """The benchmarks that moved with a shift, the first `shown` by name: a, b and 3 more.

    `name` writes one key as its report needs it (a markdown code span, a terminal's escape).
    """
    names = ", ".join(name(key) for key in common.affected[:shown])
    more = len(common.affected) - shown
    return f"{names} and {more} more" if more > 0 else names


def _count(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def summary_phrase(comparison: Comparison) -> str:
    """`2 regressions, 1 possible regression, 1 improvement, 31 unchanged` (zero counts left out).

    A suite-wide shift that is a finding of its own comes first: "8 of 13 benchmarks +24.0%
    together". Possible regressions follow the regressions and are not counted again among the
    inconclusive, so the counts add up to the number of results.
    """
    parts = []
    common = shifted(comparison)
    if common is not None:
        parts.append(shift_phrase(common))
    summary = comparison.summary()
    flagged = comparison.possible_regressions()
    for result in flagged:
        summary[result.verdict] -= 1
    possible = len(flagged)
    for verdict, count in summary.items():
        if count:
            parts.append(_count(count, *_NOUNS[verdict]))
        if verdict == "regression" and possible:
            parts.append(_count(possible, "possible regression", "possible regressions"))
    return ", ".join(parts) if parts else "nothing to compare"


def headline_icon(comparison: Comparison) -> str:
    """⚠️ regressions, ❌ errors, 🟡 possible regressions, ➖ nothing compared, else ✅."""
    summary = comparison.summary()
    if comparison.has_regression():
        return "⚠️"
    if summary["error"]:
        return "❌"
    if comparison.possible_regressions():
        return POSSIBLE_REGRESSION_ICON
    if sum(summary.values()) == 0:
        return "➖"
    return "✅"


def short_commit(commit: str | None) -> str:
    return commit[:7] if commit else "?"


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
    """Regressions (worst first), possible regressions (worst first), improvements (best first),
    then the rest by verdict and key."""
    # Flagged results rank right after the regressions, ahead of every plain verdict.
    rank = {verdict: i + 2 for i, verdict in enumerate(VERDICTS)}
    rank["regression"] = 0

    def key(result: MetricResult) -> tuple[int, float, str, str]:
        ratio = result.ratio if result.ratio is not None else 1.0
        flagged = result.flag == POSSIBLE_REGRESSION
        if result.verdict == "regression" or flagged:
            strength = -ratio
        elif result.verdict == "improvement":
            strength = ratio
        else:
            strength = 0.0
        return (1 if flagged else rank[result.verdict], strength, result.key, result.metric)

    return sorted(results, key=key)
