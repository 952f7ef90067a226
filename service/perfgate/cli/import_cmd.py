"""`perfgate import FORMAT FILE...`: other tools' results as one perfgate run, stored as `upload`
does."""

from __future__ import annotations

from pathlib import Path

import click

from perfgate.cli.options import db_option, git_options, max_size_option, server_options
from perfgate.cli.upload import send_documents
from perfgate.config import parse_byte_size
from perfgate.errors import UsageError
from perfgate.importers import FORMATS
from perfgate.importers.common import SUMMARY_METHOD, ImportedFile
from perfgate.results import dump_document


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the perfgate/results@1 document here.",
)
@click.option(
    "--store/--no-store",
    default=True,
    show_default=True,
    help="Store the run in --db (or send it to --server); --no-store needs --out.",
)
@db_option
@server_options
@max_size_option
@git_options
def command(
    *,
    fmt: str,
    files: tuple[Path, ...],
    out: Path | None,
    store: bool,
    db_url: str,
    server: str | None,
    token: str | None,
    server_timeout: float,
    max_size: str,
    commit: str | None,
    branch: str | None,
    project: str | None,
    pr: int | None,
) -> None:
    """Import benchmark results of another tool as one perfgate run.

    FORMAT is pytest-benchmark (--benchmark-json), googlebench (--benchmark_format=json),
    pyperf (-o FILE), asv (a results file of one machine and commit) or torch-pickle (a
    pickled list of torch.utils.benchmark Measurements). Several FILES are several runs of
    one suite: each becomes a round of the benchmarks it holds. Commit, branch and project come
    from the options, else from the files, else from GitHub Actions and git. See
    docs/importers.md.
    """
    if not store and out is None:
        raise UsageError("--no-store without --out would import nothing: give --out FILE")
    from perfgate.imports import import_files

    document, imported = import_files(
        fmt,
        files,
        max_bytes=parse_byte_size(max_size, source="--max-size"),
        commit=commit,
        branch=branch,
        project=project,
        pr=pr,
    )
    for file in imported:
        click.echo(f"{file.source}: {describe_file(file)}")
    if out is not None:
        click.echo(f"wrote {dump_document(document, out)}")
    if store:
        label = str(files[0]) if len(files) == 1 else f"{len(files)} {fmt} files"
        send_documents(
            [(label, document)],
            db_url=db_url,
            server=server,
            token=token,
            server_timeout=server_timeout,
        )


def describe_file(file: ImportedFile) -> str:
    """One line: what a file held, and whether any benchmark came without its samples."""
    benchmarks = len(file.benchmarks)
    failed = sum(1 for b in file.benchmarks if b.error is not None)
    summary = sum(
        1 for b in file.benchmarks if any(m.method == SUMMARY_METHOD for m in b.metrics.values())
    )
    parts = [f"{benchmarks} benchmark{'s' if benchmarks != 1 else ''}"]
    if failed:
        parts.append(f"{failed} failed")
    if summary:
        parts.append(
            f"{summary} with summary statistics only (one sample per file: a regression needs "
            "several files a side; see docs/importers.md)"
        )
    return ", ".join(parts)
