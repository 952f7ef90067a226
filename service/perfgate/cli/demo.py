"""`perfgate demo`: the pipeline end to end on the embedded store."""

from __future__ import annotations

from pathlib import Path

import click

from perfgate.cli.options import db_option
from perfgate.cli.upload import describe
from perfgate.results import dump_document, parse_document
from perfgate.store import repository
from perfgate.store.connect import open_store
from perfgate.store.engine import mask_url
from perfgate.store.uploads import store_document
from perfgate.synthetic import synthetic_document


@click.command("demo")
@db_option
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".perfgate/demo"),
    show_default=True,
    help="Where the demo's results documents are written.",
)
def command(db_url: str, out_dir: Path) -> None:
    """Store a results document in the embedded store and show what was stored.

    Uses a synthetic document shaped like a real run (200 benchmark instances).
    """
    document = parse_document(synthetic_document(benchmarks=200, samples=40, seed=1))
    path = dump_document(document, out_dir / f"{document.run.commit}.json")
    click.echo(f"wrote {path}")
    with open_store(db_url) as store:
        outcome = store_document(store.sessions, document)
        click.echo(f"{mask_url(store.engine.url)}: {describe(outcome)}")
        with store.sessions() as session:
            counts = repository.count_rows(session)
    click.echo("rows in the store: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
