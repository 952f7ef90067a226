"""The comparison as a rich terminal table, with the ops behind each (possible) regression and
warnings."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perfgate.report.comment_parts import TOP_OPS_SHOWN
from perfgate.report.units import format_bytes_change, format_change, format_ci, format_value
from perfgate.report.untrusted import one_line
from perfgate.report.verdicts import (
    affected_list,
    allocating_ops_phrase,
    calls_phrase,
    headline,
    levels_note,
    raw_change,
    raw_ci,
    severity_order,
    shifted,
    verdict_label,
)
from perfgate.stats.model import Comparison, MetricResult

STYLES = {
    "regression": "bold red",
    "improvement": "green",
    "unchanged": "dim",
    "inconclusive": "yellow",
    "missing": "magenta",
    "new": "cyan",
    "error": "bold red",
}
# A possible regression stands out from the plain inconclusive rows, without the regression red.
FLAG_STYLE = "bold yellow"


def _verdict(result: MetricResult) -> str:
    style = FLAG_STYLE if result.flag is not None else STYLES[result.verdict]
    return f"[{style}]{escape(verdict_label(result))}[/]"


def _reason(result: MetricResult) -> str:
    """The reason, with what else the row must say: speed levels, or a memory change's
    allocating ops (`allocated by aten::clone +1.5 MiB (0 → 1 calls)`)."""
    notes = [n for n in (levels_note(result), _allocating(result)) if n]
    return escape(" · ".join([result.reason, *notes]))


def _allocating(result: MetricResult) -> str | None:
    return allocating_ops_phrase(result, shown=1, name=one_line)


def render_terminal(
    comparison: Comparison, console: Console, *, show_unchanged: bool = True
) -> None:
    # Plain text: names as they are (on one line), no markdown code spans or HTML entities.
    console.print(escape(headline(comparison, name=one_line, text=one_line)), highlight=False)
    common = shifted(comparison)
    if common is not None and common.affected:
        console.print(f"moved together: {escape(affected_list(common))}", highlight=False)
    table = Table(show_edge=False, pad_edge=False)
    for column, justify in (
        ("benchmark", "left"),
        ("metric", "left"),
        ("base", "right"),
        ("head", "right"),
        ("Δ", "right"),
        ("95% CI", "right"),
        ("verdict", "left"),
        ("reason", "left"),
        ("noise (where it was learnt)", "left"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for result in severity_order(comparison.results):
        if result.verdict == "unchanged" and not show_unchanged:
            continue
        table.add_row(
            escape(result.key),
            result.metric,
            format_value(result.base.median, result.unit) if result.base else "—",
            format_value(result.head.median, result.unit) if result.head else "—",
            format_change(raw_change(result)),
            format_ci(raw_ci(result)),
            _verdict(result),
            _reason(result),
            escape(result.noise or "—"),
        )
    console.print(table)
    hidden = comparison.summary()["unchanged"] if not show_unchanged else 0
    if hidden:
        console.print(f"[dim]{hidden} unchanged results not listed (--format json lists all)[/dim]")
    for result in [*comparison.regressions(), *comparison.possible_regressions()]:
        if not result.attribution:
            continue
        console.print(f"\n[bold]ops behind {escape(result.key)} {result.metric}[/bold]")
        for delta in result.attribution[:TOP_OPS_SHOWN]:
            console.print(
                f"  {escape(delta.op):40s} {delta.base_us:10.1f} → {delta.head_us:10.1f} µs/call "
                f"({delta.delta_us:+.1f}), calls {delta.base_count:g} → {delta.head_count:g}",
                highlight=False,
            )
    # allocated_bytes and peak_allocated_bytes name the same ops: one list per benchmark.
    allocating: dict[str, list[MetricResult]] = {}
    for result in comparison.regressions():
        if result.allocation_attribution:
            allocating.setdefault(result.key, []).append(result)
    for key, results in allocating.items():
        metrics = ", ".join(r.metric for r in results)
        console.print(
            f"\n[bold]ops behind {escape(key)} {escape(metrics)}[/bold] (bytes allocated per call)"
        )
        for moved in results[0].allocation_attribution[:TOP_OPS_SHOWN]:
            calls = calls_phrase(moved.base_count, moved.head_count)
            console.print(
                f"  {escape(one_line(moved.op)):40s} {moved.base_bytes:>14,} → "
                f"{moved.head_bytes:>14,} B ({format_bytes_change(moved.delta_bytes)})"
                + (f", {calls}" if calls else ""),
                highlight=False,
            )
    for warning in comparison.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
