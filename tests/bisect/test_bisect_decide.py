"""The bisect step's rule (perfgate.bisect.decide) on comparisons of simulated, seeded rounds.

Every comparison here is the real comparator's, on synthetic documents (bench/synthetic.py:
lognormal samples, fixed seeds), so the tests pin the mapping from verdicts to git's answers
without timing anything.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from perfgate.bisect.decide import (
    EXIT_ABORT,
    EXIT_BAD,
    EXIT_GOOD,
    EXIT_SKIP,
    StepDecision,
    decide_step,
    midpoint_threshold,
    step_settings,
)
from perfgate.results import ResultsDocument, parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import MetricResult
from perfgate.stats.two_sample import CompareSettings
from synthetic import synthetic_document

KEYS = [f"kernel[n={64 * (1 + i)},variant=0]" for i in range(4)]


def _side(seed: int, *, rounds: int = 3, samples: int = 40, **edit: Any) -> list[ResultsDocument]:
    """`rounds` runs of one commit (4 benchmarks); `edit` changes each run's raw document."""
    documents = []
    for index in range(rounds):
        data = synthetic_document(
            benchmarks=4,
            samples=samples,
            seed=seed * 10 + index,
            slowdown=edit.get("slowdown"),
        )
        for key, error in edit.get("errors", {}).items():
            entry = next(b for b in data["benchmarks"] if b["key"] == key)
            entry.update(metrics={}, error=error, profile=None)
        for key, factor in edit.get("bimodal", {}).items():
            # Every other sample slower by `factor`: a side too spread to pin its median down.
            timed = next(b for b in data["benchmarks"] if b["key"] == key)["metrics"]["time"]
            timed["samples"] = [v * factor if i % 2 else v for i, v in enumerate(timed["samples"])]
        data["benchmarks"] = [b for b in data["benchmarks"] if b["key"] not in edit.get("drop", ())]
        documents.append(parse_document(data))
    return documents


def _decide(
    good: list[ResultsDocument],
    candidate: list[ResultsDocument],
    *,
    keys: list[str] | None,
    rounds: int = 3,
    max_rounds: int = 5,
    settings: CompareSettings | None = None,
) -> StepDecision:
    comparison = compare_documents(good, candidate, settings=settings or CompareSettings())
    return decide_step(
        comparison.results,
        keys=keys,
        metric="time",
        good_errors={b.key for d in good for b in d.benchmarks if b.error},
        rounds=rounds,
        max_rounds=max_rounds,
    )


def test_a_planted_slowdown_is_bad_for_its_key_and_for_any_benchmark() -> None:
    good, slow = _side(1), _side(2, slowdown={KEYS[1]: 1.5})
    for keys in ([KEYS[1]], None):
        decision = _decide(good, slow, keys=keys)
        assert decision.answer == "bad", decision
        assert decision.exit_code == EXIT_BAD
        assert KEYS[1] in decision.reason
        assert decision.slower == (KEYS[1],)
    # The step judges only the benchmarks it bisects: another key's regression is not this one.
    assert _decide(good, slow, keys=[KEYS[0]], settings=WIDE).answer == "good"


WIDE = CompareSettings(threshold=0.10)


def test_same_code_is_good() -> None:
    # Three rounds of 2% noise pin the ratio to about ±5%: within a 10% threshold.
    decision = _decide(_side(1), _side(2), keys=None, settings=WIDE)
    assert decision.answer == "good", decision
    assert decision.exit_code == EXIT_GOOD
    assert {r.verdict for r in decision.results} <= {"unchanged", "improvement"}
    assert {r.key for r in decision.results} == set(KEYS)


def test_a_faster_candidate_is_good() -> None:
    decision = _decide(_side(1), _side(2, slowdown={KEYS[2]: 0.5}), keys=[KEYS[2]], settings=WIDE)
    assert [r.verdict for r in decision.results] == ["improvement"]
    assert decision.answer == "good"


