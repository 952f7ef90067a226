"""`perfgate run [PATH...]`: discover and run benchmarks, write the results document, store it."""

from __future__ import annotations

from pathlib import Path

import click

from perfgate.cli.options import db_option, git_options, server_options
from perfgate.errors import NotImplementedYetError


@click.command("run")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-k",
    "--filter",
    "filter_expr",
    metavar="EXPR",
    help="Only instances whose key matches (substrings with and/or/not, like pytest -k).",
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    metavar="auto|cpu|cuda[:N]",
    help="Where benchmarks run; auto picks CUDA when available.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run the selection N times, each round in a fresh process.",
)
@click.option(
    "--max-time",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Timing budget per benchmark instance, in seconds.",
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
def command(**_options: object) -> None:
    """Discover and run benchmarks (default: benchmarks/), then store the results.

    Files named bench_*.py or *_bench.py are collected from PATHS.
    """
    raise NotImplementedYetError("perfgate run is not implemented yet")
