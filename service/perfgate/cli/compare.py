"""`perfgate compare BASE HEAD`: what got slower, with statistics that hold on noisy runners."""

from __future__ import annotations

from pathlib import Path

import click

from perfgate.cli.options import db_option, format_option
from perfgate.errors import NotImplementedYetError


@click.command("compare")
@click.argument("base")
@click.argument("head")
@format_option("table", "markdown", "json", default="table")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the output to a file instead of stdout.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=0.03,
    show_default=True,
    help="Smallest relative change that counts (0.03 = 3%).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="False discovery rate for significance.",
)
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a regression is found.")
@click.option("--project", help="Project whose store history to use.")
@db_option
def command(**_options: object) -> None:
    """Compare BASE with HEAD: each a results file, a commit (or unique prefix) or a branch."""
    raise NotImplementedYetError("perfgate compare is not implemented yet")
