"""The parts of the PR comment, each as markdown lines (assembled by `report.markdown`).

Δ and its 95% CI in every table are the comparator's one estimate (`MetricResult.ratio` and
`.ci`, in the metric's own direction); where its baseline pooled the base branch's history, Δ
carries a † and a note says so, since it then differs from base vs head as shown.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from perfgate.report.trend import mermaid_chart, result_sparkline, trend_page_url
from perfgate.report.units import format_bytes_change, format_change, format_ci, format_value
from perfgate.report.untrusted import code_span, plain_text
from perfgate.report.verdicts import (
    ICONS,
    affected_list,
    allocating_ops_phrase,
    levels_note,
    pooled_history_runs,
    raw_change,
    raw_ci,
    shifted,
    short_reason,
    verdict_label,
)
from perfgate.stats.model import VERDICTS, Comparison, MetricResult

TOP_OPS_SHOWN = 5
WARNINGS_SHOWN = 20
WARNING_CHARS = 600
METRICS_NAMED = 6
# Other results (errors, missing, new, inconclusive) listed in the folded table: a few when
# nothing changed, so the comment stays short whatever the suite's size.
OTHERS_SHOWN = 20
OTHERS_SHOWN_QUIET = 3
POOLED_MARK = "†"
_COLUMNS = ("benchmark", "metric", "base", "head", "Δ", "95% CI")
_ALIGN = ("---", "---", "---:", "---:", "---:", "---:")
# The other results, in the order a reader should see them.
_OTHER_ORDER = {"error": 0, "missing": 1, "new": 2, "inconclusive": 3}


@dataclass(frozen=True)
class Links:
    """Where a reader goes next: the CI run that measured, the dashboard's comparison page (its
    trend pages, one per benchmark, are linked from each changed row)."""

    run_url: str | None = None
    dashboard_url: str | None = None

    def trend_url(self, result: MetricResult, branch: str | None) -> str | None:
        return trend_page_url(
            self.dashboard_url, key=result.key, metric=result.metric, branch=branch
        )


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _take(rows: list[str], budget: int) -> list[str]:
    """The leading rows that fit in `budget` characters."""
    taken: list[str] = []
    used = 0
    for row in rows:
        if used + len(row) + 1 > budget:
            break
        taken.append(row)
        used += len(row) + 1
    return taken


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _value(value: float | None, unit: str) -> str:
    # The unit is the results document's own word for it.
    return plain_text(format_value(value, unit))


def _delta(result: MetricResult) -> str:
    """Δ from the comparator's estimate, † when its baseline pooled history."""
    change = format_change(raw_change(result))
    return f"{change} {POOLED_MARK}" if pooled_history_runs(result) else change


def _cells(result: MetricResult) -> list[str]:
    """benchmark, metric, base, head, Δ, 95% CI."""
    return [
        code_span(result.key),
        plain_text(result.metric),
        _value(result.base.median, result.unit) if result.base else "—",
        _value(result.head.median, result.unit) if result.head else "—",
        _delta(result),
        format_ci(raw_ci(result)),
    ]


def _verdict_cell(result: MetricResult) -> str:
    """`🟡 inconclusive · possible regression · speed levels 1.00x / 1.31x`: words, not icons."""
    note = levels_note(result)
    text = f"{ICONS[result.verdict]} {verdict_label(result)}"
    return f"{text} · {note}" if note else text


def _trend_cell(result: MetricResult, links: Links, branch: str | None) -> str:
    """The sparkline of recent history, as a link to the trend page when there is a dashboard."""
    spark = result_sparkline(result)
    url = links.trend_url(result, branch)
    return f"[{spark or 'trend'}]({url})" if url else spark


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _pooled_note(results: list[MetricResult], branch: str | None) -> list[str]:
    runs = sorted({n for r in results if (n := pooled_history_runs(r))})
    if not runs:
        return []
    count = str(runs[0]) if len(runs) == 1 else f"{runs[0]}–{runs[-1]}"
    where = code_span(branch) if branch else "the base branch"
    return [
        "",
        f"{POOLED_MARK} Δ and CI are against the baseline: base pooled with its {count} earlier "
        f"runs of {where} (the base column is this run alone).",
    ]


