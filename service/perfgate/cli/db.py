"""`perfgate db upgrade|downgrade|current`: the store's schema, through Alembic."""

from __future__ import annotations

import click

from perfgate.cli.options import db_option

# The store's modules (SQLAlchemy, Alembic) load inside each command: `perfgate --help` and the
# other commands should not pay half a second for them.


@click.group("db")
def command() -> None:
    """Manage the store's schema (Alembic migrations shipped with perfgate)."""


@command.command("upgrade")
@db_option
@click.option("--revision", default="head", show_default=True, help="Target revision.")
def upgrade(db_url: str, revision: str) -> None:
    """Migrate the database up to REVISION (default: the newest)."""
    from perfgate.store import migrate
    from perfgate.store.connect import open_store
    from perfgate.store.engine import mask_url

    with open_store(db_url, ensure=False) as store:
        before = migrate.schema_state(store.engine)
        migrate.upgrade(store.engine, revision)
        after = migrate.schema_state(store.engine)
    url = mask_url(store.engine.url)
    if before.current == after.current:
        click.echo(f"{url}: already at {after.current}")
    else:
        click.echo(f"{url}: upgraded {before.current or '(empty)'} -> {after.current}")


@command.command("downgrade")
@db_option
@click.option(
    "--revision",
    default="-1",
    show_default=True,
    help="Target revision: an id, -N steps, or 'base' to remove every table.",
)
def downgrade(db_url: str, revision: str) -> None:
    """Migrate the database down to REVISION (default: one step)."""
    from perfgate.store import migrate
    from perfgate.store.connect import open_store
    from perfgate.store.engine import mask_url

    with open_store(db_url, ensure=False) as store:
        before = migrate.schema_state(store.engine)
        migrate.downgrade(store.engine, revision)
        after = migrate.schema_state(store.engine)
    url = mask_url(store.engine.url)
    if before.current == after.current:
        click.echo(f"{url}: already at {after.current or 'base (empty)'}")
    else:
        click.echo(f"{url}: downgraded {before.current} -> {after.current or '(empty)'}")


@command.command("current")
@db_option
def current(db_url: str) -> None:
    """Print the database's schema revision and whether it is the newest."""
    from perfgate.store import migrate
    from perfgate.store.connect import open_store
    from perfgate.store.engine import mask_url

    with open_store(db_url, ensure=False) as store:
        state = migrate.schema_state(store.engine)
    where = mask_url(store.engine.url)
    if state.current is None:
        click.echo(f"{where}: no perfgate schema (head is {state.head})")
    elif state.at_head:
        click.echo(f"{where}: {state.current} (head)")
    elif state.unknown:
        click.echo(f"{where}: {state.current} (unknown here, head is {state.head}: {state.advice})")
    else:
        click.echo(f"{where}: {state.current} (head is {state.head}: {state.advice})")
