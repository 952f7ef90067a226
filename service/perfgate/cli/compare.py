"""`perfgate compare BASE HEAD`: what got slower, with statistics that hold on noisy runners."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from perfgate.cli.options import db_option, format_option, max_size_option
from perfgate.config import parse_byte_size
from perfgate.errors import EXIT_REGRESSION

if TYPE_CHECKING:
    from perfgate.stats.compare import CompareSettings
    from perfgate.stats.model import Comparison


@click.command("compare")
@click.argument("base")
@click.argument("head")
@format_option("table", "markdown", "json", default="table")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the output to a file instead of stdout.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=0.03,
    show_default=True,
    help="Smallest relative change that counts (0.03 = 3%).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="False discovery rate for significance.",
)
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a regression is found.")
@click.option("--project", help="Project in the store [default: the only one, or the files'].")
@click.option(
    "--base-branch",
    default="main",
    show_default=True,
    help="Branch whose nearest earlier run stands in for a base commit without data.",
)
@db_option
@max_size_option
def command(
    *,
    base: str,
    head: str,
    fmt: str,
    out: Path | None,
    threshold: float,
    alpha: float,
    fail_on_regression: bool,
    project: str | None,
    base_branch: str,
    db_url: str,
    max_size: str,
) -> None:
    """Compare BASE with HEAD: each a results file, a folder of them, a commit or a branch.

    A folder holds the results files of one commit (say, rounds measured alternately with the
    other side's); they are pooled like runs stored for the same commit. A commit may be a unique
    prefix. Each benchmark's noise is learnt from the rounds compared, the store's earlier runs
    of the base branch on the same runner (5 or more also raise its threshold to its run-to-run
    spread) and the runner's calibration record (perfgate calibrate); see docs/comparator.md.

    \b
    Exit codes:
      0  compared (regressions or not, without --fail-on-regression)
      1  a regression was found and --fail-on-regression was given
      2  bad usage or input: an unreadable file, a HEAD or branch not in the store
      3  the store (database) failed
      4  no baseline: the store has no runs of BASE, nor of --base-branch before HEAD
         (a first PR, an empty store); CI posts a neutral check instead of a verdict
    """
    # Imported here: scipy costs a second, and `perfgate --help` should not pay it.
    from perfgate.stats.compare import CompareSettings

    comparison = build_comparison(
        base=base,
        head=head,
        settings=CompareSettings(alpha=alpha, threshold=threshold),
        project=project,
        base_branch=base_branch,
        db_url=db_url,
        max_bytes=parse_byte_size(max_size, source="--max-size"),
    )
    emit(comparison, fmt=fmt, out=out)
    if fail_on_regression and comparison.has_regression():
        sys.exit(EXIT_REGRESSION)


def build_comparison(
    *,
    base: str,
    head: str,
    settings: CompareSettings,
    project: str | None,
    base_branch: str,
    db_url: str,
    max_bytes: int,
) -> Comparison:
    from perfgate.store import comparisons
    from perfgate.store.connect import open_store
    from perfgate.store.engine import is_missing_sqlite_file

    # A folder is the runs of one commit, like several stored runs of it.
    files = {ref: Path(ref) for ref in (base, head) if Path(ref).exists()}
    # Two files compare on their own; the store adds history when there is one to read.
    if len(files) == 2 and is_missing_sqlite_file(db_url):
        return comparisons.compare_sides(
            comparisons.load_side_file(files[base], max_bytes=max_bytes),
            comparisons.load_side_file(files[head], max_bytes=max_bytes),
            settings=settings,
            history=[],
        )
    with open_store(db_url) as store:
        with store.sessions() as session:
            if head in files:
                head_side = comparisons.load_side_file(files[head], max_bytes=max_bytes)
            else:
                head_side = comparisons.require_documents(
                    comparisons.resolve_side(
                        session,
                        project_id=comparisons.project_id_for(session, name=project),
                        ref=head,
                    ),
                    f"head {head}",
                )
            if base in files:
                base_side = comparisons.load_side_file(files[base], max_bytes=max_bytes)
            else:
                base_side = comparisons.require_documents(
                    comparisons.resolve_base(
                        session,
                        project=project or head_side.documents[0].run.project,
                        ref=base,
                        fallback_branch=base_branch,
                        before=head_side.started_at,
                    ),
                    f"base {base}",
                )
        history = comparisons.history_for(store.sessions, base=base_side)
        calibration = comparisons.calibration_for(store.sessions, base=base_side)
    return comparisons.compare_sides(
        base_side, head_side, settings=settings, history=history, calibration=calibration
    )


def emit(comparison: Comparison, *, fmt: str, out: Path | None) -> None:
    """Render in `fmt` to `out` (or stdout)."""
    if fmt == "json":
        from perfgate.report.comparison_json import comparison_to_json

        text = json.dumps(comparison_to_json(comparison), indent=1) + "\n"
    elif fmt == "markdown":
        from perfgate.report.markdown import render_markdown

        text = render_markdown(comparison)
    else:
        from rich.console import Console

        from perfgate.report.terminal import render_terminal

        if out is None:
            render_terminal(comparison, Console())
            return
        # Recorded, not shown: the file gets the same table without terminal colours.
        console = Console(record=True, width=160, file=io.StringIO())
        render_terminal(comparison, console)
        text = console.export_text()
    if out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
