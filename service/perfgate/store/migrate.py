"""Alembic, driven from code: upgrade, downgrade, current, and create-on-first-use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect
from sqlalchemy.exc import DBAPIError

from perfgate.errors import DatabaseError, InputError
from perfgate.store.engine import describe_db_error, mask_url


def migrations_dir() -> Path:
    """The migrations folder: inside the installed package, else at the repository root."""
    packaged = Path(__file__).resolve().parent.parent / "migrations"
    if (packaged / "env.py").is_file():
        return packaged
    # An editable install runs from the source tree, where migrations/ sits at the top.
    source = Path(__file__).resolve().parents[3] / "migrations"
    if (source / "env.py").is_file():
        return source
    raise InputError("perfgate's migrations are missing from this installation; reinstall perfgate")


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["engine"] = engine
    return config


@dataclass(frozen=True)
class SchemaState:
    current: str | None
    head: str

    @property
    def at_head(self) -> bool:
        return self.current == self.head


def schema_state(engine: Engine) -> SchemaState:
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    assert head is not None, "the migration history has no head"
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except DBAPIError as exc:
        raise DatabaseError(
            f"cannot read the schema version of {mask_url(engine.url)}: {describe_db_error(exc)}"
        ) from None
    return SchemaState(current=current, head=head)


def upgrade(engine: Engine, revision: str = "head") -> None:
    _run(engine, lambda config: command.upgrade(config, revision))


def downgrade(engine: Engine, revision: str) -> None:
    _run(engine, lambda config: command.downgrade(config, revision))


def _run(engine: Engine, action: Callable[[Config], None]) -> None:
    try:
        action(alembic_config(engine))
    except DBAPIError as exc:
        raise DatabaseError(
            f"migration failed on {mask_url(engine.url)}: {describe_db_error(exc)}"
        ) from None


def ensure_schema(engine: Engine) -> None:
    """Create the schema in an empty database; refuse one that is behind or ahead of this code.

    An empty database (no tables at all) is migrated on first use, which is what makes the
    embedded store work with no setup. A database that already holds data is never migrated
    implicitly: that is `perfgate db upgrade`, run deliberately (or by the compose migrate step).
    """
    state = schema_state(engine)
    if state.at_head:
        return
    url = mask_url(engine.url)
    if state.current is None:
        try:
            tables = inspect(engine).get_table_names()
        except DBAPIError as exc:
            raise DatabaseError(f"cannot inspect {url}: {describe_db_error(exc)}") from None
        if tables:
            raise InputError(
                f"database {url} has tables but no perfgate schema version; "
                "point --db at an empty database or a perfgate one"
            )
        upgrade(engine)
        return
    known = {
        rev.revision for rev in ScriptDirectory.from_config(alembic_config(engine)).walk_revisions()
    }
    if state.current not in known:
        raise InputError(
            f"database {url} is at schema revision {state.current}, which this perfgate does not "
            "know: upgrade perfgate"
        )
    raise InputError(
        f"database {url} is at schema revision {state.current} but this perfgate needs "
        f"{state.head}: run `perfgate db upgrade --db URL`"
    )
