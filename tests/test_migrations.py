"""Migrations agree with the models and round-trip, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner, Result
from sqlalchemy import inspect

from perfgate.cli import cli
from perfgate.errors import EXIT_USAGE, InputError
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


def _db(*args: str) -> Result:
    # No catch_exceptions: a traceback must fail the test as itself, not as an exit code.
    return CliRunner().invoke(cli, ["db", *args], catch_exceptions=False)


def _one_error_line(result: Result, exit_code: int) -> str:
    assert result.exit_code == exit_code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@BACKENDS
def test_db_downgrade_with_nothing_to_downgrade_is_one_line(empty_db_url: str) -> None:
    line = _one_error_line(_db("downgrade", "--db", empty_db_url), EXIT_USAGE)
    assert "no perfgate schema" in line and "nothing to downgrade" in line
    assert _db("upgrade", "--db", empty_db_url).exit_code == 0
    too_far = _one_error_line(_db("downgrade", "--revision", "-9", "--db", empty_db_url), 2)
    state = _state(empty_db_url)
    assert f"is at {state.head}" in too_far and "below base" in too_far
    assert state.at_head


@BACKENDS
def test_db_upgrade_to_an_unknown_revision_is_one_line(empty_db_url: str) -> None:
    line = _one_error_line(_db("upgrade", "--revision", "zzzz", "--db", empty_db_url), EXIT_USAGE)
    assert "'zzzz' is not a revision this perfgate knows" in line
    assert "0001" in line  # the revisions it does know
    assert _state(empty_db_url).current is None
    assert _db("upgrade", "--db", empty_db_url).exit_code == 0
    line = _one_error_line(_db("downgrade", "--revision", "zzzz", "--db", empty_db_url), 2)
    assert "'zzzz' is not a revision this perfgate knows" in line


def test_db_commands_on_a_newer_schema_say_upgrade_perfgate(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/newer.db"
    _newer_schema(url)
    current = _db("current", "--db", url)
    assert current.exit_code == 0, current.output
    assert "upgrade perfgate" in current.stdout and "db upgrade" not in current.stdout
    for command in ("upgrade", "downgrade"):
        line = _one_error_line(_db(command, "--db", url), EXIT_USAGE)
        assert line.endswith("which this perfgate does not know: upgrade perfgate"), line


def _state(url: str) -> migrate.SchemaState:
    engine = make_engine(url)
    try:
        return migrate.schema_state(engine)
    finally:
        engine.dispose()


def _newer_schema(url: str) -> None:
    """A database migrated by a later perfgate: a revision this one has never heard of."""
    engine = make_engine(url)
    try:
        migrate.upgrade(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff'")
    finally:
        engine.dispose()


def test_db_downgrade_to_a_later_revision_points_to_upgrade(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    assert _db("upgrade", "--revision", "0001", "--db", url).exit_code == 0
    line = _one_error_line(_db("downgrade", "--revision", "0002", "--db", url), EXIT_USAGE)
    assert "already below 0002" in line and "perfgate db upgrade --revision 0002" in line
