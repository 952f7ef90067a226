"""The comparison as GitHub markdown: the PR comment body and the job summary (no I/O here).

Layout: the verdict line; the benchmarks that moved with a suite-wide shift; the table of
regressions, possible regressions and improvements (with a trend sparkline when the base branch
has history); per regression and possible regression the ops that moved and a mermaid trend
chart; warnings; every result folded in `<details>`; links to the CI run and the dashboard. A
long suite is cut to fit GitHub's 65,536-character comment limit, least important parts first,
with a note saying what was left out.

Every string that came from a results document (keys, metric and op names, units, branches,
labels, warnings, noise notes) goes through `report.untrusted`: names as code spans, the rest as
escaped text, so a hostile name renders as itself and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.report.trend import mermaid_chart, result_sparkline
from perfgate.report.units import format_change, format_ci, format_value
from perfgate.report.untrusted import code_span, plain_text
from perfgate.report.verdicts import (
    ICONS,
    affected_list,
    headline_icon,
    levels_note,
    raw_ci,
    raw_ratio,
    severity_order,
    shifted,
    short_commit,
    summary_phrase,
    verdict_label,
)
from perfgate.stats.model import POSSIBLE_REGRESSION, Comparison, MetricResult

# GitHub refuses comments over 65,536 characters; stay clear of it with room for a marker.
COMMENT_LIMIT = 60_000
TOP_OPS_SHOWN = 5
WARNINGS_SHOWN = 20
WARNING_CHARS = 600
NOISY_NAMED = 5
# The changes table may take this share of the budget; the rest goes to details and the full table.
CHANGES_SHARE = 0.45

_HEAD = "| benchmark | metric | base | head | Δ | 95% CI | verdict |"
_RULE = "|---|---|---:|---:|---:|---:|---|"


@dataclass(frozen=True)
class Links:
    """Where a reader goes next: the CI run that measured, the dashboard's comparison page."""

    run_url: str | None = None
    dashboard_url: str | None = None


def _side(commit: str | None, label: str | None) -> str:
    """`` `abc1234` (merge-base) ``: a side's short commit and what it is."""
    text = code_span(short_commit(commit))
    return f"{text} ({plain_text(label)})" if label else text


def headline(comparison: Comparison) -> str:
    """The one line a reviewer acts on."""
    return (
        f"{headline_icon(comparison)} {summary_phrase(comparison)} · base "
        f"{_side(comparison.base.commit, comparison.base.label)} → head "
        f"{_side(comparison.head.commit, comparison.head.label)}"
    )


def _value(value: float | None, unit: str) -> str:
    # The unit is the results document's own word for it.
    return plain_text(format_value(value, unit))


def _verdict_cell(result: MetricResult) -> str:
    """`🟡 inconclusive · possible regression · speed levels 1.00x / 1.31x`: words, not icons."""
    note = levels_note(result)
    text = f"{ICONS[result.verdict]} {verdict_label(result)}"
    return f"{text} · {note}" if note else text


def _row(result: MetricResult, *, trend: bool = False) -> str:
    base = _value(result.base.median, result.unit) if result.base else "—"
    head = _value(result.head.median, result.unit) if result.head else "—"
    row = (
        f"| {code_span(result.key)} | {plain_text(result.metric)} | {base} | {head} | "
        f"{format_change(raw_ratio(result))} | {format_ci(raw_ci(result))} | "
        f"{_verdict_cell(result)} |"
    )
    return row + f" {result_sparkline(result)} |" if trend else row


def _shift(comparison: Comparison) -> list[str]:
    """The benchmarks that moved with a suite-wide shift (each is also judged on its own)."""
    common = shifted(comparison)
    if common is None or not common.affected:
        return []
    return [
        f"Moved together ({format_change(common.ratio)}, 95% CI {format_ci(common.ci)}): "
        f"{affected_list(common, name=code_span)}.",
        "",
    ]


