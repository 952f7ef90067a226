"""`perfgate serve`: the HTTP service and dashboard."""

from __future__ import annotations

import click

from perfgate.cli.options import db_option
from perfgate.errors import NotImplementedYetError


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes."
)
@click.option("--public-read", is_flag=True, help="Let anyone read without a token.")
@db_option
def command(**_options: object) -> None:
    """Serve the perfgate HTTP API (/api/v1) and dashboard."""
    raise NotImplementedYetError("perfgate serve is not implemented yet")
