"""The comparison as GitHub markdown: the PR comment body and the job summary (no I/O here)."""

from __future__ import annotations

from perfgate.report.units import format_change, format_ci, format_value
from perfgate.report.verdicts import (
    ICONS,
    headline_icon,
    raw_ci,
    raw_ratio,
    severity_order,
    side_label,
    summary_phrase,
)
from perfgate.stats.model import Comparison, MetricResult

# GitHub refuses comments over 65,536 characters; stay clear of it with room for a footer.
COMMENT_LIMIT = 60_000
TOP_OPS_SHOWN = 5

_TABLE_HEAD = [
    "| benchmark | metric | base | head | Δ | 95% CI | verdict |",
    "|---|---|---:|---:|---:|---:|---|",
]


def headline(comparison: Comparison) -> str:
    """The one line a reviewer acts on."""
    return (
        f"{headline_icon(comparison)} {summary_phrase(comparison)} · base "
        f"{side_label(comparison.base.commit, comparison.base.label)} → head "
        f"{side_label(comparison.head.commit, comparison.head.label)}"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(result: MetricResult) -> str:
    base = format_value(result.base.median, result.unit) if result.base else "—"
    head = format_value(result.head.median, result.unit) if result.head else "—"
    return (
        f"| `{_cell(result.key)}` | {result.metric} | {base} | {head} | "
        f"{format_change(raw_ratio(result))} | {format_ci(raw_ci(result))} | "
        f"{ICONS[result.verdict]} {result.verdict} |"
    )


def _ops(result: MetricResult) -> list[str]:
    if not result.attribution:
        return []
    lines = [
        f"**Ops behind `{_cell(result.key)}` {result.metric} "
        f"({format_change(raw_ratio(result))})**",
        "",
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
            f"| `{_cell(delta.op)}` | {delta.base_us:.1f} | {delta.head_us:.1f} | "
            f"{delta.delta_us:+.1f} | {calls} |"
        )
    return [*lines, ""]


def render_markdown(comparison: Comparison, *, limit: int = COMMENT_LIMIT) -> str:
    """Headline, changes table, ops behind each regression, warnings, full table folded."""
    ordered = severity_order(comparison.results)
    changed = [r for r in ordered if r.verdict in ("regression", "improvement")]
    lines = [f"### {headline(comparison)}", ""]
    if changed:
        lines += [*_TABLE_HEAD, *(_row(r) for r in changed), ""]
        for result in changed:
            if result.verdict == "regression":
                lines += _ops(result)
    else:
        lines += ["No benchmark got measurably slower or faster.", ""]
    if comparison.warnings:
        lines += ["**Warnings**", "", *(f"- {_cell(w)}" for w in comparison.warnings), ""]
    head = "\n".join(lines)

    footer = [
        "</details>",
        "",
        f"<sub>alpha {comparison.alpha:g} (Benjamini-Hochberg), threshold "
        f"{comparison.threshold:.1%}; regressions need both · perfgate</sub>",
    ]
    details = [
        f"<details><summary>All {len(ordered)} results</summary>",
        "",
        *_TABLE_HEAD,
    ]
    budget = limit - len(head) - sum(len(x) + 1 for x in footer) - sum(len(x) + 1 for x in details)
    shown = 0
    for result in ordered:
        row = _row(result)
        if budget - len(row) - 200 < 0:
            break
        details.append(row)
        budget -= len(row) + 1
        shown += 1
    if shown < len(ordered):
        details += [
            "",
            f"_{len(ordered) - shown} more results left out to stay under GitHub's "
            "comment size limit; see the comparison JSON._",
        ]
    return head + "\n" + "\n".join([*details, "", *footer]) + "\n"
