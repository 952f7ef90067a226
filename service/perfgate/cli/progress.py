"""Progress of `perfgate run`: a rich bar on a terminal, one plain line per instance in CI.

Both render the harness's progress protocol (`perfgate.harness.progress`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from perfgate.harness.progress import InstanceProgress, RunReporter
from perfgate.report.run_table import format_ci
from perfgate.report.units import format_value

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


def _summary(progress: InstanceProgress) -> str:
    if progress.median is None:
        return f"{progress.samples} samples"
    return (
        f"{format_value(progress.median, 's')} {format_ci(progress.ci_rel)}  "
        f"({progress.samples} samples, {progress.elapsed:.1f}s)"
    )


class PlainReporter:
    """One line per finished instance, for logs: no cursor movement, no colour, no redraws."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._instances = 0
        self._rounds = 1
        self._done = 0
        self._started = time.monotonic()

    def _write(self, line: str) -> None:
        stream = self._stream or sys.stdout
        stream.write(line + "\n")
        stream.flush()

    def _prefix(self, round_index: int) -> str:
        if round_index == 0:
            return "[import]"
        self._done += 1
        total = self._instances * self._rounds
        prefix = f"[{self._done}/{total}]"
        if self._rounds > 1:
            prefix += f" round {round_index}/{self._rounds}"
        return prefix

    def run_started(self, *, instances: int, rounds: int) -> None:
        self._instances, self._rounds, self._done = instances, rounds, 0
        self._started = time.monotonic()
        plural = "s" if instances != 1 else ""
        extra = f" x {rounds} rounds" if rounds > 1 else ""
        self._write(f"perfgate: {instances} benchmark{plural}{extra}")

    def instance_started(self, key: str, *, round_index: int) -> None:
        return None

    def instance_progress(self, progress: InstanceProgress) -> None:
        return None

    def instance_finished(self, progress: InstanceProgress) -> None:
        self._write(f"{self._prefix(progress.round_index)} {progress.key}  {_summary(progress)}")

    def instance_error(self, key: str, message: str, *, round_index: int) -> None:
        self._write(f"{self._prefix(round_index)} {key}  ERROR {message}")

    def warning(self, message: str) -> None:
        self._write(f"warning: {message}")

    def run_finished(self) -> None:
        self._write(f"perfgate: done in {time.monotonic() - self._started:.1f}s")


class RichReporter:
    """A live bar (instance, elapsed, samples, median ± CI) with finished instances logged above."""

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console

        self._console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._rounds = 1

    def run_started(self, *, instances: int, rounds: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._rounds = rounds
        self._progress = Progress(
            SpinnerColumn(),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[status]}"),
            console=self._console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("", total=instances * rounds, status="")

    def _label(self, key: str, round_index: int) -> str:
        if self._rounds > 1 and round_index > 0:
            return f"{key} (round {round_index}/{self._rounds})"
        return key

    def instance_started(self, key: str, *, round_index: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task, description=_escape(self._label(key, round_index)), status="warming up"
            )

    def instance_progress(self, progress: InstanceProgress) -> None:
        if self._progress is not None and self._task is not None:
            # Interleaved sampling moves between instances: name the one the figures are for.
            self._progress.update(
                self._task,
                description=_escape(self._label(progress.key, progress.round_index)),
                status=_escape(_summary(progress)),
            )

    def _finish_one(self, line: str, *, counts: bool = True) -> None:
        if self._progress is None:
            self._console.print(line, highlight=False)
            return
        if self._task is not None:
            self._progress.update(self._task, description="", status="", advance=int(counts))
        self._progress.console.print(line, highlight=False)

    def instance_finished(self, progress: InstanceProgress) -> None:
        self._finish_one(
            f"[green]✓[/green] {_escape(self._label(progress.key, progress.round_index))}"
            f"  {_escape(_summary(progress))}"
        )

    def instance_error(self, key: str, message: str, *, round_index: int) -> None:
        self._finish_one(
            f"[red]✗ {_escape(self._label(key, round_index))}  {_escape(message)}[/red]",
            counts=round_index > 0,
        )

    def warning(self, message: str) -> None:
        target = self._progress.console if self._progress is not None else self._console
        target.print(f"[yellow]warning:[/yellow] {_escape(message)}", highlight=False)

    def run_finished(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _escape(text: str) -> str:
    from rich.markup import escape

    # Keys look like markup (`matmul[n=256]`) and would vanish unescaped.
    return escape(text)


def make_reporter(
    *, interactive: bool, stream: TextIO | None = None, **console_options: Any
) -> RunReporter:
    """A rich bar when `interactive` (a terminal, not CI), plain lines otherwise.

    The caller decides `interactive` (e.g. stdout is a TTY and CI is unset); nothing here reads
    the environment.
    """
    if interactive:
        from rich.console import Console

        return RichReporter(Console(file=stream, **console_options))
    return PlainReporter(stream)
