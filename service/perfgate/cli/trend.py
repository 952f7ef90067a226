"""`perfgate trend KEY`: the history of one benchmark, with change points marked."""

from __future__ import annotations

from pathlib import Path

import click

from perfgate.cli.options import db_option, format_option
from perfgate.errors import NotImplementedYetError


@click.command("trend")
@click.argument("key")
@click.option("--metric", default="time", show_default=True, help="Metric to show.")
@click.option("--branch", default="main", show_default=True, help="Branch whose history to show.")
@click.option("--since", metavar="DATE", help="Only runs since this date (ISO-8601) or age (30d).")
@format_option("table", "json", "csv", default="table")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw the series to FILE (.png, .svg or .html).",
)
@click.option("--project", help="Project [default: the only one in the store].")
@db_option
def command(**_options: object) -> None:
    """Show how benchmark KEY moved over time on a branch."""
    raise NotImplementedYetError("perfgate trend is not implemented yet")
