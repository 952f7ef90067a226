"""One bisect step: the checked-out candidate against GOOD, answered as `git bisect run` reads it.

`git bisect run` calls `python -m perfgate.bisect.step REQUEST.json` in the worktree it has
checked the candidate out in. The step measures GOOD and the candidate in alternating rounds,
each round a fresh worker process whose working directory (and first `sys.path` entries) is that
side's tree, so each side's benchmarks import their own commit's code. The comparison goes to
`decide_step`; the step appends what it found to the session's log and exits with git's code.

Any failure of the step itself exits 128, which makes git abort the bisect instead of marking
the commit: an uncaught exception would exit 1 and brand a commit bad for a broken harness.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfgate.bisect.decide import (
    EXIT_ABORT,
    EXIT_SKIP,
    StepDecision,
    decide_step,
    step_settings,
)
from perfgate.errors import PerfgateError
from perfgate.results import ResultsDocument
from perfgate.stats.model import MetricResult

# A project name for the documents the step builds: they are never stored.
PROJECT = "perfgate/bisect"


@dataclass(frozen=True)
class StepRequest:
    """What every step of one bisect measures and how (written once by the driver as JSON)."""

    good_tree: str
    good_commit: str
    paths: list[str]
    log: str
    filter: str | None = None
    keys: list[str] | None = None
    metric: str = "time"
    rounds: int = 3
    extra_rounds: int = 4
    max_time: float | None = None
    device: str = "auto"
    threads: int | None = None
    threshold: float = 0.03
    # Per-benchmark thresholds that replace `threshold` (the midpoints to BAD's change).
    key_thresholds: dict[str, float] = field(default_factory=dict)
    alpha: float = 0.05

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> StepRequest:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class ResultLine:
    """One judged result as the log and the progress lines show it."""

    key: str
    metric: str
    verdict: str
    ratio: float | None
    ci: tuple[float, float] | None
    reason: str

    @classmethod
    def of(cls, result: MetricResult) -> ResultLine:
        return cls(
            key=result.key,
            metric=result.metric,
            verdict=result.verdict,
            ratio=result.ratio,
            ci=result.ci,
            reason=result.reason,
        )

    def describe(self) -> str:
        change = format_change(self.ratio, self.ci)
        return f"{self.key} {self.metric}: {change}: {self.verdict}" + (
            f" ({self.reason})" if self.reason and self.verdict not in ("regression",) else ""
        )


@dataclass(frozen=True)
class StepRecord:
    """One step as the session's log keeps it: the commit, git's answer and why."""

    commit: str
    answer: str
    exit_code: int
    reason: str
    rounds: int
    results: list[ResultLine] = field(default_factory=list)
    # The keys that made the step bad (decide.StepDecision.slower).
    slower: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, line: str) -> StepRecord:
        data: dict[str, Any] = json.loads(line)
        results = [
            ResultLine(**{**r, "ci": tuple(r["ci"]) if r["ci"] else None}) for r in data["results"]
        ]
        return cls(**{**data, "results": results})


def format_change(ratio: float | None, ci: tuple[float, float] | None) -> str:
    """`+812.4% (95% CI +790.1% .. +840.0%)`: the oriented ratio as a change (> 0 is worse)."""
    if ratio is None:
        return "no ratio"
    text = f"{100 * (ratio - 1):+.1f}%"
    if ci is not None:
        text += f" (95% CI {100 * (ci[0] - 1):+.1f}% .. {100 * (ci[1] - 1):+.1f}%)"
    return text


class _UnmeasurableError(Exception):
    """The candidate cannot be measured at all (no benchmarks there): a skip, not an abort."""


def run_step(
    request: StepRequest, *, candidate_tree: Path, echo: Callable[[str], None]
) -> StepRecord:
    """Measure the candidate checked out in `candidate_tree` against GOOD and decide.

    Raises for a failure that must abort the bisect (GOOD cannot be measured, a harness error).
    """
    commit = _head(candidate_tree)
    max_rounds = request.rounds + request.extra_rounds
    echo(
        f"perfgate bisect: measuring {commit[:12]} against GOOD {request.good_commit[:12]}, "
        f"{request.rounds} alternating rounds a side (up to {max_rounds})"
    )
    good_side: list[ResultsDocument] = []
    candidate_side: list[ResultsDocument] = []
    target = request.rounds
    while True:
        while len(candidate_side) < target:
            number = len(candidate_side) + 1
            good_side.append(
                _measure(request, Path(request.good_tree), request.good_commit, is_good=True)
            )
            try:
                candidate_side.append(_measure(request, candidate_tree, commit, is_good=False))
            except _UnmeasurableError as exc:
                return _finish(
                    request, StepDecision("skip", str(exc)), commit=commit, rounds=number, echo=echo
                )
            echo(f"  round {number}: GOOD and {commit[:12]} measured")
        decision = _decide(request, good_side, candidate_side)
        if decision.answer != "more":
            return _finish(request, decision, commit=commit, rounds=len(candidate_side), echo=echo)
        echo(f"  {decision.reason}: one more round a side")
        target += 1


def _decide(
    request: StepRequest, good: list[ResultsDocument], candidate: list[ResultsDocument]
) -> StepDecision:
    from perfgate.sides import Side, compare_sides

    comparison = compare_sides(
        Side(documents=good, label="GOOD"),
        Side(documents=candidate, label="candidate"),
        settings=step_settings(
            threshold=request.threshold,
            alpha=request.alpha,
            key_thresholds=request.key_thresholds,
        ),
        history=[],
    )
    good_errors = {b.key for d in good for b in d.benchmarks if b.error}
    return decide_step(
        comparison.results,
        keys=request.keys,
        metric=request.metric,
        good_errors=good_errors,
        rounds=len(candidate),
        max_rounds=request.rounds + request.extra_rounds,
    )


def _finish(
    request: StepRequest,
    decision: StepDecision,
    *,
    commit: str,
    rounds: int,
    echo: Callable[[str], None],
) -> StepRecord:
    lines = [ResultLine.of(r) for r in decision.results]
    for line in lines:
        echo(f"  {line.describe()}")
    record = StepRecord(
        commit=commit,
        answer=decision.answer,
        exit_code=decision.exit_code,
        reason=decision.reason,
        rounds=rounds,
        results=lines,
        slower=list(decision.slower),
    )
    echo(f"  => {commit[:12]} is {decision.answer} (exit {decision.exit_code}): {decision.reason}")
    append_record(Path(request.log), record)
    return record


def _measure(request: StepRequest, tree: Path, commit: str, *, is_good: bool) -> ResultsDocument:
    """One round of one side in a fresh worker process that runs in (and imports from) `tree`."""
    from perfgate.config import environment_set, python_path_with
    from perfgate.harness.runner import RunOptions, run_benchmarks

    # The tree first on the path (and its src/ for src-layout projects), ahead of any installed
    # copy of the project, so the worker imports this commit's code.
    folders = [tree] + ([tree / "src"] if (tree / "src").is_dir() else [])
    try:
        with environment_set(PYTHONPATH=python_path_with(*folders)):
            return run_benchmarks(
                RunOptions(
                    paths=tuple(request.paths),
                    filter=request.filter,
                    device=request.device,
                    max_time=request.max_time,
                    threads=request.threads,
                    profile=False,
                    commit=commit,
                    branch="bisect",
                    project=PROJECT,
                    isolate=True,
                ),
                cwd=tree,
            )
    except PerfgateError as exc:
        if is_good:
            raise PerfgateError(f"GOOD {commit[:12]} cannot be measured: {exc}") from exc
        raise _UnmeasurableError(f"no benchmarks to measure at this commit: {exc}") from exc


def _head(tree: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def append_record(log: Path, record: StepRecord) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(record.to_json() + "\n")


def read_records(log: Path) -> list[StepRecord]:
    """The steps of a session, in the order they ran."""
    if not log.exists():
        return []
    return [StepRecord.from_json(line) for line in log.read_text().splitlines() if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m perfgate.bisect.step REQUEST.json`: one step, git's exit code."""
    args = list(sys.argv[1:] if argv is None else argv)

    def echo(line: str) -> None:
        print(line, flush=True)

    if len(args) != 1:
        echo("usage: python -m perfgate.bisect.step REQUEST.json (run by perfgate bisect)")
        return EXIT_ABORT
    request: StepRequest | None = None
    try:
        request = StepRequest.load(Path(args[0]))
        record = run_step(request, candidate_tree=Path.cwd(), echo=echo)
    # Every failure, an interrupt included, must abort the bisect, never mark the commit.
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, PerfgateError) else str(exc)
        if isinstance(exc, KeyboardInterrupt):
            reason = "interrupted"
        echo(f"  => the step failed, aborting the bisect: {reason}")
        if request is not None:
            try:
                head = _head(Path.cwd())
            except (OSError, subprocess.CalledProcessError):
                head = "unknown"
            append_record(
                Path(request.log),
                StepRecord(
                    commit=head, answer="abort", exit_code=EXIT_ABORT, reason=reason, rounds=0
                ),
            )
        return EXIT_ABORT
    return record.exit_code if record.exit_code in (0, 1, EXIT_SKIP) else EXIT_ABORT


if __name__ == "__main__":
    sys.exit(main())
