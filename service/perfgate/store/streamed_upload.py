"""Use case: store a document while it is validated, a slice of benchmarks at a time.

The caller's thread validates the slices (document_slices.py) and a writer thread stores each
one in the run's single transaction as it comes, so PostgreSQL checks one slice's rows while
Python validates the next: the parse of a large upload, two to three seconds for 60,000
benchmarks, no longer comes before all of the database's work (docs/service.md, *Ingest of a
large document*). A queue of one slice bounds what is alive at once: the slice being written,
the one queued and the one being validated.

Only the common case goes this way: a new run of a valid document. Anything else (a run id
already stored, a document the slices refuse, a refusal of the caller's `accept`, a database
refusal of a value or a concurrent upload of the same run) raises `StreamRefusedError` once
the writer has rolled back, and store/uploads.py then takes the whole-document path, which gives
the answer. A database that fails otherwise (a lost connection) is a DatabaseError here too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from queue import Queue

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from perfgate.document_slices import DocumentSlices, Slice, SlicesRefusedError
from perfgate.errors import PerfgateError
from perfgate.results import ResultsDocument
from perfgate.store import row_writes
from perfgate.store.change_points import refresh_changes
from perfgate.store.run_inserts import (
    PENDING_HASH,
    Counts,
    UploadOutcome,
    database_error,
    insert_benchmarks,
    insert_run,
    outcome,
)


class StreamRefusedError(Exception):
    """Nothing was stored: the whole-document path must answer for this upload."""


# What the writer takes: a slice to store, then the content hash to commit with, or None when
# the caller stopped and the transaction is to be rolled back.
_Item = Slice | str | None


def store_streamed(
    sessions: sessionmaker[Session],
    slices: DocumentSlices,
    accept: Callable[[ResultsDocument], None] | None = None,
) -> UploadOutcome:
    """Store the document of `slices`, whole or not at all; `accept(head)` first, if given (the
    run and environment: `slices.head`). Raises StreamRefusedError for the whole-document path."""
    try:
        if accept is not None:
            accept(slices.head)
    except PerfgateError:
        raise StreamRefusedError("not accepted") from None
    writer = _Writer(sessions, slices.head)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="perfgate-store") as pool:
        writing = pool.submit(writer.write)
        ending: str | None = None
        try:
            ending = writer.feed(slices)
        except SlicesRefusedError:
            raise StreamRefusedError("a slice was refused") from None
        finally:
            # Always the writer's last item: it commits with the hash, or rolls back on None.
            writer.items.put(ending)
        try:
            return writing.result()
        except (IntegrityError, DataError) as exc:
            # The whole-document path may answer otherwise: a unique key is the same run stored
            # meanwhile (200 or 409 there), and an invalid field further on comes before a value
            # the database refused.
            raise StreamRefusedError(str(exc)) from None
        except DBAPIError as exc:
            raise database_error(sessions, slices.head.run.id, exc) from None


class _Writer:
    """The writer thread's transaction, and the queue the caller's thread feeds it by."""

    def __init__(self, sessions: sessionmaker[Session], head: ResultsDocument) -> None:
        self.sessions = sessions
        self.head = head
        self.items: Queue[_Item] = Queue(maxsize=1)
        # Set when the writer fails: the caller stops validating slices nobody will store.
        self.failed = threading.Event()

    def feed(self, slices: DocumentSlices) -> str | None:
        """Validate and hand over each slice (the caller's thread); the content hash when all
        went, None when the writer failed first (its error is the outcome)."""
        for part in slices.slices():
            if self.failed.is_set():
                return None
            self.items.put(part)
        return slices.content_hash()

    def write(self) -> UploadOutcome:
        """Store the slices as they come, in one transaction (the writer's thread)."""
        ended = False
        try:
            with self.sessions() as session, session.begin():
                run_id = self.head.run.id
                if row_writes.get_run(session, run_id=run_id) is not None:
                    raise StreamRefusedError(f"run {run_id} is already stored")
                project_id = insert_run(session, self.head, PENDING_HASH)
                counts = Counts()
                while isinstance(item := self.items.get(), Slice):
                    insert_benchmarks(
                        session, item.document, project_id=project_id, first_position=item.start
                    )
                    counts += Counts.of(item.document.benchmarks)
                ended = True
                if item is None:
                    raise StreamRefusedError("the caller stopped")
                # In the same transaction: a stored run always has its change points.
                refresh_changes(session, run_id=run_id)
                row_writes.set_content_hash(session, run_id=run_id, content_hash=item)
                return outcome(self.head, counts, created=True)
        except BaseException:
            self.failed.set()
            # The caller puts items until its last one: take them, so that it never waits on a
            # full queue for a writer that stopped.
            while not ended:
                ended = not isinstance(self.items.get(), Slice)
            raise
