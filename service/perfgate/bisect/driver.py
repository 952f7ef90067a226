"""A whole `perfgate bisect` session: check the range, measure BAD, bisect in worktrees, report.

The first step measures BAD against GOOD, before git is involved. It proves there is a
regression to find (git never tests BAD itself, and a range without one would otherwise end in
a confident wrong answer), names the benchmarks that regressed (what "bad" means without
--benchmark), and sizes the threshold of every later step: halfway, in log, between GOOD's
speed and BAD's, so that a step only has to tell which of the two a commit runs at. Then git
chooses the commits and concludes; perfgate answers each step (`perfgate.bisect.step`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.bisect.decide import midpoint_threshold
from perfgate.bisect.gitops import (
    Interrupts,
    commit_count,
    resolve_range,
    run_bisect,
    stream,
    subject,
    temporary_worktrees,
)
from perfgate.bisect.step import StepRecord, StepRequest, read_records
from perfgate.errors import UsageError

# The comparator's default threshold: the first step's, unless --threshold gives one.
DEFAULT_THRESHOLD = 0.03


@dataclass(frozen=True)
class BisectSettings:
    """What each step measures: the options of `perfgate bisect` after parsing.

    `threshold` None means: the first step at the comparator's 3%, every later one halfway to
    the change BAD showed. `keys` None means: the benchmarks BAD regressed on.
    """

    paths: tuple[str, ...] = ("benchmarks",)
    filter: str | None = None
    keys: tuple[str, ...] | None = None
    metric: str = "time"
    rounds: int = 3
    extra_rounds: int = 4
    max_time: float | None = None
    device: str = "auto"
    threads: int | None = None
    threshold: float | None = None
    alpha: float = 0.05


@dataclass(frozen=True)
class BisectReport:
    """How the session ended: the first bad commit, or why none could be named."""

    good: str
    bad: str
    steps: tuple[StepRecord, ...]
    first_bad: str | None
    first_bad_subject: str | None
    keys: tuple[str, ...] = ()
    thresholds: tuple[tuple[str, float], ...] = ()
    # When skips leave several commits that could be the first bad one (git's list).
    candidates: tuple[str, ...] = ()
    # Why no commit was named, when none was.
    problem: str | None = None

    def step_of(self, commit: str) -> StepRecord | None:
        """The last step that measured `commit`."""
        found = [s for s in self.steps if s.commit == commit]
        return found[-1] if found else None


def bisect(
    *,
    good: str,
    bad: str,
    settings: BisectSettings,
    cwd: Path,
    echo: Callable[[str], None],
    interrupts: Interrupts | None = None,
) -> BisectReport:
    """Bisect GOOD..BAD of the repository at `cwd`; UsageError for bad arguments or an abort.

    With `interrupts` (the command's signal handler), an interrupt ends the running step and
    raises KeyboardInterrupt; the worktrees are removed on the way out.
    """
    interrupts = interrupts or Interrupts()
    span = resolve_range(cwd, good, bad)
    paths = tuple(_relative(p, span.root) for p in settings.paths)
    count = commit_count(span.root, span.good, span.bad)
    echo(f"perfgate bisect: {count} commits after GOOD {span.good[:12]} up to BAD {span.bad[:12]}")
    if span.dirty:
        echo("note: the working tree has uncommitted changes; bisect measures commits only")
    with temporary_worktrees(span.root, span.good, span.bad) as trees:
        log = trees.folder / "steps.jsonl"
        first = StepRequest(
            good_tree=str(trees.good),
            good_commit=span.good,
            paths=list(paths),
            log=str(log),
            filter=settings.filter if settings.filter is not None else filter_for(settings.keys),
            keys=list(settings.keys) if settings.keys is not None else None,
            metric=settings.metric,
            rounds=settings.rounds,
            extra_rounds=settings.extra_rounds,
            max_time=settings.max_time,
            device=settings.device,
            threads=settings.threads,
            threshold=settings.threshold if settings.threshold is not None else DEFAULT_THRESHOLD,
            alpha=settings.alpha,
        )
        echo(f"perfgate bisect: first, BAD {span.bad[:12]} against GOOD")
        measured = _run_step(trees.bisect, first, trees.folder / "first.json", echo, interrupts)
        if measured.answer == "abort":
            raise UsageError(f"bisect aborted at BAD {span.bad[:12]}: {measured.reason}")
        if measured.answer != "bad":
            return BisectReport(
                good=span.good,
                bad=span.bad,
                steps=(measured,),
                first_bad=None,
                first_bad_subject=None,
                problem=f"BAD {span.bad[:12]} is {measured.answer} against GOOD "
                f"({measured.reason}): no regression to bisect in this range",
            )
        keys, thresholds = follow(measured, keys=settings.keys, threshold=settings.threshold)
        for key in keys:
            limit = thresholds.get(key, first.threshold)
            echo(f"perfgate bisect: bisecting {key}: a commit is bad beyond {limit:+.1%}")
        request = StepRequest(
            **{
                **first.__dict__,
                "keys": list(keys),
                "filter": settings.filter if settings.filter is not None else filter_for(keys),
                "key_thresholds": thresholds,
            }
        )
        request_path = trees.folder / "request.json"
        request.dump(request_path)
        outcome = run_bisect(
            trees.bisect,
            good=span.good,
            bad=span.bad,
            step=_step(request_path),
            echo=echo,
            interrupts=interrupts,
        )
        steps = read_records(log)
        aborted = [s for s in steps if s.answer == "abort"]
        if aborted:
            raise UsageError(f"bisect aborted at {aborted[-1].commit[:12]}: {aborted[-1].reason}")
        if outcome.first_bad is None and not outcome.candidates:
            raise UsageError(
                f"git bisect run stopped without an answer (exit {outcome.exit_code}): "
                f"{_last_line(outcome.output)}"
            )
    found = outcome.first_bad
    return BisectReport(
        good=span.good,
        bad=span.bad,
        steps=tuple(steps),
        first_bad=found,
        first_bad_subject=subject(span.root, found) if found else None,
        keys=keys,
        thresholds=tuple(sorted(thresholds.items())),
        candidates=outcome.candidates if found is None else (found,),
        problem=None
        if found
        else f"skipped commits leave {len(outcome.candidates)} candidates for the first bad commit",
    )


def follow(
    first: StepRecord, *, keys: Sequence[str] | None, threshold: float | None
) -> tuple[tuple[str, ...], dict[str, float]]:
    """From the first step (BAD against GOOD, answered bad): the keys to follow and their
    thresholds.

    The keys are the ones asked for, else every benchmark that made BAD bad (slower than GOOD
    beyond the threshold); each such key's threshold is the midpoint to its change at BAD,
    unless `threshold` fixes one for all.
    """
    regressed = [r for r in first.results if r.key in first.slower]
    followed = tuple(keys) if keys else tuple(sorted(first.slower))
    if threshold is not None:
        return followed, {}
    return followed, {
        r.key: midpoint_threshold(r.ratio)
        for r in regressed
        if r.key in followed and r.ratio is not None and r.ratio > 1
    }


def filter_for(keys: Sequence[str] | None) -> str | None:
    """A -k expression that selects just `keys`, so a step measures only what it judges.

    Keys with spaces or parentheses cannot be spelled as -k terms: then every benchmark runs
    and the step still judges only `keys`.
    """
    if not keys or any(ch in key for key in keys for ch in " ()"):
        return None
    return " or ".join(keys)


def _relative(path: str, root: Path) -> str:
    """PATHS name the same place in every commit's tree: relative to the repository root."""
    candidate = Path(path)
    if not candidate.is_absolute():
        return path
    try:
        return str(candidate.resolve().relative_to(root.resolve()))
    except ValueError:
        raise UsageError(
            f"{path}: outside the repository {root}; bisect runs each commit's own benchmarks"
        ) from None


def _step(request_path: Path) -> list[str]:
    return [sys.executable, "-m", "perfgate.bisect.step", str(request_path)]


def _run_step(
    tree: Path,
    request: StepRequest,
    request_path: Path,
    echo: Callable[[str], None],
    interrupts: Interrupts,
) -> StepRecord:
    """Run one step outside git bisect (the first, on BAD) and return what it logged."""
    request.dump(request_path)
    before = len(read_records(Path(request.log)))
    code, _ = stream(_step(request_path), cwd=tree, echo=echo, interrupts=interrupts)
    records = read_records(Path(request.log))[before:]
    if not records:
        raise UsageError(f"bisect aborted: the first step exited {code} without a record")
    return records[-1]


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
