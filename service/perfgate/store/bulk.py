"""Bulk writes of an upload: binary COPY FROM STDIN on PostgreSQL, the driver's executemany on
SQLite.

Both take rows from a generator one at a time (psycopg buffers a few kilobytes of COPY data), so
storing a document costs memory for the document, not for its rows. Both run on the session's
connection, in the caller's transaction: a failure anywhere leaves nothing behind once the
caller rolls back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

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
        with driver.cursor() as cursor:
            wire = _session_wire_types(session, cursor, table, columns)
            if wire is not None:
                statement += " (FORMAT BINARY)"
                convert = _checked_ints(convert, wire)
            with cursor.copy(statement) as copy:
                if wire is not None:
                    copy.set_types([cursor.adapters.types[name].oid for name in wire])
                for row in rows:
                    try:
                        copy.write_row(convert(row))
                    except (OverflowError, UnicodeError) as exc:
                        # A value that cannot be sent is refused as the server refuses one it
                        # cannot hold: the document's fault (psycopg.DataError), not a crash.
                        raise psycopg.DataError(f"{exc} (table {table.name})") from exc
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


# Column types a binary COPY sends, by the name of the type psycopg dumps their values as. The
# binary form of json and varchar is their text, so text's dumper sends them (their receive
# functions check the text, and varchar its length, as their text input does). A column of any
# other type makes the COPY textual.
_WIRE = {
    "bool": "bool",
    "bytea": "bytea",
    "float4": "float4",
    "float8": "float8",
    "int2": "int2",
    "int4": "int4",
    "int8": "int8",
    "json": "text",
    "text": "text",
    "timestamptz": "timestamptz",
    "varchar": "text",
}
# psycopg packs an int into these without a range check (2**40 arrives as 0 in an int4).
_INT_RANGE = {"int2": 2**15, "int4": 2**31}


def _session_wire_types(
    session: Session, cursor: psycopg.Cursor[Any], table: Table, columns: Sequence[str]
) -> list[str] | None:
    """`_wire_types`, read once per session: an upload streamed in slices COPYs into each table
    once per slice (store/streamed_upload.py)."""
    known = session.info.setdefault("perfgate_wire_types", {})
    key = (table.name, tuple(columns))
    if key not in known:
        known[key] = _wire_types(cursor, table, columns)
    return cast(list[str] | None, known[key])


def _wire_types(
    cursor: psycopg.Cursor[Any], table: Table, columns: Sequence[str]
) -> list[str] | None:
    """The types a binary COPY into `table`'s `columns` sends (read from the table itself), or
    None where a column's type has no binary form here.

    Binary COPY spares formatting every value as text, 0.6-0.8 s of a 60,000-benchmark upload's
    CPU (docs/service.md); the database's side takes as long either way.
    """
    found = dict(
        cursor.execute(
            "SELECT a.attname, t.typname FROM pg_attribute AS a "
            "JOIN pg_type AS t ON t.oid = a.atttypid "
            "WHERE a.attrelid = CAST(%s AS regclass) AND a.attnum > 0 AND NOT a.attisdropped",
            (table.name,),
        ).fetchall()
    )
    wire = [_WIRE.get(found.get(column, "")) for column in columns]
    return None if None in wire else cast(list[str], wire)


def _checked_ints(
    convert: Callable[[tuple[Any, ...]], Sequence[Any]], wire: Sequence[str]
) -> Callable[[tuple[Any, ...]], Sequence[Any]]:
    """`convert`, then an OverflowError for an int outside its int2 or int4 column's range."""
    bounded = [(i, _INT_RANGE[name]) for i, name in enumerate(wire) if name in _INT_RANGE]
    if not bounded:
        return convert

    def checked(row: tuple[Any, ...]) -> Sequence[Any]:
        values = convert(row)
        for i, limit in bounded:
            value = values[i]
            if value is not None and not -limit <= value < limit:
                raise OverflowError(f"{value} is out of range for an integer column")
        return values

    return checked


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


