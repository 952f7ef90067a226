"""The harness's progress protocol: what a run tells whoever watches it.

The runner, the worker protocol and the measuring loops speak `RunReporter`; `NullReporter` says
nothing. The renderers a person sees (a rich bar on a terminal, plain lines in CI) are the CLI's
(`perfgate.cli.progress`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class InstanceProgress:
    """Where one instance stands: sent while sampling and once when it finished."""

    key: str
    round_index: int
    samples: int
    median: float | None
    ci_rel: float | None
    elapsed: float


class RunReporter(Protocol):
    """What the runner tells the person watching.

    `run_started` announces `instances` x `rounds` measurements. Rounds are numbered from 1; an
    error with round 0 is a benchmark file that failed to import (not one of the measurements).
    """

    def run_started(self, *, instances: int, rounds: int) -> None: ...

    def instance_started(self, key: str, *, round_index: int) -> None: ...

    def instance_progress(self, progress: InstanceProgress) -> None: ...

    def instance_finished(self, progress: InstanceProgress) -> None: ...

    def instance_error(self, key: str, message: str, *, round_index: int) -> None: ...

    def warning(self, message: str) -> None: ...

    def run_finished(self) -> None: ...


class NullReporter:
    """Says nothing (library use and tests)."""

    def run_started(self, *, instances: int, rounds: int) -> None:
        return None

    def instance_started(self, key: str, *, round_index: int) -> None:
        return None

    def instance_progress(self, progress: InstanceProgress) -> None:
        return None

    def instance_finished(self, progress: InstanceProgress) -> None:
        return None

    def instance_error(self, key: str, message: str, *, round_index: int) -> None:
        return None

    def warning(self, message: str) -> None:
        return None

    def run_finished(self) -> None:
        return None
