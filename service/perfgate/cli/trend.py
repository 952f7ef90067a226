"""`perfgate trend KEY`: the history of one benchmark, with change points marked."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import click

from perfgate import json_text
from perfgate.cli.options import db_option, format_option
from perfgate.cli.timeparse import parse_since
from perfgate.errors import UsageError


@click.command("trend")
@click.argument("key")
@click.option("--metric", default="time", show_default=True, help="Metric to show.")
@click.option("--branch", default="main", show_default=True, help="Branch whose history to show.")
@click.option("--since", metavar="DATE", help="Only runs since this date (ISO-8601) or age (30d).")
@format_option("table", "json", "csv", default="table")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw the series to FILE (.svg or .html; .png needs matplotlib).",
)
@click.option("--project", help="Project [default: the only one in the store].")
@db_option
def command(
    *,
    key: str,
    metric: str,
    branch: str,
    since: str | None,
    fmt: str,
    plot: Path | None,
    project: str | None,
    db_url: str,
) -> None:
    """Show how benchmark KEY moved over time on a branch, change points marked."""
    from perfgate.store.connect import open_store
    from perfgate.store.trends import load_series

    if plot is not None and plot.suffix.lower() not in (".svg", ".html", ".png"):
        raise UsageError(f"--plot: {plot} must end in .svg, .html or .png")
    with open_store(db_url) as store, store.sessions() as session:
        series = load_series(
            session,
            project=project,
            key=key,
            metric=metric,
            branch=branch,
            since=parse_since(since) if since else None,
        )
    marks = {c.run for c in series.change_points}
    if fmt == "json":
        click.echo(json_text.dumps(series_json(series), indent=1))
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(
            ["run", "commit", "time", "median", "ci_low", "ci_high", "n", "change_point"]
        )
        for p in series.points:
            writer.writerow(
                [
                    p.run,
                    p.commit,
                    p.time.isoformat(),
                    repr(p.median),
                    repr(p.ci[0]) if p.ci else "",
                    repr(p.ci[1]) if p.ci else "",
                    p.n,
                    int(p.run in marks),
                ]
            )
        click.echo(buffer.getvalue(), nl=False)
    else:
        _table(series, marks)
    if plot is not None:
        _plot(series, marks, plot)
        click.echo(f"wrote {plot}", err=True)


def series_json(series: Any) -> dict[str, Any]:
    """The same shape as the service's /series answer (docs/architecture.md §8)."""
    return {
        "key": series.key,
        "metric": series.metric,
        "unit": series.unit,
        "branch": series.branch,
        "points": [
            {
                "run": p.run,
                "commit": p.commit,
                "time": p.time.isoformat(),
                "median": p.median,
                "ci": list(p.ci) if p.ci else None,
                "n": p.n,
            }
            for p in series.points
        ],
        "change_points": [c.as_json() for c in series.change_points],
    }


def _table(series: Any, marks: set[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from perfgate.report.units import format_value

    table = Table(title=f"{series.key} · {series.metric} · {series.branch}", show_edge=False)
    for column in ("time (UTC)", "commit", "median", "95% CI", "n", ""):
        table.add_column(column)
    for p in series.points:
        ci = (
            f"{format_value(p.ci[0], series.unit)} … {format_value(p.ci[1], series.unit)}"
            if p.ci
            else "—"
        )
        change = next((c for c in series.change_points if c.run == p.run), None)
        note = f"[red]◆ change {change.ratio - 1:+.1%} ({change.status})[/red]" if change else ""
        table.add_row(
            f"{p.time:%Y-%m-%d %H:%M}",
            p.commit[:10],
            format_value(p.median, series.unit),
            ci,
            str(p.n),
            note,
        )
    Console().print(table)


def _plot(series: Any, marks: set[str], path: Path) -> None:
    from perfgate.report.plot import PlotPoint, render_html, render_svg

    points = [
        PlotPoint(
            time=p.time, commit=p.commit, median=p.median, ci=p.ci, change_point=p.run in marks
        )
        for p in series.points
    ]
    title = f"{series.key} · {series.metric} · {series.branch}"
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        path.write_text(render_svg(points, title=title, unit=series.unit), encoding="utf-8")
    elif suffix == ".html":
        path.write_text(render_html(points, title=title, unit=series.unit), encoding="utf-8")
    else:
        _png(points, title, series.unit, path)


def _png(points: Any, title: str, unit: str, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "--plot: PNG output needs matplotlib (pip install matplotlib); .svg and .html "
            "need nothing"
        ) from None
    figure, axes = plt.subplots(figsize=(9, 3.6))
    xs = list(range(len(points)))
    axes.plot(xs, [p.median for p in points], marker="o", markersize=3)
    axes.fill_between(
        xs,
        [p.ci[0] if p.ci else p.median for p in points],
        [p.ci[1] if p.ci else p.median for p in points],
        alpha=0.3,
    )
    for i, p in enumerate(points):
        if p.change_point:
            axes.axvline(i, color="red", linestyle="--")
    axes.set_title(title)
    axes.set_ylabel(unit)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
