"""`perfgate bisect GOOD BAD [PATHS...]`: name the commit that made a benchmark slower."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from perfgate.bisect.gitops import Interrupts
from perfgate.cli.options import filter_option, max_time_option
from perfgate.policy import discover_policy, from_policy

# Exit status when the bisect ends without naming one commit (docs/bisect.md).
EXIT_NOT_NAMED = 1
# Ctrl-C or SIGTERM, as shells report an interrupted command (128 + SIGINT).
EXIT_INTERRUPTED = 130


@click.command("bisect")
@click.argument("good")
@click.argument("bad")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--benchmark",
    "keys",
    multiple=True,
    metavar="KEY",
    help="The benchmark key to bisect (repeatable) [default: every benchmark that regresses "
    "from GOOD to BAD; a regression of any of them makes a commit bad].",
)
@filter_option
@click.option(
    "--metric",
    default="time",
    show_default=True,
    help="The metric judged at each step.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=2),
    default=3,
    show_default=True,
    help="Rounds per side at each step, GOOD and the candidate alternating, each in a fresh "
    "process.",
)
@click.option(
    "--extra-rounds",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="More rounds a side, one at a time, while the verdict is inconclusive; then the commit "
    "is skipped.",
)
@max_time_option
@click.option(
    "--device",
    default="auto",
    show_default=True,
    metavar="auto|cpu|cuda[:N]",
    help="Where benchmarks run; auto picks CUDA when available.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    help="torch intra-op threads [default: torch's]; 1 keeps CPU timings steady on shared runners.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0, min_open=True),
    help="Smallest relative change that makes a commit bad (0.03 = 3%) [default: halfway, in "
    "log, to the change BAD shows against GOOD].",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="False discovery rate for significance.",
)
def command(
    *,
    good: str,
    bad: str,
    paths: tuple[Path, ...],
    keys: tuple[str, ...],
    filter_expr: str | None,
    metric: str,
    rounds: int,
    extra_rounds: int,
    max_time: float | None,
    device: str,
    threads: int | None,
    threshold: float | None,
    alpha: float,
) -> None:
    """Find the first commit after GOOD up to BAD where a benchmark got slower (git bisect run).

    First BAD is measured against GOOD: it must regress, and the benchmarks that did (or the
    --benchmark KEYs) are what the bisect follows. Then at each step git checks a commit out and
    perfgate measures it against GOOD in alternating rounds, each a fresh process in that
    commit's tree, and answers good (not slower beyond the threshold), bad (any followed
    benchmark slower beyond it) or skip (still unclear after --extra-rounds, or the benchmarks
    cannot run at that commit). Both commits live in temporary worktrees, removed at the end;
    your checkout is never touched. PATHS are relative to the repository root (default: the
    policy's, else benchmarks/). Exit 0 when a first bad commit is named, 1 when none can be
    (BAD does not regress, or skips leave several candidates), 2 for bad arguments or an
    aborted bisect (docs/bisect.md).
    """
    from perfgate.bisect.driver import BisectSettings, bisect

    policy = discover_policy()
    chosen = paths or (Path(from_policy(policy, "benchmarks").value),)
    settings = BisectSettings(
        paths=tuple(str(p) for p in chosen),
        filter=filter_expr,
        keys=keys or None,
        metric=metric,
        rounds=rounds,
        extra_rounds=extra_rounds,
        max_time=max_time,
        device=device,
        threads=threads,
        threshold=threshold,
        alpha=alpha,
    )
    interrupts = Interrupts()
    try:
        with _signals_to(interrupts):
            report = bisect(
                good=good,
                bad=bad,
                settings=settings,
                cwd=Path.cwd(),
                echo=click.echo,
                interrupts=interrupts,
            )
            interrupts.check()
    except KeyboardInterrupt:
        # By now the bisect is reset and the worktrees are gone (the driver's cleanup ran).
        click.echo("error: interrupted; the bisect was reset and its worktrees removed", err=True)
        sys.exit(EXIT_INTERRUPTED)

    click.echo("\n== perfgate bisect: steps (the first is BAD)")
    for step in report.steps:
        click.echo(f"{step.commit[:12]}  {step.answer:<5} {step.rounds} rounds  {step.reason}")
    if report.first_bad is None:
        click.echo(f"\nno first bad commit named: {report.problem}")
        for candidate in report.candidates:
            click.echo(f"  could be {candidate}")
        sys.exit(EXIT_NOT_NAMED)
    click.echo(f"\nfirst bad commit: {report.first_bad} {report.first_bad_subject}")
    measured = report.step_of(report.first_bad)
    for line in measured.results if measured else []:
        click.echo(f"  {line.describe()}")


@contextmanager
def _signals_to(interrupts: Interrupts) -> Iterator[None]:
    """Ctrl-C and SIGTERM go to `interrupts` for the session (the cleanup runs either way)."""
    wanted = (signal.SIGINT, signal.SIGTERM)
    try:
        previous = {s: signal.signal(s, interrupts.handle) for s in wanted}
    except ValueError:  # not the main thread (a test runner's): nothing to install
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
