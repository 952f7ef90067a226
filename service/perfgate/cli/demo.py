"""`perfgate demo`: the whole pipeline on the embedded store, with a planted regression to find."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import click

from perfgate.cli.options import db_option
from perfgate.cli.upload import describe
from perfgate.config import environment_set, running_in_ci
from perfgate.errors import UsageError

PROJECT = "perfgate/demo"
# The examples read this to plant an extra copy in one benchmark (see examples/benchmarks).
SLOWDOWN_VARIABLE = "PERFGATE_DEMO_SLOWDOWN"


def examples_dir() -> Path:
    """The example benchmarks: inside the installed package, else at the repository root."""
    packaged = Path(__file__).resolve().parent.parent / "examples" / "benchmarks"
    if packaged.is_dir():
        return packaged
    # An editable install runs from the source tree, where examples/ sits at the top.
    return Path(__file__).resolve().parents[3] / "examples" / "benchmarks"


def _commit(label: str) -> str:
    return hashlib.sha1(f"perfgate-demo-{label}".encode()).hexdigest()


@click.command("demo")
@db_option
@click.option(
    "--benchmarks",
    type=click.Path(exists=False, path_type=Path),
    help="Benchmarks to run  [default: the examples shipped with perfgate]",
)
@click.option("-k", "--filter", "filter_expr", metavar="EXPR", help="Run only matching instances.")
@click.option(
    "--max-time",
    type=click.FloatRange(min=0, min_open=True),
    default=0.3,
    show_default=True,
    metavar="S",
    help="Timing budget per benchmark instance.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Rounds per side, alternating main and PR, each in a fresh process: what lets "
    "perfgate see run-to-run noise (some examples land in one of two speeds per process; "
    "with 3 rounds a side, one side draws only slow ones in a few percent of runs).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="torch intra-op threads (1 keeps timings steady on a shared machine).",
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".perfgate/demo"),
    show_default=True,
    help="Where the results documents, the comparison JSON and the markdown go.",
)
def command(
    *,
    db_url: str,
    benchmarks: Path | None,
    filter_expr: str | None,
    max_time: float,
    rounds: int,
    threads: int,
    out_dir: Path,
) -> None:
    """Run the examples as a "main" commit, then as a "PR" that plants a slowdown, and compare.

    Both runs go into the embedded store (or --db); the comparison is printed as the terminal
    table and as the pull-request comment perfgate would post.
    """
    benchmarks = benchmarks or examples_dir()
    if not benchmarks.exists():
        raise UsageError(
            f"--benchmarks: {benchmarks} does not exist; point it at a folder of bench_*.py files"
        )
    from rich.console import Console

    from perfgate.cli.progress import make_reporter
    from perfgate.harness.runner import RunOptions, run_benchmarks
    from perfgate.report.markdown import render_markdown
    from perfgate.report.terminal import render_terminal
    from perfgate.results import ResultsDocument, dump_document
    from perfgate.sides import Side
    from perfgate.stats.two_sample import CompareSettings
    from perfgate.store import compare_in_store
    from perfgate.store.connect import open_store
    from perfgate.store.uploads import store_document

    interactive = sys.stderr.isatty() and not running_in_ci()
    main_commit, pr_commit = _commit("main"), _commit("pr")
    sides = (
        ("main", main_commit, "main", "0"),
        ("PR with a planted slowdown", pr_commit, "demo-pr", "1"),
    )
    with open_store(db_url) as store:
        documents: dict[str, list[ResultsDocument]] = {"main": [], "demo-pr": []}
        # Rounds alternate between the sides (main, PR, main, PR, ...), each in a fresh process,
        # so that whatever else the machine does drifts into both sides alike, and a burst of
        # load spoils one round of one side, which the round-to-round spread then shows.
        for round_index in range(1, rounds + 1):
            for label, commit, branch, slowdown in sides:
                click.echo(
                    f"\n== round {round_index}/{rounds}: the examples as {label} ({commit[:7]})",
                    err=True,
                )
                with environment_set(**{SLOWDOWN_VARIABLE: slowdown}):
                    document = run_benchmarks(
                        RunOptions(
                            paths=(benchmarks,),
                            filter=filter_expr,
                            device="cpu",
                            max_time=max_time,
                            threads=threads,
                            # One profile pass a side is enough for attribution.
                            profile=round_index == rounds,
                            commit=commit,
                            branch=branch,
                            project=PROJECT,
                            pr=1 if branch != "main" else None,
                            base_commit=main_commit if branch != "main" else None,
                            # Fresh processes, as CI jobs would measure them.
                            isolate=True,
                        ),
                        reporter=make_reporter(interactive=interactive, stream=sys.stderr),
                    )
                name = branch if rounds == 1 else f"{branch}-round{round_index}"
                path = dump_document(document, out_dir / f"{name}.json")
                outcome = store_document(store.sessions, document)
                click.echo(f"wrote {path}; {describe(outcome)}", err=True)
                documents[branch].append(document)

        with store.sessions() as session:
            comparison = compare_in_store.compare_in_store(
                session,
                base=Side(documents=documents["main"], label="main"),
                head=Side(documents=documents["demo-pr"]),
                settings=CompareSettings(),
            )

    from perfgate import json_text
    from perfgate.report.comparison_document import comparison_to_json

    (out_dir / "comparison.json").write_text(
        json_text.dumps(comparison_to_json(comparison), indent=1)
    )
    markdown = render_markdown(comparison)
    (out_dir / "comment.md").write_text(markdown)
    click.echo("\n== perfgate compare main demo-pr\n")
    render_terminal(comparison, Console(width=max(Console().width, 120)))
    click.echo("\n== the pull-request comment (also in " + str(out_dir / "comment.md") + ")\n")
    click.echo(markdown)
