"""Bulk writes of an upload: COPY FROM STDIN on PostgreSQL, batched executemany on SQLite.

Both take rows from a generator and never hold more than one batch, so storing a document costs
memory for the document, not for its rows. Both run in the caller's transaction: a failure
anywhere leaves nothing behind once the caller rolls back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

import psycopg
from sqlalchemy import Table, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from perfgate.store import repository
from perfgate.store.models import utcnow

# Rows per executemany: large enough that the per-statement cost vanishes, small enough that the
# batch's dicts stay a few megabytes.
BATCH_ROWS = 5000


def write_rows(
    session: Session, *, table: Table, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> int:
    """Insert `rows` (tuples in the order of `columns`) into `table`; returns the row count."""
    if session.get_bind().dialect.name == "postgresql":
        return copy_rows(session, table=table, columns=columns, rows=rows)
    return insert_rows(session, table=table, columns=columns, rows=rows)


def insert_rows(
    session: Session, *, table: Table, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> int:
    """executemany of BATCH_ROWS rows at a time, through SQLAlchemy's own type conversions."""
    statement = table.insert()
    count = 0
    iterator = iter(rows)
    while batch := [dict(zip(columns, row, strict=True)) for row in islice(iterator, BATCH_ROWS)]:
        session.execute(statement, batch)
        count += len(batch)
    return count


def copy_rows(
    session: Session, *, table: Table, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> int:
    """COPY `rows` into `table` through the session's own psycopg connection (PostgreSQL only).

    Values go through the columns' SQLAlchemy bind processors (JSON serialisation, UTC
    timestamps), so a row stored by COPY equals one stored by `insert_rows`. Driver errors are
    raised as SQLAlchemy's (IntegrityError, DataError, ...) like those of any other statement.
    """
    connection = session.connection()
    dialect = connection.dialect
    processors = [
        table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns
    ]
    convert = _row_converter(processors)
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


def _row_converter(
    processors: Sequence[Callable[[Any], Any] | None],
) -> Callable[[tuple[Any, ...]], Sequence[Any]]:
    converting = [(i, p) for i, p in enumerate(processors) if p is not None]
    if not converting:
        return lambda row: row

    def convert(row: tuple[Any, ...]) -> Sequence[Any]:
        values = list(row)
        for i, process in converting:
            values[i] = process(values[i])
        return values

    return convert


_SELECT_BENCHMARK_IDS = text(
    "SELECT b.key, b.id FROM benchmarks AS b "
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
    session: Session, *, project_id: int, specs: Sequence[repository.BenchmarkSpec]
) -> dict[str, int]:
    """Map each spec's key to its benchmark id, creating the missing ones.

    On PostgreSQL each step is one statement over arrays, whatever the number of benchmarks: the
    repository's chunked IN lists are planned as a filter over every benchmark of the project,
    which made a 60,000-benchmark upload quadratic. New benchmarks are inserted in key order, so
    two uploads that share new benchmarks wait for each other instead of deadlocking.
    """
    if session.get_bind().dialect.name != "postgresql":
        return repository.ensure_benchmarks(session, project_id=project_id, specs=specs)
    ids = _benchmark_ids(session, project_id=project_id, keys=[s.key for s in specs])
    missing = [s for s in specs if s.key not in ids]
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
        ids.update(_benchmark_ids(session, project_id=project_id, keys=[s.key for s in missing]))
    return ids


def _benchmark_ids(session: Session, *, project_id: int, keys: list[str]) -> dict[str, int]:
    rows = session.execute(_SELECT_BENCHMARK_IDS, {"project_id": project_id, "keys": keys})
    return {str(key): int(bench_id) for key, bench_id in rows}
