"""Use case: store one results document, whole or not at all, idempotently by run id."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import ConflictError, DatabaseError, DocumentError
from perfgate.gc_pause import gc_paused
from perfgate.results import ResultsDocument, parse_document_bytes
from perfgate.store import bulk, models, row_writes
from perfgate.store.change_points import refresh_changes
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


def store_document(sessions: sessionmaker[Session], document: ResultsDocument) -> UploadOutcome:
    """Store `document` in one transaction.

    The same run id with the same content is a no-op (`created=False`); with different content it
    is a ConflictError. A concurrent upload of the same run is told apart the same way.
    """
    # The collector paused: a large document is millions of live objects, which each collection
    # the rows and the change-point refresh set off would walk again (perfgate/gc_pause.py).
    with gc_paused():
        return _store(sessions, document)


def store_document_bytes(
    sessions: sessionmaker[Session],
    raw: bytes,
    *,
    accept: Callable[[ResultsDocument], None] | None = None,
) -> UploadOutcome:
    """Parse, validate and store a document's JSON bytes (`parse_document_bytes`, then
    `store_document`); `accept(document)`, if given, runs between the two and may raise.

    One pause of the collector covers all of it, and the document is freed before the pause
    ends: alive when the collector runs again, a large document's millions of objects are walked
    once per generation (0.7-1 s each for 60,000 benchmarks), while the caller held it.
    """
    with gc_paused():
        return _parse_and_store(sessions, raw, accept)


def _parse_and_store(
    sessions: sessionmaker[Session],
    raw: bytes,
    accept: Callable[[ResultsDocument], None] | None,
) -> UploadOutcome:
    # The document is this frame's local: freed on return, inside store_document_bytes' pause.
    document = parse_document_bytes(raw)
    if accept is not None:
        accept(document)
    return _store(sessions, document)


# What the run row holds until the content hash is ready; the transaction that wrote it sets the
# hash before it commits, so no reader ever sees this.
PENDING_HASH = ""


def _store(sessions: sessionmaker[Session], document: ResultsDocument) -> UploadOutcome:
    # The content hash (a canonical dump of the whole document: a second of CPU for 60,000
    # benchmarks) is computed in a thread of its own while this one waits for the database,
    # which checks each COPY's foreign keys at its end. Leaving the pool waits for it, so the
    # document is not held past the caller's pause of the collector.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="perfgate-hash") as pool:
        return _store_hashing(sessions, document, pool.submit(document.content_hash))


def _store_hashing(
    sessions: sessionmaker[Session], document: ResultsDocument, content_hash: Future[str]
) -> UploadOutcome:
    try:
        with sessions() as session, session.begin():
            existing = row_writes.get_run(session, run_id=document.run.id)
            if existing is not None:
                return _already_stored(document, existing, content_hash.result())
            outcome = _insert(session, document, PENDING_HASH)
            # In the same transaction: a stored run always has its change points.
            refresh_changes(session, run_id=outcome.run_id)
            row_writes.set_content_hash(
                session, run_id=outcome.run_id, content_hash=content_hash.result()
            )
            return outcome
    except IntegrityError:
        # Someone stored the same run id between our check and our insert: judge theirs.
        with sessions() as session:
            existing = row_writes.get_run(session, run_id=document.run.id)
        if existing is None:
            raise
        return _already_stored(document, existing, content_hash.result())
    except DataError as exc:
        # A value the database cannot hold (a NUL byte in a string, an integer out of range) is
        # the document's fault, not the database's: bad input, exit 2 / HTTP 422.
        raise DocumentError(
            f"the database refused a value of run {document.run.id}: {describe_db_error(exc)}"
        ) from None
    except DBAPIError as exc:
        url = mask_url(sessions.kw["bind"].url)
        raise DatabaseError(
            f"storing run {document.run.id} in {url} failed: {describe_db_error(exc)}"
        ) from None


def _already_stored(
    document: ResultsDocument, existing: models.Run, content_hash: str
) -> UploadOutcome:
    if existing.content_hash != content_hash:
        raise ConflictError(
            f"run {document.run.id} is already stored with different content; "
            "a re-run needs a new run id"
        )
    return _outcome(document, created=False)


def _insert(session: Session, document: ResultsDocument, content_hash: str) -> UploadOutcome:
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
            instance_rows(document, benchmark_ids=benchmark_ids, stored=shared),
        ),
        (
            models.Measurement,
            MEASUREMENT_COLUMNS,
            measurement_rows(document, benchmark_ids=benchmark_ids),
        ),
        (models.Op, OP_COLUMNS, op_rows(document, benchmark_ids=benchmark_ids)),
    ):
        bulk.write_rows(session, table=row_writes.table_of(model), columns=columns, rows=rows)
    return _outcome(document, created=True)


def _outcome(document: ResultsDocument, *, created: bool) -> UploadOutcome:
    measurements = sum(len(b.metrics) for b in document.benchmarks)
    samples = sum(len(m.samples or ()) for b in document.benchmarks for m in b.metrics.values())
    ops = sum(len(b.profile.ops) for b in document.benchmarks if b.profile)
    return UploadOutcome(
        run_id=document.run.id,
        project=document.run.project,
        commit=document.run.commit,
        created=created,
        benchmarks=len(document.benchmarks),
        measurements=measurements,
        samples=samples,
        ops=ops,
    )
