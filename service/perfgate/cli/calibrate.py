"""`perfgate calibrate PATHS`: measure a runner's noise as A/A rounds of one commit; --show it."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from datetime import timezone
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from perfgate import config, json_text
from perfgate.cli.options import (
    db_option,
    device_option,
    filter_option,
    format_option,
    max_size_option,
    max_time_option,
    sampling_options,
)
from perfgate.errors import UsageError

if TYPE_CHECKING:
    from perfgate.results import ResultsDocument
    from perfgate.stats.calibration import Calibration

# What only measuring uses: refused with --from and --show rather than silently ignored.
MEASURE_OPTIONS = (
    "filter_expr",
    "device",
    "rounds",
    "max_time",
    "threads",
    "system_malloc",
    "interleave",
    "commit",
)


@click.command("calibrate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Run the suite N times (at least 4), each round in a fresh process.",
)
@filter_option
@device_option
@max_time_option
@sampling_options
@click.option(
    "--from",
    "recorded",
    is_flag=True,
    help="PATHS are results files (or folders of them) already recorded for one commit on one "
    "runner: build the record from their rounds instead of measuring.",
)
@click.option(
    "--show",
    is_flag=True,
    help="Print the newest stored record of each runner of the project instead of calibrating.",
)
@click.option(
    "--project",
    envvar=config.ENV_PROJECT,
    show_envvar=True,
    help="Project name, usually owner/repo [default: git's; with --show, the only calibrated one].",
)
@click.option(
    "--commit",
    envvar=config.ENV_COMMIT,
    show_envvar=True,
    help="Commit id of the code being measured [default: git's].",
)
@click.option(
    "--fingerprint",
    metavar="HEX",
    help="With --show: only the runner with this environment fingerprint (or prefix).",
)
@format_option("table", "json", default="table")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the record (perfgate/calibration@1 JSON) to FILE.",
)
@db_option
@max_size_option
@click.pass_context
def command(
    ctx: click.Context,
    *,
    paths: tuple[Path, ...],
    rounds: int,
    filter_expr: str | None,
    device: str,
    max_time: float | None,
    threads: int | None,
    system_malloc: bool,
    interleave: bool | None,
    recorded: bool,
    show: bool,
    project: str | None,
    commit: str | None,
    fingerprint: str | None,
    fmt: str,
    out: Path | None,
    db_url: str,
    max_size: str,
) -> None:
    """Measure this runner's noise as A/A rounds of one commit; --show the stored records.

    PATHS (default: benchmarks/) run as --rounds rounds, each in a fresh process that samples as
    `perfgate run` does (no profile pass). Each benchmark's round-to-round spread, after its
    round's machine speed factor, and its speed levels are stored in --db as the calibration
    record of this runner (its environment fingerprint), where the comparator reads them. Run it
    on the runner class your CI compares on. With --from, PATHS are results already recorded.
    """
    if show:
        _refuse(ctx, ("recorded", "out", *MEASURE_OPTIONS), "--show reads the store only")
        if paths:
            raise UsageError("--show takes no PATHS")
        show_records(project=project, fingerprint=fingerprint, fmt=fmt, db_url=db_url)
        return
    if fingerprint is not None:
        raise UsageError("--fingerprint goes with --show (a measured record is of this runner)")
    if recorded:
        _refuse(ctx, MEASURE_OPTIONS, "--from builds the record from the rounds in PATHS")
        if not paths:
            raise UsageError("--from needs PATHS: results files or folders of them")
        from perfgate.config import parse_byte_size

        documents = load_recorded(paths, max_bytes=parse_byte_size(max_size, source="--max-size"))
        _check_project(documents, project)
    else:
        documents = [
            measure(
                paths=paths or (Path("benchmarks"),),
                filter_expr=filter_expr,
                device=device,
                rounds=rounds,
                max_time=max_time,
                threads=threads,
                pin_malloc=not system_malloc,
                interleave=interleave,
                commit=commit,
                project=project,
            )
        ]
    from perfgate.stats.calibration import calibrate

    calibration = calibrate(documents)
    click.echo(
        json_text.dumps(calibration.to_json(), indent=1) if fmt == "json" else render(calibration)
    )
    if out is not None:
        _write_record(calibration, out)
    store_record(calibration, db_url=db_url)


def _refuse(ctx: click.Context, names: Sequence[str], why: str) -> None:
    """UsageError for options given on the command line that this mode would ignore."""
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name) == (
            ParameterSource.COMMANDLINE
        ):
            raise UsageError(f"{param.opts[-1]}: {why}")


def measure(
    *,
    paths: Sequence[Path],
    filter_expr: str | None,
    device: str,
    rounds: int,
    max_time: float | None,
    threads: int | None,
    pin_malloc: bool,
    interleave: bool | None,
    commit: str | None,
    project: str | None,
) -> ResultsDocument:
    """The suite as `rounds` rounds in fresh processes, with progress on stderr; kept on disk."""
    from perfgate.stats.calibration import MIN_ROUNDS

    if rounds < MIN_ROUNDS:
        # Checked before the suite runs for minutes, not after.
        raise UsageError(f"--rounds {rounds}: a calibration needs at least {MIN_ROUNDS} rounds")
    # Imported here: torch is needed by measuring only.
    from perfgate.cli.progress import make_reporter
    from perfgate.config import running_in_ci
    from perfgate.harness.runner import RunOptions, run_benchmarks
    from perfgate.results import dump_document

    document = run_benchmarks(
        RunOptions(
            paths=paths,
            filter=filter_expr,
            device=device,
            rounds=rounds,
            max_time=max_time,
            threads=threads,
            pin_malloc=pin_malloc,
            interleave=interleave,
            # Calibration needs timings only; the profile pass would add minutes and nothing else.
            profile=False,
            commit=commit,
            project=project,
        ),
        reporter=make_reporter(
            interactive=sys.stderr.isatty() and not running_in_ci(), stream=sys.stderr
        ),
    )
    # The rounds themselves are kept, so a record can be rebuilt from them (--from).
    name = f"{document.environment.fingerprint[:12]}-{document.run.commit[:12]}.json"
    written = dump_document(document, Path(".perfgate") / "calibration" / name)
    click.echo(f"wrote {written}", err=True)
    return document


def load_recorded(paths: Sequence[Path], *, max_bytes: int) -> list[ResultsDocument]:
    """The results documents in `paths` (files, or folders of *.json), each run once."""
    from perfgate.results import load_document

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise UsageError(f"{path}: the folder holds no results files (*.json)")
            files += found
        else:
            files.append(path)
    documents = [load_document(file, max_bytes=max_bytes) for file in files]
    seen: dict[str, Path] = {}
    for file, document in zip(files, documents, strict=True):
        # A run counted twice would pass for two rounds that agree perfectly.
        if document.run.id in seen:
            raise UsageError(
                f"{file}: run {document.run.id} is also {seen[document.run.id]}; "
                "each run counts once"
            )
        seen[document.run.id] = file
    return documents


def _check_project(documents: Sequence[ResultsDocument], project: str | None) -> None:
    if project and documents and documents[0].run.project != project:
        raise UsageError(
            f"--project {project}: the results are of project {documents[0].run.project}"
        )


def _write_record(calibration: Calibration, out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json_text.dumps(calibration.to_json(), indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--out {out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {out}", err=True)


def store_record(calibration: Calibration, *, db_url: str) -> None:
    from perfgate.store.calibrations import store_calibration
    from perfgate.store.connect import open_store

    with open_store(db_url) as store:
        outcome = store_calibration(store.sessions, calibration)
    runner = f"{calibration.project} on runner {calibration.fingerprint[:12]}"
    if outcome.created:
        click.echo(f"stored the calibration record of {runner}", err=True)
    else:
        click.echo(
            f"the calibration record of {runner} was already stored; nothing to do", err=True
        )


def show_records(*, project: str | None, fingerprint: str | None, fmt: str, db_url: str) -> None:
    from perfgate.errors import NotFoundError
    from perfgate.store.calibrations import HOW_TO_CALIBRATE, latest_calibrations
    from perfgate.store.connect import open_store
    from perfgate.store.engine import is_missing_sqlite_file

    if is_missing_sqlite_file(db_url):
        # Reading must not create the embedded store as a side effect.
        what = f"for project {project}" if project else "in the store"
        raise NotFoundError(f"no calibration record {what} ({HOW_TO_CALIBRATE})")
    with open_store(db_url) as store:
        records = latest_calibrations(store.sessions, project=project, fingerprint=fingerprint)
    if fmt == "json":
        click.echo(json_text.dumps([record.to_json() for record in records], indent=1))
    else:
        click.echo("\n\n".join(render(record) for record in records))


def spread_percent(sigma: float) -> str:
    """A log-scale standard deviation as the relative spread it means: 0.0198 -> `2.00%`."""
    return f"{100 * math.expm1(sigma):.2f}%"


def tails_line(tail_df: float | None) -> str:
    """What the record's tail weight does to this runner's comparisons, in one line.

    Each benchmark's CI and test on a runner with a calibration record takes no more degrees of
    freedom than its tail weight where the base branch's history does not measure tails itself
    (`noise_model.build`), so a heavy-tailed runner is told apart from a quiet one here rather
    than only in the width of its results.
    """
    from perfgate.stats.noise import MIN_TAIL_VALUES
    from perfgate.stats.noise_model import shared_tail

    taken = shared_tail(tail_df)
    if taken is None:
        return (
            f"tails: not measured (under {MIN_TAIL_VALUES} values); comparisons assume none "
            "unless the base branch's history measures them"
        )
    limit = "that" if taken == tail_df else f"{taken:g} (a weight the runner shares stops there)"
    return (
        f"tails: Student-t with {tail_df:g} df; unless the base branch's history measures its "
        "own, each benchmark's CI and test on this runner take no more degrees of freedom than "
        f"{limit} (lower: rounds now and then land far off)"
    )


def render(calibration: Calibration) -> str:
    """The record as a table: one row per benchmark metric, spread, df and speed levels."""
    started = calibration.started_at
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    when = started.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"calibration of {calibration.project} on runner {calibration.fingerprint[:12]}: "
        f"{calibration.rounds} rounds of commit {calibration.commit[:12]} from {when}",
        f"machine factor: {spread_percent(calibration.machine_sigma)} round to round "
        f"(df {calibration.machine_df})",
        tails_line(calibration.tail_df),
    ]
    if not calibration.metrics:
        lines.append("no benchmark metric has rounds enough to show a spread")
        return "\n".join(lines)
    header = ("benchmark", "metric", "spread", "df", "levels")
    rows = [
        (
            key,
            metric,
            spread_percent(noise.sigma),
            str(noise.df),
            ", ".join(f"{math.exp(level):.2f}x" for level in noise.levels)
            if len(noise.levels) > 1
            else "",
        )
        for (key, metric), noise in sorted(calibration.metrics.items())
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    right = {2, 3}
    lines.append("")
    for row in (header, *rows):
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
