"""`perfgate token create|list|revoke`: API tokens for the service (shown once, stored hashed)."""

from __future__ import annotations

import click

from perfgate import json_text
from perfgate.cli.options import db_option, format_option


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
    help="What the token may do (upload may also read).",
)
@click.option("--name", help="A note to recognise the token by in `token list`.")
@db_option
def create(*, project: str, scope: str, name: str | None, db_url: str) -> None:
    """Create a token and print it once (stdout; the details go to stderr)."""
    from perfgate.store.connect import open_store
    from perfgate.store.tokens import create_token

    with open_store(db_url) as store:
        created = create_token(store.sessions, project=project, scope=scope, name=name)
    click.echo(
        f"token {created.info.id} for {project} ({scope} scope); it is shown only now:", err=True
    )
    click.echo(created.token)


@command.command("list")
@click.option("--project", help="Only this project's tokens.")
@format_option("table", "json", default="table")
@db_option
def list_(*, project: str | None, fmt: str, db_url: str) -> None:
    """List tokens (ids, projects, scopes, use; never the tokens themselves)."""
    from perfgate.store.connect import open_store
    from perfgate.store.tokens import list_tokens

    with open_store(db_url) as store:
        infos = list_tokens(store.sessions, project=project)
    if fmt == "json":
        rows = [
            {
                "id": t.id,
                "project": t.project,
                "scope": t.scope,
                "name": t.name,
                "created_at": t.created_at.isoformat(),
                "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
                "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
            }
            for t in infos
        ]
        click.echo(json_text.dumps({"tokens": rows}, indent=1))
        return
    if not infos:
        click.echo("no tokens")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(show_edge=False)
    for column in ("id", "project", "scope", "name", "created (UTC)", "last used", "state"):
        table.add_column(column)
    for t in infos:
        table.add_row(
            str(t.id),
            t.project,
            t.scope,
            t.name or "",
            f"{t.created_at:%Y-%m-%d %H:%M}",
            f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never",
            "active" if t.active else f"revoked {t.revoked_at:%Y-%m-%d %H:%M}",
        )
    Console(width=160).print(table)


@command.command("revoke")
@click.argument("token_id", type=click.IntRange(min=1), metavar="ID")
@db_option
def revoke(*, token_id: int, db_url: str) -> None:
    """Revoke token ID (see `token list`); it stops working at once."""
    from perfgate.store.connect import open_store
    from perfgate.store.tokens import revoke_token

    with open_store(db_url) as store:
        info = revoke_token(store.sessions, token_id=token_id)
    click.echo(f"token {info.id} ({info.project}, {info.scope}) is revoked")
