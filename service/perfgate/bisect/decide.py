"""One bisect step's answer to git, from the comparison of the candidate against GOOD (pure).

`git bisect run` reads the step's exit status: 0 good, 1 bad, 125 skip, and 128 or more aborts
the whole bisect (docs/bisect.md, "What each step tells git"). An inconclusive comparison first
asks for more rounds, up to a bound; only then is the commit skipped. A step that cannot judge
any commit (the selected benchmark is not at GOOD, GOOD's own run failed) aborts rather than
mark commits, since every later step would fail the same way.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from perfgate.stats.model import MetricResult
from perfgate.stats.two_sample import CompareSettings

Answer = Literal["good", "bad", "skip", "more", "abort"]

EXIT_GOOD = 0
EXIT_BAD = 1
EXIT_SKIP = 125
# git bisect run stops (and marks nothing) on any status of 128 or more.
EXIT_ABORT = 128

EXIT_CODES: dict[Answer, int] = {
    "good": EXIT_GOOD,
    "bad": EXIT_BAD,
    "skip": EXIT_SKIP,
    "abort": EXIT_ABORT,
}


@dataclass(frozen=True)
class StepDecision:
    """What one step answers, why, and the results it judged (the selected benchmarks)."""

    answer: Answer
    reason: str
    results: tuple[MetricResult, ...] = ()
    # The keys that made the step bad: slower than GOOD beyond their threshold.
    slower: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """The status for `git bisect run`; "more" is not an answer git ever sees."""
        if self.answer == "more":
            raise ValueError("a step that wants more rounds has no exit status yet")
        return EXIT_CODES[self.answer]


def step_settings(
    *, threshold: float, alpha: float, key_thresholds: Mapping[str, float] | None = None
) -> CompareSettings:
    """The comparator's settings for a step: its defaults, with the thresholds and `alpha`.

    One more: a side counts as too noisy for a verdict when its median is known to no better
    than the larger of the comparator's limit (±0.15 in log) and half the smallest threshold in
    use (in log). At the default 3% threshold that is the comparator's own rule; with a wide
    threshold (a slowdown many times the noise, on a busy machine) a side pinned to ±30% can
    still tell a 10x change from none, and the limit widens with it.
    """
    per_key = dict(key_thresholds or {})
    smallest = min([threshold, *per_key.values()])
    return CompareSettings(
        alpha=alpha,
        threshold=threshold,
        key_thresholds=tuple(sorted(per_key.items())),
        noisy_halfwidth=max(CompareSettings().noisy_halfwidth, 0.5 * math.log1p(smallest)),
    )


def midpoint_threshold(ratio: float) -> float:
    """The threshold halfway (in log) between no change and `ratio`: sqrt(ratio) - 1.

    A step asks whether the candidate has GOOD's speed or BAD's; the geometric midpoint of the
    two leaves the same margin to a wrong answer either way.
    """
    if not ratio > 1:
        raise ValueError(f"a regression has a ratio above 1, got {ratio}")
    return math.sqrt(ratio) - 1


def select_results(
    results: Sequence[MetricResult], *, keys: Collection[str] | None, metric: str
) -> list[MetricResult]:
    """The results a step judges: `metric` of the benchmarks in `keys` (all when None)."""
    return [r for r in results if r.metric == metric and (keys is None or r.key in keys)]


def decide_step(
    results: Sequence[MetricResult],
    *,
    keys: Collection[str] | None,
    metric: str,
    good_errors: Collection[str],
    rounds: int,
    max_rounds: int,
) -> StepDecision:
    """Turn a step's comparison into good, bad, skip, more (rounds) or abort.

    `results` are the comparison's results (candidate as head, GOOD as base); `keys` the
    benchmarks bisected (None: every benchmark, and any regression makes the commit bad);
    `good_errors` the keys whose run at GOOD failed; `rounds` the rounds each side has had,
    `max_rounds` the most it may get.

    In order: a selected benchmark absent from GOOD, or failing there, aborts; a regression of
    any selected benchmark is bad (even while others are unclear: the slowdown is there), and so
    is an inconclusive one whose whole CI lies above +threshold; a benchmark the candidate lacks
    or fails on is a skip (that commit cannot be measured); an inconclusive one whose CI
    straddles +threshold asks for more rounds, then skips; otherwise (unchanged, improved, or
    inconclusive with the whole CI below +threshold) the commit is good.

    The CI rules answer the step's own question, which is narrower than the verdict's: not
    "did it change beyond ±threshold, with the false-discovery rate controlled", but "is the
    candidate slower than GOOD by the threshold, yes or no". A verdict can stay inconclusive
    for reasons that do not touch that answer (a side too spread to pin its median down, too
    few samples for the rank test) while the 95% CI lies wholly on one side of it.
    """
    chosen = select_results(results, keys=keys, metric=metric)
    if keys is not None:
        at_good = {r.key for r in chosen if r.verdict != "new"}
        absent = sorted(set(keys) - at_good)
        if absent:
            return StepDecision(
                "abort",
                f"{', '.join(absent)}: no {metric} result at GOOD; check --benchmark against "
                "the keys `perfgate run` prints at GOOD",
                tuple(chosen),
            )
    if not chosen:
        return StepDecision("abort", f"no benchmark has a {metric} result at GOOD")
    broken_at_good = sorted({r.key for r in chosen if r.key in good_errors})
    if broken_at_good:
        return StepDecision(
            "abort",
            f"{', '.join(broken_at_good)} failed at GOOD, so no commit can be compared with it",
            tuple(chosen),
        )
    judged = tuple(r for r in chosen if r.verdict != "new")
    regressed = [r for r in judged if r.verdict == "regression"]
    if regressed:
        slower = tuple(sorted({r.key for r in [*regressed, *filter(_above, judged)]}))
        return StepDecision("bad", f"{_keys(regressed)} regressed", judged, slower=slower)
    above = [r for r in judged if _above(r)]
    if above:
        return StepDecision(
            "bad",
            f"{_keys(above)} slower: the whole CI above the threshold",
            judged,
            slower=tuple(sorted({r.key for r in above})),
        )
    unmeasurable = [r for r in judged if r.verdict in ("error", "missing")]
    if unmeasurable:
        return StepDecision(
            "skip", f"{_keys(unmeasurable)} could not be measured at this commit", judged
        )
    unclear = [r for r in judged if r.verdict not in ("unchanged", "improvement") and not _below(r)]
    if unclear:
        if rounds < max_rounds:
            return StepDecision(
                "more", f"{_keys(unclear)} inconclusive after {rounds} rounds", judged
            )
        return StepDecision(
            "skip", f"{_keys(unclear)} still inconclusive after {rounds} rounds a side", judged
        )
    below = [r for r in judged if r.verdict == "inconclusive"]
    if below:
        return StepDecision(
            "good", f"no regression ({_keys(below)}: the whole CI below the threshold)", judged
        )
    return StepDecision("good", "no regression", judged)


def _below(result: MetricResult) -> bool:
    """An inconclusive result whose whole CI lies below +threshold: not the slowdown sought."""
    return (
        result.verdict == "inconclusive"
        and result.ci is not None
        and result.ci[1] <= 1 + result.threshold
    )


def _above(result: MetricResult) -> bool:
    """An inconclusive result whose whole CI lies above +threshold: the slowdown sought."""
    return (
        result.verdict == "inconclusive"
        and result.ci is not None
        and result.ci[0] > 1 + result.threshold
    )


def _keys(results: Sequence[MetricResult]) -> str:
    names = sorted({r.key for r in results})
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")