# The wanted benchmarks travel as one JSON text, `[[key, name, params], ...]`: psycopg escapes the
# elements of a text array one regex call at a time, which for 60,000 benchmarks cost more than
# the statement. PostgreSQL's json type keeps each element's text as written, so `e->2` is the
# json.dumps text of the params, which is what SQLAlchemy's JSON type stores (engines set no
# serialiser): a stored row whose name and params text equal the spec's is the same JSON and is
# not sent back to be decoded and compared.
_WANTED = (
    "(SELECT e->>0 AS key, e->>1 AS name, e->2 AS params "
    "FROM json_array_elements(CAST(:wanted AS JSON)) AS e) AS wanted"
)
_SAME = "b.name = wanted.name AND CAST(b.params AS TEXT) = CAST(wanted.params AS TEXT)"
_SELECT_BENCHMARKS = text(
    f"SELECT b.key, b.id, CASE WHEN {_SAME} THEN NULL ELSE b.name END, "
    f"CASE WHEN {_SAME} THEN NULL ELSE b.params END "
    f"FROM benchmarks AS b JOIN {_WANTED} ON b.key = wanted.key "
    "WHERE b.project_id = :project_id"
)
_INSERT_BENCHMARKS = text(
    "INSERT INTO benchmarks (project_id, key, name, params, created_at) "
    f"SELECT :project_id, wanted.key, wanted.name, wanted.params, :created_at FROM {_WANTED} "
    "ORDER BY wanted.key "
    "ON CONFLICT (project_id, key) DO NOTHING"
)


# pg_advisory_xact_lock's two-key form: a class of perfgate's own ("pgbm"), then the project.
_LOCK_NEW_BENCHMARKS = text("SELECT pg_advisory_xact_lock(1885823597, :project_id)")


def ensure_benchmark_rows(
    session: Session, *, project_id: int, specs: Sequence[row_writes.BenchmarkSpec]
) -> tuple[dict[str, int], dict[str, row_writes.StoredBenchmark]]:
    """Map each spec's key to its benchmark id, creating the missing ones; and, by key, the stored
    rows whose name and params may differ as JSON from the spec's (a superset of those that do).

    On PostgreSQL each step is one statement, whatever the number of benchmarks: the
    repository's chunked IN lists are planned as a filter over every benchmark of the project,
    which made a 60,000-benchmark upload quadratic. An upload that inserts new benchmarks first
    takes its project's lock for that (`_LOCK_NEW_BENCHMARKS`, held until it commits), so two
    uploads that share new benchmarks wait for each other instead of deadlocking, whatever the
    order of their slices (store/streamed_upload.py). A stored row
    whose name and params text equal the spec's is not decoded: for an upload onto known
    benchmarks, decoding every row's params cost more CPU than its COPY.
    """
    if session.get_bind().dialect.name != "postgresql":
        return row_writes.ensure_benchmark_rows(session, project_id=project_id, specs=specs)
    wanted = {s.key: s for s in specs}
    ids, differing = _benchmark_rows(session, project_id=project_id, specs=specs)
    missing = [wanted[key] for key in wanted if key not in ids]
    if missing:
        # One inserter of new benchmarks per project at a time, until its commit: an upload
        # stored a slice at a time inserts them in slice order, not key order, and two such
        # uploads sharing new benchmarks in other orders would each wait on the other's rows.
        session.execute(_LOCK_NEW_BENCHMARKS, {"project_id": project_id})
        session.execute(
            _INSERT_BENCHMARKS,
            {"project_id": project_id, "created_at": utcnow(), "wanted": _wanted_json(missing)},
        )
        # A concurrent upload may have created some of them first, with its own name and params.
        new_ids, new_differing = _benchmark_rows(session, project_id=project_id, specs=missing)
        ids.update(new_ids)
        differing.update(new_differing)
    return ids, differing


def _wanted_json(specs: Sequence[row_writes.BenchmarkSpec]) -> str:
    return json.dumps([[s.key, s.name, s.params] for s in specs])


def _benchmark_rows(
    session: Session, *, project_id: int, specs: Sequence[row_writes.BenchmarkSpec]
) -> tuple[dict[str, int], dict[str, row_writes.StoredBenchmark]]:
    rows = session.execute(
        _SELECT_BENCHMARKS, {"project_id": project_id, "wanted": _wanted_json(specs)}
    ).all()
    ids = {str(key): int(bench_id) for key, bench_id, _, _ in rows}
    differing = {
        str(key): row_writes.StoredBenchmark(id=int(bench_id), name=name, params=params)
        for key, bench_id, name, params in rows
        if name is not None
    }
    return ids, differing
