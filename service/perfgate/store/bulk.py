"""Bulk writes of an upload: COPY FROM STDIN on PostgreSQL, the driver's executemany on SQLite.

Both take rows from a generator one at a time (psycopg buffers a few kilobytes of COPY data), so
storing a document costs memory for the document, not for its rows. Both run on the session's
connection, in the caller's transaction: a failure anywhere leaves nothing behind once the
caller rolls back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from sqlalchemy import JSON, Column, Dialect, Table, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeDecorator

from perfgate.store import row_writes
from perfgate.store.models import utcnow


def write_rows(
    session: Session, *, table: Table, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> int:
    """Insert `rows` (tuples in the order of `columns`) into `table`; returns the row count."""
    if session.get_bind().dialect.name == "postgresql":
        return copy_rows(session, table=table, columns=columns, rows=rows)
    return executemany_rows(session, table=table, columns=columns, rows=rows)


def executemany_rows(
    session: Session, *, table: Table, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> int:
    """One executemany on the session's own DB-API connection, fed by the row generator.

    SQLite's driver takes the rows from an iterator, one at a time. Going around SQLAlchemy's
    statement execution saves its per-row parameter handling, three quarters of the time of a
    large upload; the values are converted as SQLAlchemy would (see `copy_rows`).
    """
    connection = session.connection()
    dialect = connection.dialect
    assert dialect.name == "sqlite", "executemany_rows writes SQLite's qmark placeholders"
    convert = _row_converter([_column_converter(table.c[name], dialect) for name in columns])
    preparer = dialect.identifier_preparer
    statement = (
        f"INSERT INTO {preparer.format_table(table)} "
        f"({', '.join(preparer.quote(name) for name in columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)})"
    )
    counted = _Counted(rows)
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.executemany(statement, (convert(row) for row in counted))
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            statement, None, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
    finally:
        cursor.close()
    return counted.count


class _Counted:
    def __init__(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self.rows = rows
        self.count = 0

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        for row in self.rows:
            self.count += 1
            yield row


def copy_rows(
    session: Session, *, table: Table, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> int:
    """COPY `rows` into `table` through the session's own psycopg connection (PostgreSQL only).

    Values are converted as SQLAlchemy converts them for an INSERT (UTC timestamps, JSON as
    json.dumps text), so a row stored by COPY equals one stored by `insert_rows`. Driver errors
    are raised as SQLAlchemy's (IntegrityError, DataError, ...) like those of any other statement.
    """
    connection = session.connection()
    dialect = connection.dialect
    convert = _row_converter([_column_converter(table.c[name], dialect) for name in columns])
    preparer = dialect.identifier_preparer
    statement = (
        f"COPY {preparer.format_table(table)} "
        f"({', '.join(preparer.quote(name) for name in columns)}) FROM STDIN"
    )
    driver = connection.connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    count = 0
    try:
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(convert(row))
                count += 1
    except psycopg.Error as exc:
        broken = driver.broken or driver.closed
        if broken:
            # As SQLAlchemy does for its own statements: a dead connection is not pooled again.
            connection.invalidate(exc)
        raise DBAPIError.instance(
            statement,
            None,
            exc,
            psycopg.Error,
            connection_invalidated=broken,
            dialect=dialect,
        ) from exc
    return count


def _column_converter(column: Column[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """How a value of `column` is sent, as SQLAlchemy would send it; None where it is unchanged."""
    if isinstance(column.type, JSON):
        # The text SQLAlchemy's JSON type sends (json.dumps: engines set no serialiser, and None
        # is JSON null), made here because psycopg would otherwise call json.dumps per value
        # behind a wrapper; the two commonest values are constants.
        return _json_text
    if isinstance(column.type, TypeDecorator):
        process = column.type.dialect_impl(dialect).bind_processor(dialect)
        return None if process is None else _repeat_last(process)
    # Strings, numbers, booleans and bytes: both drivers adapt them themselves, and SQLAlchemy's
    # processors for them only check the type or wrap the value.
    return None


def _repeat_last(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`process`, reusing its last answer for the same object (a run's timestamp on every row)."""
    last_in: list[Any] = [object(), None]

    def convert(value: Any) -> Any:
        if value is not last_in[0]:
            last_in[0], last_in[1] = value, process(value)
        return last_in[1]

    return convert


