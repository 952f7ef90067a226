"""`perfgate token create`: API tokens for the service."""

from __future__ import annotations

import click

from perfgate.cli.options import db_option
from perfgate.errors import NotImplementedYetError


@click.group("token")
def command() -> None:
    """Manage API tokens (shown once, stored as hashes)."""


@command.command("create")
@click.option("--project", required=True, help="Project the token is for (owner/name).")
@click.option(
    "--scope",
    type=click.Choice(["upload", "read"]),
    default="upload",
    show_default=True,
    help="What the token may do.",
)
@db_option
def create(**_options: object) -> None:
    """Create a token and print it once."""
    raise NotImplementedYetError("perfgate token create is not implemented yet")
