"""`perfgate serve`: the HTTP service and dashboard."""

from __future__ import annotations

import click

from perfgate import config
from perfgate.cli.options import db_option, max_size_option
from perfgate.config import Settings, parse_byte_size


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes."
)
@click.option(
    "--public-read",
    is_flag=True,
    envvar=config.ENV_PUBLIC_READ,
    show_envvar=True,
    help="Let anyone read without a token (uploads always need one).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@db_option
@max_size_option
def command(
    *,
    host: str,
    port: int,
    workers: int,
    public_read: bool,
    log_level: str,
    db_url: str,
    max_size: str,
) -> None:
    """Serve the perfgate HTTP API (/api/v1) and dashboard.

    The database is checked first: an empty one gets the schema, as with every command; one that
    is behind is refused until `perfgate db upgrade` has run.
    """
    from perfgate.api.server import serve
    from perfgate.store.connect import open_store

    settings = Settings(
        db_url=db_url,
        max_document_bytes=parse_byte_size(max_size, source="--max-size"),
        public_read=public_read,
    )
    with open_store(db_url):
        pass
    serve(settings, host=host, port=port, workers=workers, log_level=log_level)
