"""The writes of one upload, in the caller's transaction: the run row, then its benchmarks' rows.

Both ways of storing a document use them: whole (store/uploads.py) and a slice of benchmarks at
a time (store/streamed_upload.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import DatabaseError
from perfgate.results import Benchmark, ResultsDocument
from perfgate.store import bulk, models, row_writes
from perfgate.store.documents import (
    INSTANCE_COLUMNS,
    MEASUREMENT_COLUMNS,
    OP_COLUMNS,
    instance_rows,
    measurement_rows,
    op_rows,
    run_row,
)
from perfgate.store.engine import describe_db_error, mask_url

# What the run row holds until the content hash is ready; the transaction that wrote it sets the
# hash before it commits, so no reader ever sees this.
PENDING_HASH = ""


@dataclass(frozen=True)
class UploadOutcome:
    run_id: str
    project: str
    commit: str
    # False when the same document was already stored (nothing was written).
    created: bool
    benchmarks: int
    measurements: int
    samples: int
    ops: int


@dataclass(frozen=True)
class Counts:
    """What an upload's benchmarks hold, for its outcome."""

    benchmarks: int = 0
    measurements: int = 0
    samples: int = 0
    ops: int = 0

    @classmethod
    def of(cls, benchmarks: Sequence[Benchmark]) -> Counts:
        return cls(
            benchmarks=len(benchmarks),
            measurements=sum(len(b.metrics) for b in benchmarks),
            samples=sum(len(m.samples or ()) for b in benchmarks for m in b.metrics.values()),
            ops=sum(len(b.profile.ops) for b in benchmarks if b.profile),
        )

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            benchmarks=self.benchmarks + other.benchmarks,
            measurements=self.measurements + other.measurements,
            samples=self.samples + other.samples,
            ops=self.ops + other.ops,
        )


def outcome(document: ResultsDocument, counts: Counts, *, created: bool) -> UploadOutcome:
    return UploadOutcome(
        run_id=document.run.id,
        project=document.run.project,
        commit=document.run.commit,
        created=created,
        benchmarks=counts.benchmarks,
        measurements=counts.measurements,
        samples=counts.samples,
        ops=counts.ops,
    )


def insert_run(session: Session, document: ResultsDocument, content_hash: str) -> int:
    """The run row of `document` (its benchmarks play no part), with its project and shared
    environment row; returns the project's id."""
    project_id = row_writes.ensure_project(session, name=document.run.project)
    environment = row_writes.ensure_environment(
        session,
        fingerprint=document.environment.fingerprint,
        data=document.environment.as_dict(),
    )
    row_writes.add_run(
        session,
        run=run_row(
            document, project_id=project_id, environment=environment, content_hash=content_hash
        ),
    )
    return project_id


def insert_benchmarks(
    session: Session, document: ResultsDocument, *, project_id: int, first_position: int = 0
) -> None:
    """The rows of `document`'s benchmarks, the run's from position `first_position` on: their
    benchmark rows where missing, and their instances, measurements and ops."""
    benchmark_ids, stored = bulk.ensure_benchmark_rows(
        session,
        project_id=project_id,
        specs=[
            row_writes.BenchmarkSpec(key=b.key, name=b.name, params=b.params)
            for b in document.benchmarks
        ],
    )
    # Streamed from generators into COPY (PostgreSQL) or the driver's executemany (SQLite): the
    # rows of a large document are never all in memory at once.
    shared = {key: (row.name, row.params) for key, row in stored.items()}
    for model, columns, rows in (
        (
            models.Instance,
            INSTANCE_COLUMNS,
            instance_rows(
                document,
                benchmark_ids=benchmark_ids,
                stored=shared,
                first_position=first_position,
            ),
        ),
        (
            models.Measurement,
            MEASUREMENT_COLUMNS,
            measurement_rows(document, benchmark_ids=benchmark_ids),
        ),
        (models.Op, OP_COLUMNS, op_rows(document, benchmark_ids=benchmark_ids)),
    ):
        bulk.write_rows(session, table=row_writes.table_of(model), columns=columns, rows=rows)


def database_error(sessions: sessionmaker[Session], run_id: str, exc: DBAPIError) -> DatabaseError:
    """The error a user gets when the database failed while storing run `run_id`."""
    url = mask_url(sessions.kw["bind"].url)
    return DatabaseError(f"storing run {run_id} in {url} failed: {describe_db_error(exc)}")
