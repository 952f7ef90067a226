"""The table printed after `perfgate run`: key, median, ±CI, samples and the top op per instance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from perfgate.report.units import format_value
from perfgate.results import Benchmark, ResultsDocument
from perfgate.stats.summary import median, median_ci

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def format_ci(ci_rel: float | None) -> str:
    return "-" if ci_rel is None else f"±{100 * ci_rel:.1f}%"


def _relative_halfwidth(samples: Sequence[float]) -> float | None:
    if len(samples) < 6:
        return None
    lo, hi = median_ci(samples)
    mid = median(samples)
    return (hi - lo) / 2 / mid if mid > 0 else None


def _top_op(bench: Benchmark) -> str:
    if bench.profile is None or not bench.profile.ops:
        return ""
    ops = bench.profile.ops
    on_device = any(op.self_device_us > 0 for op in ops)

    def self_us(op: object) -> float:
        return float(getattr(op, "self_device_us" if on_device else "self_cpu_us"))

    total = sum(self_us(op) for op in ops)
    top = max(ops, key=self_us)
    share = f" {100 * self_us(top) / total:.0f}%" if total > 0 else ""
    return f"{top.op}{share}"


def _samples_cell(bench: Benchmark) -> str:
    time = bench.metrics.get("time")
    if time is None or time.samples is None:
        return ""
    if time.rounds and len(time.rounds) > 1:
        return f"{len(time.samples)} ({'+'.join(str(r) for r in time.rounds)})"
    return str(len(time.samples))


def build_run_table(document: ResultsDocument) -> Table:
    """A rich Table of one run (errors shown in place of the figures)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=f"{document.run.project} @ {document.run.commit[:12]}", title_justify="left"
    )
    table.add_column("benchmark", overflow="fold")
    table.add_column("median", justify="right")
    table.add_column("±CI", justify="right")
    table.add_column("samples", justify="right")
    table.add_column("throughput", justify="right")
    table.add_column("top op", overflow="fold")
    for bench in document.benchmarks:
        time = bench.metrics.get("time")
        if bench.error is not None and (time is None or time.samples is None):
            table.add_row(
                escape(bench.key),
                "[red]error[/red]",
                "",
                "",
                "",
                f"[red]{escape(bench.error)}[/red]",
            )
            continue
        if time is None or time.samples is None:
            table.add_row(escape(bench.key), "", "", "", "", escape(_top_op(bench)))
            continue
        throughput = bench.metrics.get("throughput")
        rate = ""
        if throughput is not None and throughput.samples:
            rate = format_value(median(throughput.samples), throughput.unit)
        top = escape(_top_op(bench))
        if bench.error is not None:
            top = f"[red]{escape(bench.error)}[/red]"
        table.add_row(
            escape(bench.key),
            format_value(median(time.samples), "s"),
            format_ci(_relative_halfwidth(time.samples)),
            _samples_cell(bench),
            rate,
            top,
        )
    return table


def render_run_table(document: ResultsDocument, *, console: Console | None = None) -> None:
    """Print the run table (to stdout unless a console is given)."""
    from rich.console import Console

    (console or Console()).print(build_run_table(document))
