"""Repository functions: keyword-only, take the session, never commit (use cases do)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from sqlalchemy import Table, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from perfgate.store import models
from perfgate.store.models import utcnow


def table_of(model: type[models.Base]) -> Table:
    """The Core table behind a table class (typed, for bulk statements)."""
    return cast(Table, model.__table__)


def insert_ignoring_conflicts(
    session: Session, table: Table, rows: Sequence[dict[str, Any]], conflict_columns: Sequence[str]
) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: concurrent uploads may share projects and benchmarks."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        pg_stmt = postgresql.insert(table).on_conflict_do_nothing(index_elements=conflict_columns)
        session.execute(pg_stmt, list(rows))
    elif dialect == "sqlite":
        lite_stmt = sqlite.insert(table).on_conflict_do_nothing(index_elements=conflict_columns)
        session.execute(lite_stmt, list(rows))
    else:  # pragma: no cover - only the two supported backends reach here
        raise NotImplementedError(f"unsupported database dialect {dialect}")


def ensure_project(session: Session, *, name: str) -> int:
    """The id of project `name`, created if new."""
    table = table_of(models.Project)
    insert_ignoring_conflicts(
        session,
        table,
        [{"name": name, "created_at": utcnow()}],
        ["name"],
    )
    project_id = session.scalar(select(models.Project.id).where(models.Project.name == name))
    assert project_id is not None
    return project_id


def ensure_environment(
    session: Session, *, fingerprint: str, data: dict[str, Any]
) -> models.Environment:
    """The environment row for `fingerprint`; the first document's description is kept."""
    table = table_of(models.Environment)
    insert_ignoring_conflicts(
        session,
        table,
        [{"fingerprint": fingerprint, "data": data, "created_at": utcnow()}],
        ["fingerprint"],
    )
    env = session.scalar(
        select(models.Environment).where(models.Environment.fingerprint == fingerprint)
    )
    assert env is not None
    return env


@dataclass(frozen=True)
class BenchmarkSpec:
    key: str
    name: str
    params: dict[str, Any]


@dataclass(frozen=True)
class StoredBenchmark:
    id: int
    name: str
    params: dict[str, Any]


def ensure_benchmarks(
    session: Session, *, project_id: int, specs: Sequence[BenchmarkSpec]
) -> dict[str, int]:
    """Map each spec's key to its benchmark id, creating the missing ones in one statement."""
    ids, _ = ensure_benchmark_rows(session, project_id=project_id, specs=specs)
    return ids


def ensure_benchmark_rows(
    session: Session, *, project_id: int, specs: Sequence[BenchmarkSpec]
) -> tuple[dict[str, int], dict[str, StoredBenchmark]]:
    """`ensure_benchmarks`, and the rows that existed before by key (their name and params may
    differ as JSON from the spec's: see `documents.benchmark_override`)."""
    keys = [spec.key for spec in specs]
    existing = _benchmark_rows(session, project_id=project_id, keys=keys)
    ids = {key: row.id for key, row in existing.items()}
    missing = [spec for spec in specs if spec.key not in existing]
    if missing:
        now = utcnow()
        insert_ignoring_conflicts(
            session,
            table_of(models.Benchmark),
            [
                {
                    "project_id": project_id,
                    "key": s.key,
                    "name": s.name,
                    "params": s.params,
                    "created_at": now,
                }
                for s in missing
            ],
            ["project_id", "key"],
        )
        # A concurrent upload may have created some of them first; theirs count as existing.
        for key, row in _benchmark_rows(
            session, project_id=project_id, keys=[s.key for s in missing]
        ).items():
            ids[key] = row.id
            existing[key] = row
    return ids, existing


def _benchmark_rows(
    session: Session, *, project_id: int, keys: Sequence[str]
) -> dict[str, StoredBenchmark]:
    out: dict[str, StoredBenchmark] = {}
    # Chunked: SQLite caps the number of bound parameters in one statement.
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        rows = session.execute(
            select(
                models.Benchmark.key,
                models.Benchmark.id,
                models.Benchmark.name,
                models.Benchmark.params,
            ).where(models.Benchmark.project_id == project_id, models.Benchmark.key.in_(chunk))
        )
        for key, bench_id, name, params in rows:
            out[key] = StoredBenchmark(id=bench_id, name=name, params=params)
    return out


def get_run(session: Session, *, run_id: str) -> models.Run | None:
    return session.get(models.Run, run_id)


def add_run(session: Session, *, run: models.Run) -> None:
    session.add(run)
    # Flushed now so a duplicate id fails here, before thousands of child rows are sent.
    session.flush()


def set_content_hash(session: Session, *, run_id: str, content_hash: str) -> None:
    session.execute(
        update(models.Run).where(models.Run.id == run_id).values(content_hash=content_hash)
    )


def add_rows(session: Session, *, table: Table, rows: Iterable[dict[str, Any]]) -> int:
    """Bulk insert (one executemany, batched by the driver); returns the row count."""
    batch = list(rows)
    if batch:
        session.execute(table.insert(), batch)
    return len(batch)


def pack_samples(samples: Sequence[float]) -> bytes:
    return np.asarray(samples, dtype="<f8").tobytes()


def unpack_samples(blob: bytes) -> list[float]:
    return np.frombuffer(blob, dtype="<f8").tolist()  # type: ignore[no-any-return]


def count_rows(session: Session) -> dict[str, int]:
    """Row counts of every table, for `perfgate demo` and tests that check nothing was stored."""
    counts: dict[str, int] = {}
    for table in models.Base.metadata.sorted_tables:
        counts[table.name] = session.scalar(select(func.count()).select_from(table)) or 0
    return counts
