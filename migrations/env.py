"""Alembic environment: one history for SQLite and PostgreSQL (batch mode keeps SQLite working)."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import Engine

from perfgate.store.models import Base, UTCDateTime

target_metadata = Base.metadata


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    # Revisions must not import perfgate: render our decorator as the portable type it wraps.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _engine() -> Engine:
    engine = context.config.attributes.get("engine")
    if engine is not None:
        return engine  # type: ignore[no-any-return]
    # Run by the alembic command line (contributors): same settings as the perfgate CLI.
    from perfgate.config import Settings
    from perfgate.store.engine import make_engine

    return make_engine(Settings.from_env().db_url)


def run_migrations_online() -> None:
    engine = _engine()
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=True,
            render_item=_render_item,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("perfgate migrations run online only: use `perfgate db upgrade --db URL`")
run_migrations_online()
