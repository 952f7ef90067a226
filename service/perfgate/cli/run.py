"""`perfgate run [PATH...]`: discover and run benchmarks, write the results document, store it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from perfgate.cli.options import (
    db_option,
    filter_option,
    git_options,
    max_time_option,
    policy_device_option,
    resolve,
    rounds_option,
    sampling_options,
    server_options,
)
from perfgate.cli.upload import describe, describe_server
from perfgate.config import running_in_ci
from perfgate.errors import UsageError
from perfgate.policy import discover_policy, from_policy
from perfgate.results import ResultsDocument, dump_document


@click.command("run")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@filter_option
@policy_device_option
@rounds_option
@max_time_option
@sampling_options
@click.option(
    "--device-timing",
    type=click.Choice(["events", "queued"]),
    default="events",
    show_default=True,
    help="CUDA: what `time` measures. events: from an idle device, launching and running (a "
    "launch-bound callable is flagged and gets host_time); queued: the device's work alone, "
    "queued behind a spin kernel.",
)
@click.option(
    "--cold-cache",
    is_flag=True,
    help="CUDA: flush L2 before every call and time each call alone (default: hot cache, "
    "back-to-back calls).",
)
@click.option("--no-profile", is_flag=True, help="Skip the torch.profiler pass.")
@click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write a chrome trace per instance here.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Results file [default: .perfgate/results/<commit>.json].",
)
@db_option
@server_options
@click.option("--no-store", is_flag=True, help="Write the results file only.")
@git_options
def command(
    *,
    paths: tuple[Path, ...],
    filter_expr: str | None,
    device: str | None,
    rounds: int | None,
    max_time: float | None,
    threads: int | None,
    system_malloc: bool,
    interleave: bool | None,
    device_timing: str,
    cold_cache: bool,
    no_profile: bool,
    trace_dir: Path | None,
    out: Path | None,
    db_url: str,
    server: str | None,
    token: str | None,
    server_timeout: float,
    no_store: bool,
    commit: str | None,
    branch: str | None,
    project: str | None,
    pr: int | None,
) -> None:
    """Discover and run benchmarks (default: benchmarks/), then store the results.

    Files named bench_*.py or *_bench.py are collected from PATHS. The results document is
    written to --out and stored in --db (the embedded SQLite store by default) unless --no-store.
    Without PATHS, --device or --rounds (or their variables), the project's policy file gives
    them (docs/policy.md).
    """
    if server and not no_store and not token:
        # Checked before benchmarks run for minutes, not after.
        raise UsageError("--server needs --token (or PERFGATE_TOKEN): an upload-scoped token")
    # Imported here: torch is needed by `run` only, and every other command works without it.
    from perfgate.cli.progress import make_reporter
    from perfgate.harness.runner import RunOptions, run_benchmarks
    from perfgate.report.run_table import render_run_table

    ctx = click.get_current_context()
    policy = discover_policy()
    interactive = sys.stderr.isatty() and not running_in_ci()
    document = run_benchmarks(
        RunOptions(
            paths=paths or (Path(from_policy(policy, "benchmarks").value),),
            filter=filter_expr,
            device=resolve(ctx, "device", policy).value,
            rounds=resolve(ctx, "rounds", policy).value,
            max_time=max_time,
            threads=threads,
            pin_malloc=not system_malloc,
            interleave=interleave,
            device_timing=device_timing,
            cold_cache=cold_cache,
            profile=not no_profile,
            trace_dir=trace_dir,
            commit=commit,
            branch=branch,
            project=project,
            pr=pr,
        ),
        reporter=make_reporter(interactive=interactive, stream=sys.stderr),
    )
    render_run_table(document)
    written = dump_document(document, out or default_results_path(document))
    click.echo(f"wrote {written}")
    if no_store:
        return
    if server:
        from perfgate.server_client import upload_document

        sent = upload_document(document, server=server, token=token, deadline_s=server_timeout)
        click.echo(describe_server(sent))
    else:
        store_run(document, db_url=db_url)


def default_results_path(document: ResultsDocument) -> Path:
    return Path(".perfgate") / "results" / f"{document.run.commit}.json"


def store_run(document: ResultsDocument, *, db_url: str) -> None:
    from perfgate.store.connect import open_store
    from perfgate.store.uploads import store_document

    with open_store(db_url) as store:
        click.echo(describe(store_document(store.sessions, document)))
