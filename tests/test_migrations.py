"""Migrations agree with the models and round-trip, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from perfgate.errors import InputError
from perfgate.store import migrate
from perfgate.store.engine import make_engine
from perfgate.store.models import Base

BACKENDS = pytest.mark.parametrize("empty_db_url", ["sqlite", "postgres"], indirect=True)


def _drift(url: str) -> list[object]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


@BACKENDS
def test_models_and_migrations_agree(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    migrate.upgrade(engine)
    engine.dispose()
    assert _drift(empty_db_url) == []


@BACKENDS
def test_downgrade_then_upgrade_round_trips(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    try:
        migrate.upgrade(engine)
        tables = set(inspect(engine).get_table_names())
        assert {"runs", "measurements", "ops", "change_points"} <= tables
        migrate.downgrade(engine, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        assert migrate.schema_state(engine).current is None
        migrate.upgrade(engine)
        assert set(inspect(engine).get_table_names()) == tables
        assert migrate.schema_state(engine).at_head
    finally:
        engine.dispose()
    assert _drift(empty_db_url) == []


@BACKENDS
def test_empty_database_is_migrated_on_first_use(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    try:
        migrate.ensure_schema(engine)
        assert migrate.schema_state(engine).at_head
        migrate.ensure_schema(engine)  # a second call is a no-op
    finally:
        engine.dispose()


def test_database_from_a_newer_perfgate_is_refused(tmp_path: pytest.TempPathFactory) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/old.db")
    try:
        migrate.upgrade(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff'")
        with pytest.raises(InputError, match="does not know: upgrade perfgate"):
            migrate.ensure_schema(engine)
    finally:
        engine.dispose()


def test_foreign_database_is_refused(tmp_path: pytest.TempPathFactory) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/other.db")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE customers (id INTEGER)")
        with pytest.raises(InputError, match="has tables but no perfgate schema"):
            migrate.ensure_schema(engine)
    finally:
        engine.dispose()


def test_migrations_ship_inside_the_package() -> None:
    assert (migrate.migrations_dir() / "versions").is_dir()
