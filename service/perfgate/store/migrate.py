"""Alembic, driven from code: upgrade, downgrade, current, and create-on-first-use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine, inspect
from sqlalchemy.exc import DBAPIError

from perfgate.errors import DatabaseError, InputError, UsageError
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


# What to do about a schema that does not match this perfgate: one wording for the CLI's refusals,
# `perfgate db current` and the server's /readyz.
RUN_DB_UPGRADE = "run `perfgate db upgrade`"
UPGRADE_PERFGATE = "upgrade perfgate"


@dataclass(frozen=True)
class SchemaState:
    current: str | None
    head: str
    # Every revision this perfgate ships, newest first.
    revisions: tuple[str, ...] = ()

    @property
    def at_head(self) -> bool:
        return self.current == self.head

    @property
    def unknown(self) -> bool:
        """The database is at a revision this perfgate does not ship: a newer perfgate's."""
        return self.current is not None and self.current not in self.revisions

    @property
    def advice(self) -> str:
        """What makes this perfgate and the database agree (meaningless at head)."""
        return UPGRADE_PERFGATE if self.unknown else RUN_DB_UPGRADE


def schema_problem(state: SchemaState, *, where: str) -> str:
    """One line on why `where` (e.g. "database sqlite:///x.db"), not at head, cannot be used as
    it is, and what to do."""
    if state.current is None:
        return f"{where} has no perfgate schema (this perfgate needs {state.head}): {state.advice}"
    if state.unknown:
        return (
            f"{where} is at schema revision {state.current}, which this perfgate does not know: "
            f"{state.advice}"
        )
    return (
        f"{where} is at schema revision {state.current} but this perfgate needs {state.head}: "
        f"{state.advice}"
    )


def schema_state(engine: Engine) -> SchemaState:
    script = ScriptDirectory.from_config(alembic_config(engine))
    head = script.get_current_head()
    assert head is not None, "the migration history has no head"
    try:
        with engine.connect() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
    except DBAPIError as exc:
        raise DatabaseError(
            f"cannot read the schema version of {mask_url(engine.url)}: {describe_db_error(exc)}"
        ) from None
    revisions = tuple(rev.revision for rev in script.walk_revisions())
    return SchemaState(current=current, head=head, revisions=revisions)


def upgrade(engine: Engine, revision: str = "head") -> None:
    _migrate(engine, "upgrade", revision)


def downgrade(engine: Engine, revision: str) -> None:
    _migrate(engine, "downgrade", revision)


def _migrate(engine: Engine, direction: str, revision: str) -> None:
    """Run Alembic's upgrade or downgrade; a target it cannot reach is a UsageError, one line."""
    state = schema_state(engine)
    url = mask_url(engine.url)
    if state.unknown:
        # Alembic cannot walk from a revision it has never seen, in either direction.
        raise InputError(schema_problem(state, where=f"database {url}"))
    config = alembic_config(engine)
    action = command.upgrade if direction == "upgrade" else command.downgrade
    try:
        action(config, revision)
    except CommandError as exc:
        reason = _unreachable(state, direction, revision, str(exc))
        raise UsageError(f"cannot {direction} database {url} to {revision}: {reason}") from None
    except DBAPIError as exc:
        raise DatabaseError(f"migration failed on {url}: {describe_db_error(exc)}") from None


_RELATIVE = re.compile(r"[+-]\d+$")


def _unreachable(state: SchemaState, direction: str, revision: str, alembic_says: str) -> str:
    """Why Alembic refused to move to `revision`, in terms a person can act on."""
    if direction == "downgrade" and state.current is None:
        return "it has no perfgate schema, so there is nothing to downgrade"
    if _RELATIVE.search(revision):
        where = f"is at {state.current}" if state.current else "has no perfgate schema"
        past = "below base" if direction == "downgrade" else f"past head ({state.head})"
        return f"it {where}, and {revision} steps would go {past}"
    if revision in ("head", "heads", "base"):
        return alembic_says.splitlines()[0] if alembic_says else "Alembic refused the target"
    matches = [rev for rev in state.revisions if rev.startswith(revision)]
    if not matches:
        known = ", ".join(reversed(state.revisions))
        return (
            f"{revision!r} is not a revision this perfgate knows "
            f"({known}, head, base, or -N/+N steps)"
        )
    # Newest first: a smaller index is a later revision.
    if (
        direction == "downgrade"
        and state.current in state.revisions
        and state.revisions.index(matches[0]) < state.revisions.index(state.current)
    ):
        return (
            f"it is at {state.current}, already below {matches[0]} "
            f"(to go up: `perfgate db upgrade --revision {matches[0]}`)"
        )
    return alembic_says.splitlines()[0] if alembic_says else "Alembic refused the target"


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
    raise InputError(schema_problem(state, where=f"database {url}"))