def test_inconclusive_asks_for_more_rounds_then_skips() -> None:
    # Three samples a side: the rank test can never reach alpha, whatever the ratio.
    good = _side(1, rounds=1, samples=3)
    # 3% slower, at a 3% threshold: the CI straddles it.
    candidate = _side(2, rounds=1, samples=3, slowdown={KEYS[0]: 1.03})
    more = _decide(good, candidate, keys=[KEYS[0]], rounds=3, max_rounds=5)
    assert more.answer == "more" and "inconclusive after 3 rounds" in more.reason
    with pytest.raises(ValueError, match="no exit status"):
        _ = more.exit_code
    skip = _decide(good, candidate, keys=[KEYS[0]], rounds=5, max_rounds=5)
    assert skip.answer == "skip" and skip.exit_code == EXIT_SKIP
    assert "still inconclusive after 5 rounds" in skip.reason


def test_an_inconclusive_result_wholly_below_the_threshold_is_good() -> None:
    # Too few samples for a verdict, but the candidate is twice as fast: whatever the rank test
    # says, it is not slower by the threshold, so it cannot be the slowdown sought.
    good = _side(1, rounds=1, samples=3)
    candidate = _side(2, rounds=1, samples=3, slowdown={KEYS[0]: 0.5})
    decision = _decide(good, candidate, keys=[KEYS[0]])
    [result] = decision.results
    assert result.verdict == "inconclusive" and result.ci is not None
    assert result.ci[1] < 1 + result.threshold
    assert decision.answer == "good"
    assert "the whole CI below the threshold" in decision.reason


def test_an_inconclusive_result_wholly_above_the_threshold_is_bad() -> None:
    # GOOD's samples are bimodal (a busy machine): the comparator calls the side too noisy for
    # any verdict, yet a 100x slowdown leaves the whole CI far above a 10x threshold.
    good = _side(1, bimodal={KEYS[0]: 4.0})
    slow = _side(2, slowdown={KEYS[0]: 100.0})
    wide = step_settings(threshold=0.5, alpha=0.05)
    decision = _decide(good, slow, keys=[KEYS[0]], settings=wide)
    [result] = decision.results
    assert result.verdict == "inconclusive" and "noisy" in result.reason
    assert result.ci is not None and result.ci[0] > 1 + result.threshold
    assert (decision.answer, decision.slower) == ("bad", (KEYS[0],))
    assert "the whole CI above the threshold" in decision.reason
    # Same code against the same noisy GOOD: no verdict either, and the whole CI below +50%.
    same = _decide(good, _side(2), keys=[KEYS[0]], settings=wide)
    assert same.results[0].verdict == "inconclusive"
    assert (same.answer, same.slower) == ("good", ())
    # Halfway between, at the threshold itself: the CI straddles it, and the step asks for more.
    between = _decide(good, _side(2, slowdown={KEYS[0]: 1.5}), keys=[KEYS[0]], settings=wide)
    assert between.answer == "more"


def test_a_candidate_that_fails_or_lacks_the_benchmark_is_skipped() -> None:
    failing = _side(2, errors={KEYS[0]: "ImportError: cannot import name 'fast'"})
    decision = _decide(_side(1), failing, keys=[KEYS[0]])
    assert (decision.answer, decision.exit_code) == ("skip", EXIT_SKIP)
    assert "could not be measured" in decision.reason
    lacking = _side(2, drop=[KEYS[0]])
    assert _decide(_side(1), lacking, keys=[KEYS[0]]).answer == "skip"


def test_a_regression_is_bad_even_when_another_benchmark_cannot_be_measured() -> None:
    candidate = _side(2, slowdown={KEYS[1]: 1.5}, errors={KEYS[3]: "RuntimeError: boom"})
    assert _decide(_side(1), candidate, keys=None).answer == "bad"


def test_what_no_commit_could_answer_aborts() -> None:
    good = _side(1)
    unknown = _decide(good, _side(2), keys=["no_such_benchmark"])
    assert (unknown.answer, unknown.exit_code) == ("abort", EXIT_ABORT)
    assert "no_such_benchmark: no time result at GOOD" in unknown.reason
    # Only at the candidate ("new"): GOOD has nothing to compare it with.
    only_new = _decide(_side(1, drop=[KEYS[0]]), _side(2), keys=[KEYS[0]])
    assert only_new.answer == "abort"
    broken_good = _side(1, errors={KEYS[0]: "RuntimeError: boom"})
    decision = _decide(broken_good, _side(2), keys=[KEYS[0]])
    assert decision.answer == "abort" and "failed at GOOD" in decision.reason
    # Without --benchmark too: GOOD's failure would fail every step.
    assert _decide(broken_good, _side(2), keys=None).answer == "abort"