def _table(
    results: list[MetricResult], *, links: Links, branch: str | None, why: bool = False
) -> tuple[list[str], list[str]]:
    """A table of results: its head lines and one row per result."""
    trend = [_trend_cell(r, links, branch) for r in results]
    with_trend = any(trend)
    columns = [*_COLUMNS, *(["trend"] if with_trend else []), "verdict", *(["why"] if why else [])]
    align = [*_ALIGN, *(["---"] if with_trend else []), "---", *(["---"] if why else [])]
    rows = []
    for result, cell in zip(results, trend, strict=True):
        cells = [*_cells(result), *([cell] if with_trend else []), _verdict_cell(result)]
        rows.append(_row([*cells, *([plain_text(short_reason(result))] if why else [])]))
    return [_row(columns), "|" + "|".join(align) + "|"], rows


def _fitted_table(
    results: list[MetricResult],
    *,
    links: Links,
    branch: str | None,
    budget: int,
    what: str,
    why: bool = False,
) -> list[str]:
    """A table cut to `budget` with a note saying how much was left out, and the † note."""
    head, rows = _table(results, links=links, branch=branch, why=why)
    fitted = _take(rows, budget - _size(head))
    lines = [*head, *fitted, *_pooled_note(results[: len(fitted)], branch)]
    if len(fitted) < len(rows):
        lines += [
            "",
            f"_{len(rows) - len(fitted)} more {what} left out here to stay under GitHub's "
            "comment size limit; see the comparison JSON._",
        ]
    return [*lines, ""]


def compared_line(comparison: Comparison, *, quiet: bool) -> str:
    """`34 benchmarks compared, 96 results (flops, peak_memory, time).`, and what narrows
    inconclusive results when there are any."""
    results = comparison.results
    if not results:
        return "No results on either side."
    metrics = sorted({r.metric for r in results})
    named = ", ".join(plain_text(m) for m in metrics[:METRICS_NAMED])
    if len(metrics) > METRICS_NAMED:
        named += f" and {len(metrics) - METRICS_NAMED} more"
    line = (
        f"{_plural(len({r.key for r in results}), 'benchmark')} compared, "
        f"{_plural(len(results), 'result')} ({named})"
    )
    line += ": no benchmark got measurably slower or faster." if quiet else "."
    if any(r.verdict == "inconclusive" and r.flag is None and not r.informational for r in results):
        line += (
            " Inconclusive results narrow with more rounds (`perfgate run --rounds 3`) or "
            "base-branch history."
        )
    return line


def shift_lines(comparison: Comparison) -> list[str]:
    """The benchmarks that moved with a suite-wide shift (each is also judged on its own)."""
    common = shifted(comparison)
    if common is None or not common.affected:
        return []
    return [
        f"Moved together ({format_change(common.ratio)}, 95% CI {format_ci(common.ci)}): "
        f"{affected_list(common, name=code_span)}.",
        "",
    ]


def changes_table(
    changed: list[MetricResult], *, links: Links, branch: str | None, budget: int
) -> list[str]:
    """Regressions (worst first), then improvements (best first)."""
    if not changed:
        return []
    return _fitted_table(changed, links=links, branch=branch, budget=budget, what="changes")


def _calls_cell(base_count: float | None, head_count: float | None) -> str:
    """`0 → 1`, `2`, or `—` without counts."""
    if base_count is None or head_count is None:
        return "—"
    if base_count != head_count:
        return f"{base_count:g} → {head_count:g}"
    return f"{head_count:g}"


