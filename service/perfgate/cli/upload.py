"""`perfgate upload FILE...`: store results documents."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from perfgate.cli.options import db_option, max_size_option, server_options
from perfgate.config import parse_byte_size
from perfgate.results import ResultsDocument, load_document
from perfgate.server_client import ServerUpload

if TYPE_CHECKING:
    from perfgate.store.uploads import UploadOutcome


@click.command("upload")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@db_option
@server_options
@max_size_option
def command(
    *,
    files: tuple[Path, ...],
    db_url: str,
    server: str | None,
    token: str | None,
    server_timeout: float,
    max_size: str,
) -> None:
    """Store results documents (perfgate/results@1 JSON files).

    Every file is validated before anything is stored, and each document is stored whole or not
    at all. Uploading the same document again changes nothing. With --server the documents go
    to a perfgate server (an upload-scoped --token) instead of a database.
    """
    limit = parse_byte_size(max_size, source="--max-size")
    documents = [(str(path), load_document(path, max_bytes=limit)) for path in files]
    send_documents(
        documents, db_url=db_url, server=server, token=token, server_timeout=server_timeout
    )


def send_documents(
    documents: Sequence[tuple[str, ResultsDocument]],
    *,
    db_url: str,
    server: str | None,
    token: str | None,
    server_timeout: float,
) -> None:
    """Store each (label, document) in `db_url`, or send it to `server` (the whole of each upload
    bounded by `server_timeout` seconds); one line each."""
    if server:
        from perfgate.server_client import upload_document

        for label, document in documents:
            sent = upload_document(document, server=server, token=token, deadline_s=server_timeout)
            click.echo(f"{label}: {describe_server(sent)}")
        return
    # SQLAlchemy loads here, not when the CLI starts (`perfgate --help` stays quick).
    from perfgate.store.connect import open_store
    from perfgate.store.uploads import store_document

    with open_store(db_url) as store:
        for label, document in documents:
            click.echo(f"{label}: {describe(store_document(store.sessions, document))}")


def describe(outcome: UploadOutcome) -> str:
    """One line saying what an upload did."""
    what = f"run {outcome.run_id} ({outcome.project} @ {outcome.commit[:12]})"
    if not outcome.created:
        return f"{what} was already stored with the same content; nothing to do"
    return (
        f"stored {what}: {outcome.benchmarks} benchmarks, {outcome.measurements} metrics, "
        f"{outcome.samples} samples, {outcome.ops} profile rows"
    )


def describe_server(sent: ServerUpload) -> str:
    """One line saying what an upload to a server did."""
    if not sent.created:
        return (
            f"run {sent.run_id} was already on {sent.server} with the same content; nothing to do"
        )
    return f"stored run {sent.run_id} on {sent.server}"
