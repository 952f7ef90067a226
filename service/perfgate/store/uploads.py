"""Use case: store one results document, whole or not at all, idempotently by run id."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from perfgate import document_json
from perfgate.document_slices import SlicesRefusedError, open_slices
from perfgate.errors import ConflictError, DocumentError
from perfgate.gc_pause import gc_paused
from perfgate.results import ResultsDocument, decode_json, parse_document_bytes
from perfgate.store import models, row_writes
from perfgate.store.change_points import refresh_changes
from perfgate.store.engine import describe_db_error
from perfgate.store.run_inserts import (
    PENDING_HASH,
    Counts,
    UploadOutcome,
    database_error,
    insert_benchmarks,
    insert_run,
    outcome,
)
from perfgate.store.streamed_upload import StreamRefusedError, store_streamed

__all__ = ["UploadOutcome", "store_document", "store_document_bytes"]


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
    """Parse, validate and store a document's JSON bytes: the same outcome, stored rows and
    errors as `parse_document_bytes` then `store_document`; `accept(document)`, if given, runs
    between the two and may raise (it is given the run and environment: their benchmarks may
    not be there yet).

    A new run of a valid document is stored while it is validated, a slice of benchmarks at a
    time (store/streamed_upload.py); anything else, and whatever that path refuses, goes the
    whole-document way, which names what is wrong.

    One pause of the collector covers all of it, and the document is freed before the pause
    ends: alive when the collector runs again, a large document's millions of objects are walked
    once per generation (0.7-1 s each for 60,000 benchmarks), while the caller held it.
    """
    with gc_paused():
        try:
            return _stream(sessions, raw, accept)
        except StreamRefusedError:
            pass
        return _parse_and_store(sessions, raw, accept)


def _stream(
    sessions: sessionmaker[Session],
    raw: bytes,
    accept: Callable[[ResultsDocument], None] | None,
) -> UploadOutcome:
    # The decoded data is this frame's local, freed on return (the slices drop theirs as they go).
    data, flagged = decode_json(raw, source="", decode=document_json.decode_checked)
    try:
        slices = open_slices(data, flagged=flagged)
    except SlicesRefusedError:
        raise StreamRefusedError("not the common case") from None
    return store_streamed(sessions, slices, accept)


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
        raise database_error(sessions, document.run.id, exc) from None


def _already_stored(
    document: ResultsDocument, existing: models.Run, content_hash: str
) -> UploadOutcome:
    if existing.content_hash != content_hash:
        raise ConflictError(
            f"run {document.run.id} is already stored with different content; "
            "a re-run needs a new run id"
        )
    return outcome(document, Counts.of(document.benchmarks), created=False)


def _insert(session: Session, document: ResultsDocument, content_hash: str) -> UploadOutcome:
    project_id = insert_run(session, document, content_hash)
    insert_benchmarks(session, document, project_id=project_id)
    return outcome(document, Counts.of(document.benchmarks), created=True)
