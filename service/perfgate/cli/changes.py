"""`perfgate changes`: change points detected on a branch."""

from __future__ import annotations

import click

from perfgate.cli.options import db_option, format_option
from perfgate.errors import NotImplementedYetError


@click.command("changes")
@click.option(
    "--status",
    type=click.Choice(["open", "acknowledged", "dismissed", "all"]),
    default="open",
    show_default=True,
    help="Which change points to list.",
)
@click.option("--branch", default="main", show_default=True, help="Branch to look at.")
@click.option("--project", help="Project [default: the only one in the store].")
@format_option("table", "json", default="table")
@db_option
def command(**_options: object) -> None:
    """List change points (shifts in a benchmark's history) on a branch."""
    raise NotImplementedYetError("perfgate changes is not implemented yet")