def _ops(result: MetricResult) -> list[str]:
    lines = [
        "| op | base µs/call | head µs/call | Δ µs | calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for delta in result.attribution[:TOP_OPS_SHOWN]:
        lines.append(
            f"| {code_span(delta.op)} | {delta.base_us:.1f} | {delta.head_us:.1f} | "
            f"{delta.delta_us:+.1f} | {_calls_cell(delta.base_count, delta.head_count)} |"
        )
    more = len(result.attribution) - TOP_OPS_SHOWN
    if more > 0:
        lines += ["", f"_{more} more ops moved less._"]
    return lines


def _allocating_ops(result: MetricResult) -> list[str]:
    """The ops behind a memory change, with their exact bytes allocated per call."""
    lines = [
        "| op | base B/call | head B/call | Δ | calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for delta in result.allocation_attribution[:TOP_OPS_SHOWN]:
        lines.append(
            f"| {code_span(delta.op)} | {delta.base_bytes:,} | {delta.head_bytes:,} | "
            f"{format_bytes_change(delta.delta_bytes)} | "
            f"{_calls_cell(delta.base_count, delta.head_count)} |"
        )
    more = len(result.allocation_attribution) - TOP_OPS_SHOWN
    if more > 0:
        lines += ["", f"_{more} more ops moved less._"]
    return lines


def _evidence(result: MetricResult) -> str:
    """`+60.9% (95% CI +56.8% … +64.8%), beyond the 3.0% threshold (q=1e-08); noise ±0.4% …`;
    a memory change names its allocating ops: `…; allocated by `aten::clone` +1.5 MiB …`."""
    if result.ci is None:
        ops = allocating_ops_phrase(result, name=code_span)
        return f"{plain_text(result.reason)}; {ops}" if ops else plain_text(result.reason)
    text = (
        f"{format_change(raw_change(result))} (95% CI {format_ci(raw_ci(result))}), "
        f"{plain_text(short_reason(result))}"
    )
    return f"{text}; noise {plain_text(result.noise)}" if result.noise else text


def _chart(results: list[MetricResult], branch: str | None) -> list[str]:
    """The first trend chart among a benchmark's regressed metrics, folded."""
    for result in results:
        chart = mermaid_chart(result)
        if chart is None:
            continue
        # This line is raw HTML on GitHub (backticks show as typed) and markdown on the
        # dashboard: the branch is escaped with character references, inert in both.
        where = f"`{plain_text(branch)}`" if branch else "the base branch"
        return [
            f"<details><summary>Trend of {plain_text(result.metric)}: last "
            f"{len(result.history)} runs of {where}, then base and head</summary>",
            "",
            chart,
            "",
            "</details>",
            "",
        ]
    return []


def _benchmark_section(results: list[MetricResult], branch: str | None) -> list[str]:
    """One regressed benchmark: what moved in each metric, the ops behind it once, its trend."""
    moved = ", ".join(f"{plain_text(r.metric)} {format_change(raw_change(r))}" for r in results)
    spark = next((s for r in results if (s := result_sparkline(r))), "")
    lines = [f"**{code_span(results[0].key)}**: {moved} {spark}".rstrip(), ""]
    lines += [f"- {plain_text(r.metric)}: {_evidence(r)}" for r in results]
    lines.append("")
    attributed = next((r for r in results if r.attribution), None)
    if attributed is not None:
        lines += ["Ops that moved most (self time per call):", "", *_ops(attributed), ""]
    # allocated_bytes and peak_allocated_bytes name the same ops: one table for both.
    allocating = next((r for r in results if r.allocation_attribution), None)
    if allocating is not None:
        lines += [
            "Ops whose allocations moved (bytes allocated per call):",
            "",
            *_allocating_ops(allocating),
            "",
        ]
    return lines + _chart(results, branch)


def regression_details(
    regressions: list[MetricResult], *, branch: str | None, budget: int
) -> list[str]:
    """One section per regressed benchmark, worst first, as many as fit in `budget`."""
    groups: dict[str, list[MetricResult]] = {}
    for result in regressions:
        groups.setdefault(result.key, []).append(result)
    lines: list[str] = []
    sections = list(groups.values())
    for index, results in enumerate(sections):
        block = _benchmark_section(results, branch)
        if _size(lines) + _size(block) > budget:
            left = _plural(len(sections) - index, "more regressed benchmark")
            return [*lines, f"_Details of {left} left out to save space._", ""]
        lines += block
    return lines


def possible_section(
    possible: list[MetricResult], *, links: Links, branch: str | None, budget: int
) -> list[str]:
    """The possible regressions: big changes the evidence cannot call yet, each with why."""
    if not possible:
        return []
    count = len(possible)
    intro = (
        f"**{_plural(count, 'possible regression')}**: changed far beyond the threshold, but "
        "the 95% CI still reaches below it; more rounds (`perfgate run --rounds 3`) decide "
        f"whether {'it is' if count == 1 else 'they are'} real."
    )
    table = _fitted_table(
        possible,
        links=links,
        branch=branch,
        budget=budget - len(intro) - 2,
        what="possible regressions",
        why=True,
    )
    return [intro, "", *table]


def warning_lines(comparison: Comparison) -> list[str]:
    """The comparison's own warnings (escaped), at most `WARNINGS_SHOWN`."""
    notes = [
        plain_text(w if len(w) <= WARNING_CHARS else w[: WARNING_CHARS - 1] + "…")
        for w in comparison.warnings
    ]
    if not notes:
        return []
    shown = notes[:WARNINGS_SHOWN]
    lines = ["**Warnings**", "", *(f"- {note}" for note in shown)]
    if len(notes) > len(shown):
        lines.append(f"- _{len(notes) - len(shown)} more warnings in the comparison JSON_")
    return [*lines, ""]


def _moved(result: MetricResult) -> float:
    change = raw_change(result)
    if change is None or change <= 0 or not math.isfinite(change):
        return 0.0
    return abs(math.log(change))


def _aside(result: MetricResult) -> bool:
    """An informational result that is inconclusive: counted in the comment, not listed."""
    return result.informational and result.verdict == "inconclusive"


def others_folded(
    ordered: list[MetricResult], *, quiet: bool, branch: str | None, budget: int
) -> list[str]:
    """Errors, missing, new and inconclusive results (largest moves first), each with why;
    unchanged ones only counted. A few rows when nothing changed, more otherwise.

    An informational metric that did not settle (peak RSS, a compile's wall seconds) is
    counted, not listed: it is inconclusive by nature, and listing it would bury the results a
    reader can act on. Its errors, missing and new results are listed like any other.
    """
    others = sorted(
        (r for r in ordered if r.verdict in _OTHER_ORDER and r.flag is None and not _aside(r)),
        key=lambda r: (_OTHER_ORDER[r.verdict], -_moved(r), r.key, r.metric),
    )
    if not others:
        return []
    shown = others[: OTHERS_SHOWN_QUIET if quiet else OTHERS_SHOWN]
    head, rows = _table(shown, links=Links(), branch=branch, why=True)
    fitted = _take(rows, budget - _size(head))
    counts = Counter(r.verdict for r in others)
    summary = "Other results: " + ", ".join(
        f"{counts[v]:,} {'errors' if v == 'error' and counts[v] > 1 else v}"
        for v in VERDICTS
        if counts[v]
    )
    unchanged = sum(r.verdict == "unchanged" for r in ordered)
    rest = f"; {unchanged:,} unchanged" if unchanged else ""
    informational = sum(_aside(r) for r in ordered)
    if informational:
        rest += f"; {informational:,} informational, not listed"
    if not fitted:
        return [f"_{summary}{rest}: not listed, to stay under GitHub's comment size limit._", ""]
    if len(fitted) < len(others):
        summary += f" ({len(fitted)} shown)"
    summary += rest
    pooled = _pooled_note(shown[: len(fitted)], branch)
    return [
        f"<details><summary>{summary}</summary>",
        "",
        *head,
        *fitted,
        *pooled,
        "",
        "</details>",
        "",
    ]


def footer_lines(comparison: Comparison, links: Links) -> list[str]:
    parts = [
        f"alpha {comparison.alpha:g} (Benjamini-Hochberg), threshold "
        f"{comparison.threshold:.1%}; regressions need both"
    ]
    if links.run_url:
        parts.append(f"[CI run]({links.run_url})")
    if links.dashboard_url:
        parts.append(f"[dashboard]({links.dashboard_url})")
    parts.append("perfgate")
    return [f"<sub>{' · '.join(parts)}</sub>"]
