"""Shared wording for reports: the headline, verdict labels, ordering, raw-direction changes.

Counts are of benchmarks (keys): a benchmark stands as its most severe result, so one that got
slower in time and in op_count is one regression. Names reach the wording through the caller's
`name` and `text` functions (markdown escapes them; a terminal only keeps them on one line).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

from perfgate.report.units import format_bytes_change, format_change
from perfgate.stats.model import (
    POSSIBLE_REGRESSION,
    VERDICTS,
    CommonFinding,
    Comparison,
    Flag,
    MetricResult,
    OpBytesDelta,
    SideInfo,
)

_NOUNS = {
    "regression": ("regression", "regressions"),
    "possible regression": ("possible regression", "possible regressions"),
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
# Allocating ops named next to a memory verdict before "and N more".
ALLOCATING_OPS_NAMED = 3
# A reason in a table cell is cut to this many characters.
REASON_CHARS = 120
# A benchmark stands as its most severe result: any regression makes it a regression.
SEVERITY = (
    "regression",
    "possible regression",
    "error",
    "improvement",
    "missing",
    "new",
    "inconclusive",
    "unchanged",
)
# The order of the summary's counts.
_SUMMARY_ORDER = (
    "regression",
    "possible regression",
    "improvement",
    "unchanged",
    "inconclusive",
    "missing",
    "new",
    "error",
)
# What a reason repeats from elsewhere: its flag, the mirrored metric, and the change with its CI
# ("+5.0% (95% CI +1.0% to +9.0%)") that the table's Δ and CI columns show.
_REPEATED_PREFIXES = ("possible regression: ", "as time (the same blocks): ")
_CHANGE = r"[+-]\d[\d.,]*% \(95% CI [^)]*\)"
_CHANGE_FIRST = re.compile(rf"^{_CHANGE}[;,:]?\s*")
_CHANGE_LAST = re.compile(rf"[;,:]\s*{_CHANGE}$")


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
    return f"{count:,} {singular if count == 1 else plural}"


def standing(result: MetricResult) -> str:
    """A result's verdict, or `possible regression` for a flagged one."""
    return FLAG_WORDS[result.flag] if result.flag is not None else result.verdict


def benchmark_standings(results: Iterable[MetricResult]) -> dict[str, str]:
    """Each benchmark key's standing: the most severe of its results' (`SEVERITY`)."""
    standings: dict[str, str] = {}
    for result in results:
        mine = standing(result)
        known = standings.get(result.key)
        if known is None or SEVERITY.index(mine) < SEVERITY.index(known):
            standings[result.key] = mine
    return standings


def benchmark_counts(comparison: Comparison) -> dict[str, int]:
    """How many benchmarks stand at each verdict, in the summary's order (zeros included)."""
    counts = dict.fromkeys(_SUMMARY_ORDER, 0)
    for mine in benchmark_standings(comparison.results).values():
        counts[mine] += 1
    return counts


def worst_change(comparison: Comparison) -> MetricResult | None:
    """The result to name in the headline: the largest regression, else the largest possible
    regression (by the comparator's ratio, > 1 worse)."""
    for group in (comparison.regressions(), comparison.possible_regressions()):
        if group:
            return max(group, key=lambda r: r.ratio if r.ratio is not None else -math.inf)
    return None


def summary_phrase(
    comparison: Comparison, *, worst: Callable[[MetricResult], str] | None = None
) -> str:
    """`2 regressions, 1 possible regression, 1 improvement, 31 unchanged`: benchmarks, zero
    counts left out; with `worst`, the worst change in brackets after its count.

    A suite-wide shift that is a finding of its own comes first: "8 of 13 benchmarks +24.0%
    together". A benchmark counts once, at its most severe result, so the counts add up to the
    number of benchmarks.
    """
    parts = []
    common = shifted(comparison)
    if common is not None:
        parts.append(shift_phrase(common))
    named = worst_change(comparison) if worst else None
    for verdict, count in benchmark_counts(comparison).items():
        if not count:
            continue
        part = _count(count, *_NOUNS[verdict])
        if worst and named and standing(named) == verdict:
            part += f" ({'worst ' if count > 1 else ''}{worst(named)})"
        parts.append(part)
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