def _ops(result: MetricResult) -> list[str]:
    if not result.attribution:
        return []
    lines = [
        "| op | base µs/call | head µs/call | Δ µs | calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for delta in result.attribution[:TOP_OPS_SHOWN]:
        calls = (
            f"{delta.base_count:g} → {delta.head_count:g}"
            if delta.base_count != delta.head_count
            else f"{delta.head_count:g}"
        )
        lines.append(
            f"| {code_span(delta.op)} | {delta.base_us:.1f} | {delta.head_us:.1f} | "
            f"{delta.delta_us:+.1f} | {calls} |"
        )
    more = len(result.attribution) - TOP_OPS_SHOWN
    if more > 0:
        lines += ["", f"_{more} more ops moved less._"]
    return lines


def _regression_details(result: MetricResult, base_branch: str | None) -> list[str]:
    """What a reviewer needs to start on a (possible) regression: the ops that moved, its trend."""
    spark = result_sparkline(result)
    title = (
        f"**{code_span(result.key)} {plain_text(result.metric)} "
        f"{format_change(raw_ratio(result))}**"
    )
    if result.flag is not None:
        title += f" ({verdict_label(result)})"
    lines = [f"{title} {spark}".rstrip(), ""]
    if result.noise:
        lines += [f"Noise: {plain_text(result.noise)}.", ""]
    ops = _ops(result)
    if ops:
        lines += ["Ops that moved most (self time per call):", "", *ops, ""]
    elif result.exact or result.flag is not None:
        lines += [plain_text(result.reason), ""]
    chart = mermaid_chart(result)
    if chart:
        # This line is raw HTML on GitHub (backticks show as typed) and markdown on the
        # dashboard: the branch is escaped with character references, inert in both.
        where = f"`{plain_text(base_branch)}`" if base_branch else "the base branch"
        lines += [
            f"<details><summary>Trend: last {len(result.history)} runs of {where}, then "
            "base and head</summary>",
            "",
            chart,
            "",
            "</details>",
            "",
        ]
    return lines


def _named(result: MetricResult) -> str:
    return f"{code_span(result.key)} {plain_text(result.metric)}"


def _warnings(comparison: Comparison) -> list[str]:
    """The warnings list, as markdown lines: the comparison's own warnings (escaped), then
    perfgate's notes on possible regressions and noisy benchmarks."""
    notes = [
        plain_text(w if len(w) <= WARNING_CHARS else w[: WARNING_CHARS - 1] + "…")
        for w in comparison.warnings
    ]
    possible = comparison.possible_regressions()
    if possible:
        named = ", ".join(_named(r) for r in possible[:NOISY_NAMED])
        more = f" and {len(possible) - NOISY_NAMED} more" if len(possible) > NOISY_NAMED else ""
        notes.append(
            f"{len(possible)} possible {'regression' if len(possible) == 1 else 'regressions'} "
            f"(changed far beyond the threshold, but the 95% CI still reaches below it): "
            f"{named}{more}; more rounds (`perfgate run --rounds 3`) decide whether it is real"
        )
    noisy = [r for r in comparison.results if r.verdict == "inconclusive" and r.flag is None]
    if noisy:
        named = ", ".join(_named(r) for r in noisy[:NOISY_NAMED])
        more = f" and {len(noisy) - NOISY_NAMED} more" if len(noisy) > NOISY_NAMED else ""
        notes.append(
            f"{len(noisy)} inconclusive (too noisy to decide at this threshold): {named}{more}; "
            "more rounds (`perfgate run --rounds 3`) or base-branch history narrow the intervals"
        )
    if not notes:
        return []
    shown = notes[:WARNINGS_SHOWN]
    lines = ["**Warnings**", "", *(f"- {note}" for note in shown)]
    if len(notes) > len(shown):
        lines.append(f"- _{len(notes) - len(shown)} more warnings in the comparison JSON_")
    return [*lines, ""]


def _footer(comparison: Comparison, links: Links) -> list[str]:
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


def render_markdown(
    comparison: Comparison, *, limit: int = COMMENT_LIMIT, links: Links | None = None
) -> str:
    """The PR comment / job summary for `comparison`, at most `limit` characters."""
    links = links or Links()
    ordered = severity_order(comparison.results)
    changed = [
        r
        for r in ordered
        if r.verdict in ("regression", "improvement") or r.flag == POSSIBLE_REGRESSION
    ]
    # Regressions and possible regressions, worst first: each gets its ops and trend.
    regressions = [r for r in changed if r.verdict != "improvement"]

    top = [f"### {headline(comparison)}", "", *_shift(comparison)]
    warnings = _warnings(comparison)
    footer = _footer(comparison, links)
    # Room kept for notes about what was cut and the folded table's frame.
    reserve = 600
    budget = limit - _size(top) - _size(warnings) - _size(footer) - reserve

    changes: list[str] = []
    if changed:
        trend = any(result_sparkline(r) for r in changed)
        head = [_HEAD + (" trend |" if trend else ""), _RULE + ("---|" if trend else "")]
        rows = [_row(r, trend=trend) for r in changed]
        fitted = _take(rows, int(budget * CHANGES_SHARE) - _size(head))
        changes = [*head, *fitted]
        if len(fitted) < len(rows):
            changes += [
                "",
                f"_{len(rows) - len(fitted)} more changes left out here to stay under GitHub's "
                "comment size limit; see the full table below and the comparison JSON._",
            ]
        changes.append("")
    else:
        changes = ["No benchmark got measurably slower or faster.", ""]
    budget -= _size(changes)

    details: list[str] = []
    left_out = 0
    base_branch = comparison.base.branch
    for result in regressions:
        block = _regression_details(result, base_branch)
        # Details may use half of what is left; the full table gets the rest.
        if _size(details) + _size(block) > budget // 2:
            left_out = len(regressions) - regressions.index(result)
            break
        details += block
    if left_out:
        details += [f"_Details of {left_out} more regressions left out to save space._", ""]
    budget -= _size(details)

    table_rows = _take([_row(r) for r in ordered], budget)
    table = [
        f"<details><summary>All {len(ordered)} results</summary>",
        "",
        _HEAD,
        _RULE,
        *table_rows,
    ]
    if len(table_rows) < len(ordered):
        table += [
            "",
            f"_{len(ordered) - len(table_rows)} more results left out to stay under GitHub's "
            "comment size limit; see the comparison JSON._",
        ]
    table += ["", "</details>", ""]

    text = "\n".join([*top, *changes, *details, *warnings, *table, *footer]) + "\n"
    if len(text) > limit:
        # Only reachable with a tiny limit: keep the verdict and say where the rest is.
        note = "\n\n_Cut to fit GitHub's size limit; see the comparison JSON._\n"
        text = text[: max(0, limit - len(note))] + note
    return text