def test_no_result_for_the_metric_aborts() -> None:
    comparison = compare_documents(_side(1), _side(2))
    decision = decide_step(
        comparison.results,
        keys=None,
        metric="no_such_metric",
        good_errors=set(),
        rounds=3,
        max_rounds=3,
    )
    assert decision.answer == "abort"


def test_decisions_are_deterministic() -> None:
    first = _decide(_side(1), _side(2, slowdown={KEYS[1]: 1.1}), keys=None)
    again = _decide(_side(1), _side(2, slowdown={KEYS[1]: 1.1}), keys=None)
    assert first == again


def test_the_midpoint_threshold_is_halfway_in_log() -> None:
    assert midpoint_threshold(100.0) == pytest.approx(9.0)
    assert midpoint_threshold(1.21) == pytest.approx(0.10)
    with pytest.raises(ValueError):
        midpoint_threshold(0.9)


def test_per_key_thresholds_reach_the_comparator() -> None:
    settings = step_settings(threshold=0.03, alpha=0.05, key_thresholds={KEYS[1]: 0.5})
    assert settings.threshold_for(KEYS[1]) == 0.5
    assert settings.threshold_for(KEYS[0]) == 0.03
    # A 30% slowdown is a regression at 3%, and well inside the 50% this key is judged at.
    decision = _decide(
        _side(1), _side(2, slowdown={KEYS[1]: 1.3}), keys=[KEYS[1]], settings=settings
    )
    assert [r.threshold for r in decision.results] == [0.5]
    assert decision.answer == "good"
    assert _decide(_side(1), _side(2, slowdown={KEYS[1]: 1.3}), keys=[KEYS[1]]).answer == "bad"


def test_step_settings_widen_the_noisy_limit_only_for_wide_thresholds() -> None:
    default = CompareSettings()
    narrow = step_settings(threshold=0.03, alpha=0.05)
    assert narrow == CompareSettings(threshold=0.03, alpha=0.05)
    # The smallest threshold in use sets the limit.
    mixed = step_settings(threshold=0.03, alpha=0.05, key_thresholds={KEYS[0]: 9.0})
    assert mixed.noisy_halfwidth == default.noisy_halfwidth
    assert narrow.noisy_halfwidth == default.noisy_halfwidth
    wide = step_settings(threshold=9.0, alpha=0.01)
    assert wide.noisy_halfwidth == pytest.approx(0.5 * math.log(10.0))
    assert (wide.threshold, wide.alpha) == (9.0, 0.01)


def test_a_wide_threshold_still_tells_a_big_slowdown_from_noisy_same_code() -> None:
    # Rounds 30% apart in speed (a busy machine): at 3% nothing can be said; with the threshold
    # at 10x, same code is good and a 100x slowdown bad.
    def noisy(seed: int, factor: float) -> list[ResultsDocument]:
        speeds = [1.0, 1.3, 0.8]
        return [
            parse_document(
                synthetic_document(
                    benchmarks=1,
                    samples=40,
                    seed=seed * 10 + i,
                    slowdown={"kernel[n=64,variant=0]": factor * speed},
                )
            )
            for i, speed in enumerate(speeds)
        ]

    key = ["kernel[n=64,variant=0]"]
    default = _decide(noisy(1, 1.0), noisy(2, 1.0), keys=key)
    assert default.answer in ("more", "good")
    wide = step_settings(threshold=9.0, alpha=0.05)
    assert _decide(noisy(1, 1.0), noisy(2, 1.0), keys=key, settings=wide).answer == "good"
    assert _decide(noisy(1, 1.0), noisy(2, 100.0), keys=key, settings=wide).answer == "bad"


def test_results_are_selected_by_key_and_metric() -> None:
    comparison = compare_documents(_side(1), _side(2))
    decision = _decide(_side(1), _side(2), keys=[KEYS[0], KEYS[2]])
    assert sorted(r.key for r in decision.results) == sorted([KEYS[0], KEYS[2]])
    assert all(isinstance(r, MetricResult) and r.metric == "time" for r in decision.results)
    assert len(comparison.results) > len(decision.results)