def _json_text(value: Any) -> str:
    if value is None:
        return "null"
    if value == []:
        return "[]"
    return json.dumps(value)


def _row_converter(
    converters: Sequence[Callable[[Any], Any] | None],
) -> Callable[[tuple[Any, ...]], Sequence[Any]]:
    converting = [(i, c) for i, c in enumerate(converters) if c is not None]
    if not converting:
        return lambda row: row

    def convert(row: tuple[Any, ...]) -> Sequence[Any]:
        values = list(row)
        for i, process in converting:
            values[i] = process(values[i])
        return values

    return convert


_SELECT_BENCHMARKS = text(
    "SELECT b.key, b.id, b.name, b.params FROM benchmarks AS b "
    "JOIN unnest(CAST(:keys AS TEXT[])) AS wanted(key) ON b.key = wanted.key "
    "WHERE b.project_id = :project_id"
)
_INSERT_BENCHMARKS = text(
    "INSERT INTO benchmarks (project_id, key, name, params, created_at) "
    "SELECT :project_id, new.key, new.name, CAST(new.params AS JSON), :created_at "
    "FROM unnest(CAST(:keys AS TEXT[]), CAST(:names AS TEXT[]), CAST(:params AS TEXT[])) "
    "AS new(key, name, params) "
    "ORDER BY new.key "
    "ON CONFLICT (project_id, key) DO NOTHING"
)


def ensure_benchmarks(
    session: Session, *, project_id: int, specs: Sequence[row_writes.BenchmarkSpec]
) -> dict[str, int]:
    """Map each spec's key to its benchmark id, creating the missing ones (see
    `ensure_benchmark_rows`)."""
    ids, _ = ensure_benchmark_rows(session, project_id=project_id, specs=specs)
    return ids


def ensure_benchmark_rows(
    session: Session, *, project_id: int, specs: Sequence[row_writes.BenchmarkSpec]
) -> tuple[dict[str, int], dict[str, row_writes.StoredBenchmark]]:
    """Map each spec's key to its benchmark id, creating the missing ones; and the stored rows
    by key, whose name and params may differ as JSON from the spec's.

    On PostgreSQL each step is one statement over arrays, whatever the number of benchmarks: the
    repository's chunked IN lists are planned as a filter over every benchmark of the project,
    which made a 60,000-benchmark upload quadratic. New benchmarks are inserted in key order, so
    two uploads that share new benchmarks wait for each other instead of deadlocking.
    """
    if session.get_bind().dialect.name != "postgresql":
        return row_writes.ensure_benchmark_rows(session, project_id=project_id, specs=specs)
    stored = _benchmark_rows(session, project_id=project_id, keys=[s.key for s in specs])
    missing = [s for s in specs if s.key not in stored]
    if missing:
        session.execute(
            _INSERT_BENCHMARKS,
            {
                "project_id": project_id,
                "created_at": utcnow(),
                "keys": [s.key for s in missing],
                "names": [s.name for s in missing],
                # json.dumps is what SQLAlchemy's JSON type writes (engines set no serialiser), so
                # the stored text equals an ORM insert's.
                "params": [json.dumps(s.params) for s in missing],
            },
        )
        stored.update(
            _benchmark_rows(session, project_id=project_id, keys=[s.key for s in missing])
        )
    return {key: row.id for key, row in stored.items()}, stored


def _benchmark_rows(
    session: Session, *, project_id: int, keys: list[str]
) -> dict[str, row_writes.StoredBenchmark]:
    rows = session.execute(_SELECT_BENCHMARKS, {"project_id": project_id, "keys": keys})
    return {
        str(key): row_writes.StoredBenchmark(id=int(bench_id), name=name, params=params)
        for key, bench_id, name, params in rows
    }