def headline(
    comparison: Comparison,
    *,
    name: Callable[[str], str] = str,
    text: Callable[[str], str] = str,
) -> str:
    """`⚠️ 2 regressions (worst k time +52.0%), 31 unchanged · base abc1234 (merge-base) → head
    def5678`: the one line a reviewer acts on. `name` writes a key or commit, `text` a label or
    metric name, each as the report needs it."""

    def change(result: MetricResult) -> str:
        return f"{name(result.key)} {text(result.metric)} {format_change(raw_change(result))}"

    def side(info: SideInfo) -> str:
        commit = name(short_commit(info.commit))
        return f"{commit} ({text(info.label)})" if info.label else commit

    return (
        f"{headline_icon(comparison)} {summary_phrase(comparison, worst=change)} · base "
        f"{side(comparison.base)} → head {side(comparison.head)}"
    )


def raw_ci(result: MetricResult) -> tuple[float, float] | None:
    """The CI of head/base in the metric's own direction (the stored CI is oriented > 1 worse)."""
    if result.ci is None:
        return None
    low, high = result.ci
    if result.direction == "lower":
        return (low, high)
    return (1.0 / high if high else math.inf, 1.0 / low if low else math.inf)


def raw_change(result: MetricResult) -> float | None:
    """Head/base in the metric's own direction, from the estimate its CI belongs to.

    That is the comparator's ratio (after round factors, against the baseline it chose, which
    may pool the base branch's history), not the ratio of the medians shown next to it; only
    where the comparator made no estimate (one value per side it did not judge, a failed side)
    is it the medians' ratio.
    """
    if result.ratio is not None:
        if result.direction == "lower":
            return result.ratio
        return 1.0 / result.ratio if result.ratio else math.inf
    if result.base is None or result.head is None or result.base.median == 0:
        return None
    return result.head.median / result.base.median


def pooled_history_runs(result: MetricResult) -> int | None:
    """How many history runs the comparator pooled with the base side into the baseline (so Δ
    is not against the base column alone); None when it did not."""
    return result.baseline_runs or None


def short_reason(result: MetricResult, *, limit: int = REASON_CHARS) -> str:
    """Why a result got its verdict, without the change and CI the table already shows:
    `not significant (q=0.41)`, `the CI straddles the 3.0% threshold`."""
    reason = result.reason
    for prefix in _REPEATED_PREFIXES:
        reason = reason.removeprefix(prefix)
    reason = _CHANGE_FIRST.sub("", reason, count=1)
    reason = _CHANGE_LAST.sub("", reason, count=1).strip() or result.reason
    return reason if len(reason) <= limit else reason[: limit - 1].rstrip() + "…"


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


def calls_phrase(base_count: float | None, head_count: float | None) -> str | None:
    """`0 → 1 calls`, `2 calls`; None without counts from both sides' profiles."""
    if base_count is None or head_count is None:
        return None
    if base_count != head_count:
        return f"{base_count:g} → {head_count:g} calls"
    return f"{head_count:g} call" + ("" if head_count == 1 else "s")


def allocating_op_phrase(delta: OpBytesDelta, *, name: Callable[[str], str] = str) -> str:
    """`aten::clone +1.5 MiB (0 → 1 calls)`: one op's move in bytes allocated per call."""
    calls = calls_phrase(delta.base_count, delta.head_count)
    text = f"{name(delta.op)} {format_bytes_change(delta.delta_bytes)}"
    return f"{text} ({calls})" if calls else text


def allocating_ops_phrase(
    result: MetricResult,
    *,
    shown: int = ALLOCATING_OPS_NAMED,
    name: Callable[[str], str] = str,
) -> str | None:
    """`allocated by aten::clone +1.5 MiB (0 → 1 calls)`: the ops behind a memory change, the
    largest `shown` by name; None when the result names none."""
    ops = result.allocation_attribution
    if not ops:
        return None
    named = ", ".join(allocating_op_phrase(d, name=name) for d in ops[:shown])
    more = len(ops) - shown
    return f"allocated by {named}" + (f" and {more} more ops" if more > 0 else "")
