"""The noise model: robust scales, moderation, process modes, calibration, and the comparator's
behaviour on simulated suites with known answers (fixed seeds, no live timings)."""

from __future__ import annotations

import dataclasses
import math
import re
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from perfgate.errors import UsageError
from perfgate.results import ResultsDocument, parse_document
from perfgate.stats import noise, noise_model, two_sample
from perfgate.stats.calibration import Calibration, calibrate
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import POSSIBLE_REGRESSION, Comparison
from perfgate.stats.modes import speed_levels

START = datetime(2026, 6, 1, tzinfo=timezone.utc)
M = 13


def _document(
    medians: np.ndarray,
    *,
    index: int,
    commit: str,
    rng: np.random.Generator,
    samples: int = 30,
    inner: dict[int, float] | None = None,
) -> ResultsDocument:
    """One round (process) of a suite whose benchmark medians are `medians`; each benchmark's
    samples spread 0.5% (log) inside the round, or `inner[j]`."""
    benchmarks = []
    for j, median in enumerate(medians):
        values = median * np.exp(rng.normal(0.0, (inner or {}).get(j, 0.005), samples))
        benchmarks.append(
            {
                "name": f"b{j}",
                "params": {},
                "key": f"b{j}",
                "device": "cpu",
                "error": None,
                "tags": [],
                "metrics": {
                    "time": {"unit": "s", "direction": "lower", "samples": values.tolist()}
                },
            }
        )
    started = START + timedelta(minutes=index)
    return parse_document(
        {
            "schema": "perfgate/results@1",
            "run": {
                "id": str(uuid.UUID(int=int(rng.integers(1 << 62)), version=4)),
                "project": "acme/models",
                "commit": commit,
                "branch": "main",
                "pr": None,
                "base_commit": None,
                "started_at": started.isoformat(),
                "finished_at": (started + timedelta(seconds=30)).isoformat(),
                "ci": {},
            },
            "environment": {"fingerprint": "runner-a", "sampling": "interleaved"},
            "benchmarks": benchmarks,
        }
    )


class Suite:
    """A simulated suite: processes whose benchmarks move `sd` (log) each, seeded; `noisy`
    gives a benchmark its own (process sd, spread inside a round), `follows` its own share of
    the machine's speed (`machine`, log sd a process)."""

    def __init__(
        self,
        seed: int,
        *,
        sd: float = 0.03,
        machine: float = 0.0,
        m: int = M,
        noisy: dict[int, tuple[float, float]] | None = None,
        follows: dict[int, float] | None = None,
        tails: float | None = None,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        # Student-t process noise of this many df (scale `sd`) instead of normal.
        self.tails = tails
        self.levels = np.exp(self.rng.normal(-7.0, 1.0, m))
        self.sd, self.machine, self.m = sd, machine, m
        self.noisy = noisy or {}
        # How much of the machine's speed each benchmark follows (1 unless given).
        self.follows = np.ones(m)
        for j, loading in (follows or {}).items():
            self.follows[j] = loading
        self.index = 0

    def process(self, factors: dict[int, float] | None = None, *, commit: str) -> ResultsDocument:
        sds = np.full(self.m, self.sd)
        for j, (process_sd, _) in self.noisy.items():
            sds[j] = process_sd
        own = sds * (
            self.rng.standard_t(self.tails, self.m) if self.tails else self.rng.normal(size=self.m)
        )
        medians = self.levels * np.exp(
            own + self.follows * self.rng.normal(0.0, self.machine or 1e-12)
        )
        for j, factor in (factors or {}).items():
            medians[j] *= factor
        self.index += 1
        inner = {j: spread for j, (_, spread) in self.noisy.items()}
        return _document(medians, index=self.index, commit=commit, rng=self.rng, inner=inner)

    def sides(
        self, rounds: int, factors: dict[int, float] | None = None, *, alternate: bool = True
    ) -> tuple[list[ResultsDocument], list[ResultsDocument]]:
        base: list[ResultsDocument] = []
        head: list[ResultsDocument] = []
        if alternate:
            for _ in range(rounds):
                base.append(self.process(commit="a" * 40))
                head.append(self.process(factors, commit="c" * 40))
        else:
            base = [self.process(commit="a" * 40) for _ in range(rounds)]
            head = [self.process(factors, commit="c" * 40) for _ in range(rounds)]
        return base, head


def _time(comparison: Comparison) -> dict[str, Any]:
    return {r.key: r for r in comparison.results if r.metric == "time"}


# --- the pieces ----------------------------------------------------------------------------------


def test_qn_is_a_consistent_scale_that_survives_a_moved_half() -> None:
    rng = np.random.default_rng(0)
    assert noise.qn_scale(rng.normal(0, 0.03, 4000)) == pytest.approx(0.03, rel=0.05)
    # 7 of 13 benchmarks moved +25% together: Qn still measures the spread inside the groups.
    values = np.concatenate([rng.normal(0, 0.03, 6), rng.normal(0.22, 0.03, 7)])
    assert noise.qn_scale(values) < 0.07


@pytest.mark.parametrize("n", [3, 4, 5, 8, 13, 14, 41])
def test_qn_with_each_value_left_out_is_qn_of_the_others(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(20):
        values = rng.normal(0.0, 0.03, n)
        values[rng.integers(n)] = values[0]  # ties among the distances
        values[rng.integers(n)] += 0.3  # one far off
        brute = [noise.qn_scale(np.delete(values, i)) for i in range(n)]
        assert noise.qn_scales_without_each(values) == pytest.approx(brute, rel=1e-12, abs=0)
    left_out = noise.cross_sections_without_each(values)
    assert left_out[1] == noise.cross_section(np.delete(values, 1))
    assert noise.cross_sections_without_each([0.1, 0.2, 0.3]) == [None, None, None]


@pytest.mark.parametrize("n", [5, 13, 40])
def test_the_excess_over_equal_variances_is_the_cross_section_less_them(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(5):
        values = rng.normal(0.0, 0.03, n)
        values[0] += 0.2
        variances = np.full(n, 0.02**2)
        excess = noise.excess_variance(values, variances)
        assert excess == pytest.approx(max(noise.qn_variance(values).var - 0.02**2, 0.0), rel=1e-5)
        expected = [
            max(found.var - 0.02**2, 0.0) if found is not None else excess
            for found in noise.cross_sections_without_each(values)
        ]
        alone = noise.excess_variances_without_each(values, variances, excess)
        assert alone == pytest.approx(expected, rel=1e-5, abs=1e-12)


def test_unequal_noise_is_not_an_excess_but_a_shared_one_is_measured() -> None:
    # Seven benchmarks of 1%, six of 6%, variances known: the cross-section less the median
    # benchmark's variance reads their mixture as ±2.3% of shared excess on average; each
    # difference over its own sd reads almost none, and a real one near its size.
    rng = np.random.default_rng(7)
    variances = np.asarray([0.01**2] * 7 + [0.06**2] * 6)
    none, mixture, shared = [], [], []
    for _ in range(300):
        values = rng.normal(0.0, np.sqrt(variances))
        none.append(noise.excess_variance(values, variances))
        mixture.append(max(noise.qn_variance(values).var - float(np.median(variances)), 0.0))
        shared.append(
            noise.excess_variance(rng.normal(0.0, np.sqrt(variances + 0.02**2)), variances)
        )
    assert np.mean(none) < 0.25 * np.mean(mixture)
    assert 0.5 * 0.02**2 < np.mean(shared) < 1.5 * 0.02**2


def test_fallback_counts_only_while_evidence_is_thin() -> None:
    default = noise.DEFAULT_PROCESS
    assert noise.with_fallback(None, default) == default
    found = noise.Evidence(var=0.001**2, df=10)
    assert noise.with_fallback(found, default) == found  # no floor over the data
    thin = noise.with_fallback(noise.Evidence(var=0.001**2, df=1), default)
    assert thin.df == default.df and 0.001**2 < thin.var < default.var


def test_moderation_pools_a_shared_scale_and_keeps_real_differences() -> None:
    rng = np.random.default_rng(1)
    shared = {(f"b{j}", "time"): noise.Evidence.of(rng.normal(0, 0.03, 5)) for j in range(20)}
    moderated, prior, _ = noise.moderated(
        {k: v for k, v in shared.items() if v is not None}, noise.DEFAULT_PROCESS
    )
    assert prior.sigma == pytest.approx(0.03, rel=0.2)
    assert prior.df > 40  # every benchmark shares the scale: pool (almost) fully
    spreads = [e.sigma for e in moderated.values()]
    assert max(spreads) / min(spreads) < 1.3
    mixed = {
        (f"b{j}", "time"): noise.Evidence.of(rng.normal(0, 0.005 if j % 2 else 0.08, 5))
        for j in range(20)
    }
    moderated, prior, _ = noise.moderated(
        {k: v for k, v in mixed.items() if v is not None}, noise.DEFAULT_PROCESS
    )
    assert prior.df < 10  # scales that truly differ keep most of their own
    assert moderated[("b0", "time")].sigma > 3 * moderated[("b1", "time")].sigma


def test_a_few_far_noisier_benchmarks_keep_their_own_and_leave_the_rest_pooled() -> None:
    # Nine benchmarks share 2%, four have process modes or bursts (8-12%); four rounds each.
    sigmas = [0.014, 0.016, 0.018, 0.019, 0.02, 0.021, 0.022, 0.024, 0.027, 0.08, 0.09, 0.1, 0.12]
    own = {(f"b{j}", "time"): noise.Evidence(var=s**2, df=4) for j, s in enumerate(sigmas)}
    moderated, _, apart = noise.moderated(own, noise.DEFAULT_PROCESS, set_apart=True)
    assert apart == {(f"b{j}", "time") for j in range(9, 13)}
    for key in apart:
        assert moderated[key] == own[key]  # its own, not pulled towards the quiet ones
    quiet = [moderated[(f"b{j}", "time")] for j in range(9)]
    assert all(e.df >= 24 and e.sigma == pytest.approx(0.02, rel=0.3) for e in quiet)
    # With the prior fitted to all thirteen, the four alone read as scales that truly differ:
    # the quiet nine keep hardly more than their own four degrees of freedom.
    moderated, _, apart = noise.moderated(own, noise.DEFAULT_PROCESS)
    assert not apart and all(moderated[(f"b{j}", "time")].df < 7 for j in range(9))


def test_benchmarks_that_share_one_scale_are_seldom_set_apart() -> None:
    # Thirteen estimates of one scale, four degrees of freedom each: the Bonferroni level
    # (5% over the suite) bounds how often one is set apart: 26 of these 1,000 suites.
    rng = np.random.default_rng(4)
    split = 0
    for _ in range(1000):
        own = {
            (f"b{j}", "time"): noise.Evidence(var=float(rng.chisquare(4) / 4), df=4)
            for j in range(13)
        }
        split += noise.scale_apart(own) is not None
    assert split <= 50, split


def test_benchmarks_far_noisier_than_the_rest_do_not_cost_the_rest_their_power() -> None:
    # Three alternating rounds a side, three of thirteen benchmarks moving 12% a process: a
    # steady benchmark's +8% is found in 31 of these 40 seeds (21 with the prior fitted to all
    # thirteen, which left the steady ones about 5.5 degrees of freedom).
    noisy = dict.fromkeys((10, 11, 12), (0.12, 0.005))
    found, named = 0, 0
    for seed in range(40):
        base, head = Suite(seed, sd=0.02, noisy=noisy).sides(3, {0: 1.08})
        results = _time(compare_documents(base, head))
        found += results["b0"].verdict == "regression"
        named += any(
            "far noisier than the rest" in (results[f"b{j}"].noise or "") for j in (10, 11, 12)
        )
        assert "far noisier" not in (results["b0"].noise or "")
    assert found >= 28, found
    assert named >= 30, named
    # One side after the other, the rounds do not see how far each benchmark moves between the
    # jobs: the prior the noisy ones widen is kept and nothing is set apart.
    base, head = Suite(0, sd=0.02, noisy=noisy).sides(3, alternate=False)
    assert not any(
        "far noisier" in (r.noise or "") for r in _time(compare_documents(base, head)).values()
    )


def test_round_factors_are_exactly_a_slow_rounds_log_factor() -> None:
    rng = np.random.default_rng(2)
    matrix = rng.normal(0, 0.03, (M, 4))
    slowed = matrix.copy()
    slowed[:, 2] += math.log(1.1)
    before, after = noise.round_factors(matrix), noise.round_factors(slowed)
    assert before is not None and after is not None
    assert (after - before)[2] - (after - before)[0] == pytest.approx(math.log(1.1))
    assert noise.round_factors(matrix[:3]) is None  # too few benchmarks to tell the machine


def test_median_noise_is_at_most_what_the_benchmarks_noise_puts_in_their_median() -> None:
    # Shuffled in-sample residuals give 70-80% of the medians' true spread, normal or t3 tails,
    # never more: the machine's spread is never taken for less than it is. The normal-theory
    # pi/2 sigma^2 / M would take t3 noise's for over twice what it is.
    rng = np.random.default_rng(5)
    for tails in (None, 3):
        truth, found = [], []
        for _ in range(150):
            draws = rng.standard_t(tails, (M, 6)) if tails else rng.normal(size=(M, 6))
            deviations = draws - draws.mean(axis=1, keepdims=True)
            factors = np.median(deviations, axis=0)
            truth.append(float(np.var(factors, ddof=1)))
            found.append(noise.median_noise(deviations - factors))
        assert 0.6 * np.mean(truth) < np.mean(found) < np.mean(truth)
        if tails:
            assert math.pi / 2 * 3.0 / M > 2 * np.mean(truth)  # a t3's variance is 3
    assert noise.median_noise(np.zeros((M, 1))) == 0.0  # one round has no spread


def test_the_benchmarks_own_noise_in_the_factors_is_not_taken_for_the_machine() -> None:
    rng = np.random.default_rng(7)
    for machine in (0.0, 0.02):
        raw, left = [], []
        for _ in range(100):
            matrix = rng.normal(0, 0.03, (M, 6)) + rng.normal(0, machine, 6)
            factors = noise.round_factors(matrix)
            found = noise.round_machine(matrix)
            assert factors is not None and found is not None and found.df == 5
            raw.append(float(np.var(factors, ddof=1)))
            left.append(found.var)
        if machine:
            # The factors' spread holds the machine's and about pi/2 0.03^2 / 13 more.
            assert np.mean(raw) > 1.15 * machine**2
            assert np.mean(left) == pytest.approx(machine**2, rel=0.1)
        else:
            assert np.mean(left) < 0.5 * np.mean(raw)
    assert noise.round_machine(rng.normal(0, 0.03, (3, 6))) is None


def test_history_and_calibration_take_the_machines_spread_less_the_benchmarks_noise() -> None:
    still = [noise.history_noise(_history(Suite(s, sd=0.03), 24)).machine for s in range(6)]
    moving = [
        noise.history_noise(_history(Suite(s, sd=0.03, machine=0.02), 24)).machine for s in range(6)
    ]
    assert all(e is not None for e in (*still, *moving))
    assert np.mean([e.var for e in still if e]) < 0.5 * math.pi / 2 * 0.03**2 / M
    assert np.mean([e.var for e in moving if e]) == pytest.approx(0.02**2, rel=0.15)
    calibrated = []
    for seed in range(6):
        suite = Suite(seed, sd=0.03)
        record = calibrate([suite.process(commit="e" * 40) for _ in range(12)])
        calibrated.append(record.machine_sigma**2)
    assert np.mean(calibrated) < 0.5 * math.pi / 2 * 0.03**2 / M


def test_speed_levels_need_two_members_and_a_clear_gap() -> None:
    rng = np.random.default_rng(3)
    one = rng.normal(0, 0.02, 24)
    assert len(speed_levels(one)) == 1
    two = np.concatenate([rng.normal(0, 0.02, 18), rng.normal(math.log(1.3), 0.02, 6)])
    levels = speed_levels(two)
    assert len(levels) == 2 and levels[1] - levels[0] == pytest.approx(math.log(1.3), abs=0.03)
    outlier = np.concatenate([rng.normal(0, 0.02, 23), [math.log(2.0)]])
    assert len(speed_levels(outlier)) == 1  # a single far-off process is not a level


# --- calibration records -------------------------------------------------------------------------


def test_calibration_learns_each_benchmarks_spread_and_levels() -> None:
    suite = Suite(4, sd=0.02)
    rounds = []
    for i in range(12):
        # Benchmark 5 lands 1.4x slow in a third of its processes.
        rounds.append(suite.process({5: 1.4} if i % 3 == 0 else None, commit="e" * 40))
    record = calibrate(rounds)
    assert record.rounds == 12 and record.fingerprint == "runner-a"
    assert record.metrics[("b0", "time")].sigma == pytest.approx(0.02, rel=0.5)
    assert len(record.metrics[("b5", "time")].levels) == 2
    assert record.metrics[("b5", "time")].levels[1] == pytest.approx(math.log(1.4), abs=0.03)
    assert Calibration.from_json(record.to_json()) == record
    with pytest.raises(UsageError, match="at least 4 rounds"):
        calibrate(rounds[:3])
    other = suite.process(commit="f" * 40)
    with pytest.raises(UsageError, match="one commit"):
        calibrate([*rounds, other])


# --- the comparator on simulated suites -----------------------------------------------------------


def test_one_round_finds_a_50_percent_slowdown_of_one_steady_benchmark() -> None:
    found = 0
    for seed in range(20):
        base, head = Suite(seed, sd=0.03).sides(1, {3: 1.5})
        verdicts = {k: r.verdict for k, r in _time(compare_documents(base, head)).items()}
        found += verdicts["b3"] == "regression"
        assert all(v not in ("regression", "improvement") for k, v in verdicts.items() if k != "b3")
    assert found >= 19


def test_one_round_among_two_benchmarks_still_finds_50_percent() -> None:
    found = 0
    for seed in range(20):
        base, head = Suite(seed, sd=0.03, m=2).sides(1, {1: 1.5})
        found += _time(compare_documents(base, head))["b1"].verdict == "regression"
    assert found >= 19


ALARM_WORDS = ("regression", "improvement")


def test_a_benchmark_spreading_more_inside_its_run_gets_a_wider_one_round_allowance() -> None:
    # b5's processes move 10% where the others move 2%, and its calls spread 5x more inside a
    # run: with one round a side and nothing else to learn from, that spread is the only sign.
    noisy = {5: (0.10, 0.025)}
    alarms = found = 0
    texts: list[str] = []
    for seed in range(30):
        base, head = Suite(seed, sd=0.02, noisy=noisy).sides(1, {2: 1.25}, alternate=False)
        results = _time(compare_documents(base, head))
        alarms += results["b5"].verdict in ALARM_WORDS
        found += results["b2"].verdict == "regression"
        texts.append(results["b5"].noise or "")
    # Judged at the suite's pooled 2% instead, it is called changed in 8 of these 30 seeds.
    assert alarms <= 1
    assert found >= 27
    assert all("for its spread in a run" in text for text in texts)


def test_within_run_widening_needs_a_spread_beyond_its_sampling_error() -> None:
    typical = noise_model.WithinRun(spread=0.01, samples=100)
    keys = [f"b{j}" for j in range(5)]
    within = dict.fromkeys(keys[:3], typical)
    # 3x the typical spread on 400 samples: widened by 3 less twice its error (5.8% in log).
    within["b3"] = noise_model.WithinRun(spread=0.03, samples=400)
    # 1.3x on 30 samples is within what the spread estimate's own error explains.
    within["b4"] = noise_model.WithinRun(spread=0.013, samples=30)
    widening = noise_model.within_run_widening(keys, within)
    assert widening["b0"] == widening["b4"] == 1.0
    assert widening["b3"] == pytest.approx(3 * math.exp(-2 * 1.166 / 20))
    # Too few benchmarks with a spread to say what is typical: nothing is widened.
    assert set(noise_model.within_run_widening(keys, {"b3": within["b3"]}).values()) == {1.0}


def test_identical_code_keeps_false_alarms_within_target_on_simulated_suites() -> None:
    # docs/comparator.md's targets: at most 1% of results with rounds, 3% with one round. A
    # calibrated test does raise the odd alarm (here 1 of 312 results with rounds).
    alarms = {1: 0, 3: 0}
    results = {1: 0, 3: 0}
    for seed in range(12):
        for rounds, alternate in ((1, False), (3, False), (3, True)):
            base, head = Suite(100 + seed, sd=0.05, machine=0.02).sides(rounds, alternate=alternate)
            comparison = compare_documents(base, head)
            alarms[rounds] += sum(r.verdict in ALARM_WORDS for r in comparison.results)
            results[rounds] += len(comparison.results)
    assert alarms[1] <= 0.03 * results[1]
    assert alarms[3] <= 0.01 * results[3]


def test_most_of_the_suite_slower_fails_and_leaves_the_rest_alone() -> None:
    slowed = dict.fromkeys(range(8), 1.25)  # 8 of 13
    for seed in range(5):
        base, head = Suite(200 + seed, sd=0.03).sides(3, slowed)
        comparison = compare_documents(base, head)
        verdicts = {k: r.verdict for k, r in _time(comparison).items()}
        assert comparison.has_regression()
        assert all(verdicts[f"b{j}"] not in ("regression", "improvement") for j in range(8, M))
        common = comparison.common_factor
        assert common is not None and common.verdict == "regression"
        assert set(common.affected) == {k for k, v in verdicts.items() if v == "regression"}
        assert set(common.affected) <= {f"b{j}" for j in range(8)}


def test_a_shared_shift_of_sequential_sides_widens_rather_than_moves() -> None:
    # The machine ran the head job 4% slower: nothing subtracts it, nothing flags it.
    suite = Suite(300, sd=0.01)
    base = [suite.process(commit="a" * 40)]
    head = [suite.process(dict.fromkeys(range(M), 1.04), commit="c" * 40)]
    comparison = compare_documents(base, head)
    assert comparison.summary()["regression"] == comparison.summary()["improvement"] == 0
    result = _time(comparison)["b0"]
    assert result.ratio == pytest.approx(1.04, abs=0.03)  # the raw change, not relative to others
    assert result.noise is not None and "machine ±" in result.noise


def _sequential_found(seeds: range, sd: float) -> tuple[int, list[Comparison]]:
    """Three sequential rounds a side, b3 +10%: how often it is a regression (asserting that
    no other benchmark is ever called changed), and the comparisons."""
    found, comparisons = 0, []
    for seed in seeds:
        base, head = Suite(seed, sd=sd).sides(3, {3: 1.10}, alternate=False)
        comparison = compare_documents(base, head)
        results = _time(comparison)
        found += results["b3"].verdict == "regression"
        assert all(
            r.verdict not in ("regression", "improvement") for k, r in results.items() if k != "b3"
        )
        comparisons.append(comparison)
    return found, comparisons


def test_three_sequential_rounds_bound_the_machine_by_the_suites_shift() -> None:
    # No store, sides one after the other: the machine's share between the jobs is not the
    # assumed default but what the suite shows it did (here nothing), so +10% on a quiet
    # runner is found. With the default (2% a job, 3 df) it was found in 13 of 20.
    found, comparisons = _sequential_found(range(500, 520), sd=0.01)
    for comparison in comparisons:
        noise_text = _time(comparison)["b0"].noise
        assert noise_text is not None and "shared shift allows" in noise_text
    assert found == 20


def test_a_changed_benchmark_does_not_widen_its_own_drift_allowance() -> None:
    # Sides one after the other: a benchmark's own difference never widens its drift allowance.
    # With its own +10% in the cross-section the slowed benchmark widened its own CI, and was
    # found in 11 of these 30; now 17, and no other is called changed.
    found, _ = _sequential_found(range(2100, 2130), sd=0.03)
    assert found >= 15, found


def test_a_quiet_benchmark_among_noisy_ones_keeps_its_own_drift_allowance() -> None:
    # Seven benchmarks move 1% a process, six 6%; three sequential rounds a side, +10% on a
    # quiet one. The noisy ones' wider differences were read as drift every benchmark shares
    # (±2% on the quiet ones) and it was found in 8 of these 20; each over its own sd, 16.
    noisy = dict.fromkeys(range(7, M), (0.06, 0.005))
    found = 0
    for seed in range(2500, 2520):
        base, head = Suite(seed, sd=0.01, noisy=noisy).sides(3, {3: 1.10}, alternate=False)
        found += _time(compare_documents(base, head))["b3"].verdict == "regression"
    assert found >= 15, found


def test_most_of_the_suite_slower_keeps_each_slowed_benchmarks_allowance() -> None:
    # 8 of 13 benchmarks +25%, sides one after the other: left out of the cross-section, a
    # slowed benchmark's group has one member fewer and its spread reads wider; with only the
    # leave-one-out cross-section 129 of these 160 slowed results were regressions, with the
    # smaller of the two 143, as before either. The untouched are never called changed.
    found = 0
    for seed in range(20):
        suite = Suite(2300 + seed, sd=0.03)
        base, head = suite.sides(3, dict.fromkeys(range(8), 1.25), alternate=False)
        comparison = compare_documents(base, head)
        results = _time(comparison)
        found += sum(results[f"b{j}"].verdict == "regression" for j in range(8))
        assert comparison.has_regression()
        assert all(
            results[f"b{j}"].verdict not in ("regression", "improvement") for j in range(8, M)
        )
    assert found >= 138, found


def test_the_noise_text_names_the_drift_and_wander_allowances() -> None:
    base, head = Suite(2100, sd=0.03).sides(3, {3: 1.10}, alternate=False)
    noise_text = _time(compare_documents(base, head))["b3"].noise or ""
    assert "drift between the jobs ±" in noise_text
    # Alternating sides share the drift: none is allowed, none named.
    base, head = Suite(2100, sd=0.03).sides(3, {3: 1.10})
    assert "drift" not in (_time(compare_documents(base, head))["b3"].noise or "")
    suite = Suite(1200, sd=0.03)
    history = _history(suite, 24)
    base = [suite.process(commit="a" * 40)]
    head = [suite.process(commit="c" * 40)]
    pooled = _time(compare_documents(base, head, history=history))["b0"].noise or ""
    assert "wander from history's level ±" in pooled and "baseline: base and its 24" in pooled


def test_a_machine_that_moves_between_sequential_jobs_raises_no_alarm() -> None:
    # The machine moves 3-5% from job to job, the benchmarks 0.5-1%: the bound is the shift
    # itself, so an unchanged benchmark's CI still reaches it.
    alarms = 0
    for seed in range(20):
        for rounds, sd, machine in ((3, 0.01, 0.03), (1, 0.01, 0.03), (3, 0.005, 0.05)):
            base, head = Suite(600 + seed, sd=sd, machine=machine).sides(rounds, alternate=False)
            comparison = compare_documents(base, head)
            alarms += sum(r.verdict in ("regression", "improvement") for r in comparison.results)
    assert alarms == 0


def test_a_learnt_machine_spread_is_bounded_by_what_the_suite_shows_this_time() -> None:
    # History shows a runner whose machine moves 3% from job to job; this time it held still.
    # The learnt spread is what the machine does in a typical comparison, not in this one:
    # +10% of a 1% benchmark is found (with the learnt 3% as its share: in none of 20), and the
    # noise text names both.
    found = 0
    for seed in range(20):
        suite = Suite(700 + seed, sd=0.01, machine=0.03)
        history = _history(suite, 24)
        suite.machine = 0.0
        base, head = suite.sides(1, {3: 1.10})
        results = _time(compare_documents(base, head, history=history))
        found += results["b3"].verdict == "regression"
        assert all(
            r.verdict not in ("regression", "improvement") for k, r in results.items() if k != "b3"
        )
        text = results["b0"].noise
        assert text is not None and "shared shift allows; the machine's measured spread, ±" in text
    assert found == 20


def test_a_machine_that_moves_as_learnt_raises_no_alarm() -> None:
    # The same runner when its machine moves between the sides as history says it does.
    alarms = 0
    for seed in range(20):
        for machine in (0.03, 0.05):
            suite = Suite(800 + seed, sd=0.01, machine=machine)
            history = _history(suite, 24)
            calibration = calibrate([suite.process(commit="e" * 40) for _ in range(10)])
            base, head = suite.sides(1)
            for comparison in (
                compare_documents(base, head, history=history),
                compare_documents(base, head, calibration=calibration),
            ):
                alarms += sum(
                    r.verdict in ("regression", "improvement") for r in comparison.results
                )
    assert alarms == 0


def test_a_big_change_the_ci_cannot_yet_separate_is_flagged_not_green() -> None:
    flagged = 0
    for seed in range(10):
        base, head = Suite(400 + seed, sd=0.06, m=4).sides(1, {0: 1.35})
        result = _time(compare_documents(base, head))["b0"]
        if result.verdict == "inconclusive" and result.ratio > 1.09 and result.p_value < 0.2:
            assert result.flag == POSSIBLE_REGRESSION, result.reason
            assert result.reason.startswith("possible regression")
            flagged += 1
        assert result.verdict != "improvement"
    assert flagged >= 3
    base, head = Suite(450, sd=0.01).sides(3)
    assert all(r.flag is None for r in compare_documents(base, head).results)


def _history_of(suite: Suite, runs: int, factors: Any) -> list[noise.PastRun]:
    """`runs` main runs of `suite`, run i's benchmarks moved by `factors(i)` ({index: factor})."""
    out = []
    for i in range(runs):
        document = suite.process(factors(i), commit=f"{i + 1:040x}")
        medians = {
            (b.key, "time"): float(np.median(b.metrics["time"].samples or [1.0]))
            for b in document.benchmarks
        }
        out.append(noise.PastRun(commit=f"{i + 1:040x}", medians=medians))
    return out


def _history(suite: Suite, runs: int, slow_every: int = 0) -> list[noise.PastRun]:
    return _history_of(
        suite, runs, lambda i: {2: 1.3} if slow_every and i % slow_every == 0 else None
    )


def test_alternated_rounds_are_not_judged_by_how_far_jobs_in_history_moved() -> None:
    # Each benchmark moves 1% between processes of one job and 5% more between jobs. History's
    # 24 runs are separate jobs; three alternating rounds a side share one job, which cancels
    # the drift between jobs. Judged by history's spread (5% a run, times the three rounds a
    # side: ±8.8% a round) the +12% of b0 was found in none of these seeds. (History still
    # raises the threshold to the benchmark's spread between runs, about 5% here.)
    found = 0
    for seed in range(20):
        suite = Suite(seed, sd=0.01)
        moves = np.exp(np.random.default_rng(seed + 1000).normal(0, 0.05, (24, M)))
        history = _history_of(suite, 24, lambda i, moves=moves: dict(enumerate(moves[i])))
        base, head = suite.sides(3, {0: 1.12})
        result = _time(compare_documents(base, head, history=history))["b0"]
        found += result.verdict == "regression"
        assert result.noise is not None and "history" not in result.noise.split(";")[0]
    assert found >= 18, found


def test_landing_in_a_known_speed_level_is_not_a_regression_a_new_level_is() -> None:
    suite = Suite(500, sd=0.01)
    history = _history(suite, 24, slow_every=4)  # b2 is 1.3x slow in a quarter of its runs
    base = [suite.process(commit="a" * 40)]
    known = _time(
        compare_documents(base, [suite.process({2: 1.3}, commit="c" * 40)], history=history)
    )
    assert known["b2"].verdict == "inconclusive"
    assert "known speed levels" in known["b2"].reason
    assert known["b2"].levels == pytest.approx((1.0, 1.3), abs=0.03)
    new = _time(
        compare_documents(base, [suite.process({2: 1.8}, commit="c" * 40)], history=history)
    )
    assert new["b2"].verdict == "regression"


def test_history_and_calibration_are_evidence_for_one_round() -> None:
    suite = Suite(600, sd=0.01, m=5)
    base, head = [suite.process(commit="a" * 40)], [suite.process({0: 1.12}, commit="c" * 40)]
    alone = _time(compare_documents(base, head))["b0"]
    calibration = calibrate([suite.process(commit="e" * 40) for _ in range(10)])
    informed = _time(compare_documents(base, head, calibration=calibration))["b0"]
    assert informed.verdict == "regression", informed.reason
    assert informed.noise is not None and "calibration of 10 rounds" in informed.noise
    history = _history(suite, 12)
    with_history = _time(compare_documents(base, head, history=history))["b0"]
    assert with_history.verdict == "regression", with_history.reason
    assert with_history.noise is not None and "history of 12 runs" in with_history.noise
    # Without either, the machine's share between the two jobs is what the suite's shift
    # allows (five benchmarks or more), else the default; each says so.
    assert alone.noise is not None and "shared shift allows" in alone.noise
    # With either, the machine's spread is measured; where the suite's shift bounds it tighter,
    # the text names the measured spread it replaced.
    for learnt in (informed, with_history):
        assert learnt.noise is not None and "assumed" not in learnt.noise
        assert "shared shift" not in learnt.noise or "measured spread" in learnt.noise
    four = Suite(601, sd=0.01, m=4)
    base, head = [four.process(commit="a" * 40)], [four.process({0: 1.12}, commit="c" * 40)]
    assumed = _time(compare_documents(base, head))["b0"]
    assert assumed.verdict != "regression"  # four benchmarks, one round: little to go on
    assert assumed.noise is not None and "assumed" in assumed.noise


def test_the_runners_tails_are_learnt_from_its_history() -> None:
    rng = np.random.default_rng(7)
    light = noise.tail_df([rng.normal(0, 0.03, 24) for _ in range(M)])
    assert light is not None and light >= 20
    heavy = noise.tail_df([0.03 * rng.standard_t(3, 24) for _ in range(M)])
    assert heavy is not None and heavy <= 4
    assert noise.tail_df([rng.normal(0, 0.03, 24)]) is None  # too few values to tell

    def width(tails: float | None) -> float:
        suite = Suite(700, sd=0.02)
        history = []
        for _ in range(24):
            draw = suite.rng.standard_t(tails, M) if tails else suite.rng.normal(0, 1, M)
            medians = {
                (f"b{j}", "time"): float(suite.levels[j] * math.exp(0.02 * draw[j]))
                for j in range(M)
            }
            history.append(noise.PastRun(commit="b" * 40, medians=medians))
        base, head = [suite.process(commit="a" * 40)], [suite.process(commit="c" * 40)]
        result = _time(compare_documents(base, head, history=history))["b0"]
        assert result.ci is not None
        return math.log(result.ci[1] / result.ci[0])

    # Heavy-tailed history: the same spread reaches further out.
    assert width(2.5) > 1.3 * width(None)


def _drifting_history(seed: int, *, phi: float, runs: int = 24) -> list[noise.PastRun]:
    """`runs` main runs a minute apart: each of M benchmarks wanders AR(1) (coefficient `phi`,
    stationary sd 3%; 0 for independent runs) with 1% of fresh noise a run."""
    rng = np.random.default_rng(seed)
    level = rng.normal(0.0, 0.03, M)
    out = []
    for i in range(runs):
        level = phi * level + math.sqrt(1 - phi**2) * rng.normal(0.0, 0.03, M)
        logs = level + rng.normal(0.0, 0.01, M)
        out.append(
            noise.PastRun(
                commit=f"{i + 1:040x}",
                medians={(f"b{j}", "time"): 1e-3 * math.exp(v) for j, v in enumerate(logs)},
                started_at=START + timedelta(minutes=i),
            )
        )
    return out


def test_wander_is_measured_as_far_ahead_of_history_as_the_head_started() -> None:
    # Benchmarks that wander slowly sit further from history's level the later the head runs:
    # measured one run ahead, a head six to eight runs later raised 2.7% false alarms on the
    # simulated `ar1-drift` runner (bench/eval_comparator.py, 1 round + 24 history).
    def wander(history: list[noise.PastRun], minutes: float | None) -> float:
        at = None if minutes is None else START + timedelta(minutes=23 + minutes)
        found = noise.history_noise(history, compared_at=at).wander
        assert found is not None
        return found.var

    drifting = [_drifting_history(seed, phi=0.8) for seed in range(8)]
    next_run = np.mean([wander(h, 1) for h in drifting])
    eight_on = np.mean([wander(h, 8) for h in drifting])
    assert eight_on > 2 * next_run > 0, (eight_on, next_run)
    # Without start times, or with the head right after history's last run, it is measured
    # one run ahead.
    undated = [dataclasses.replace(run, started_at=None) for run in drifting[0]]
    assert wander(undated, 8) == wander(drifting[0], None) == wander(drifting[0], 1)

    # The comparison takes the head's start from its documents: the same A/A pair, its head
    # started eight runs after history's last rather than one, has a wider CI.
    def width(head_index: int) -> float:
        rng = np.random.default_rng(5)
        medians = np.full(M, 1e-3)
        base = _document(medians, index=24, commit="a" * 40, rng=rng)
        head = _document(medians, index=head_index, commit="c" * 40, rng=rng)
        result = _time(compare_documents([base], [head], history=drifting[0]))["b0"]
        assert result.ci is not None
        return math.log(result.ci[1] / result.ci[0])

    assert width(31) > 1.03 * width(24)
    # Runs that do not wander show little, however far ahead (5% of their 1e-3 of variance:
    # the variogram fit's noise, cut at 0): under a third of what the wandering runs show.
    steady = [_drifting_history(seed, phi=0.0) for seed in range(8)]
    assert np.mean([wander(h, 8) for h in steady]) < 0.35 * eight_on


def test_the_wanders_variogram_fit_recovers_a_sill_and_stays_flat_without_one() -> None:
    lags = np.arange(1, 13)
    weights = 24.0 - lags
    drifting = noise._fit_variogram(lags, 1.0 + 4.0 * (1 - 0.8**lags), weights)
    far = np.asarray([40])
    assert drifting(far)[0] == pytest.approx(1.0 + 4.0 * (1 - 0.8**40), rel=1e-3)
    assert drifting(np.asarray([0]))[0] == 0.0
    # Independent runs: every lag alike, so nothing grows with the lead.
    flat = noise._fit_variogram(lags, np.full(lags.size, 2.0), weights)
    assert flat(np.asarray([1, 40])).tolist() == pytest.approx([2.0, 2.0])


def test_the_robust_semivariance_is_unbiased_for_normal_differences_and_screens_far_ones() -> None:
    # Half the mean square, screened at four robust spreads and rescaled for what the screen
    # takes from a normal: v for normal differences of variance 2 v. Four of 40 differences ten
    # spreads out (a step placed a run off, a run between speed levels) hardly move it, where
    # they make half the mean square ten times as large.
    rng = np.random.default_rng(3)
    draws = [rng.normal(0.0, math.sqrt(2 * 0.04), 40) for _ in range(2000)]
    found = [noise._robust_semivariance(d) for d in draws]
    assert np.mean(found) == pytest.approx(0.04, rel=0.03)
    spoilt = [np.append(d[4:], np.full(4, 10 * math.sqrt(0.08))) for d in draws]
    moved = [noise._robust_semivariance(d) for d in spoilt]
    squares = [0.5 * float(np.mean(d**2)) for d in spoilt]
    assert np.mean(moved) < 1.1 * 0.04 < 10 * 0.04 < np.mean(squares)
    assert noise._robust_semivariance(np.zeros(5)) == noise._robust_semivariance(np.zeros(0)) == 0


def test_a_step_placed_a_run_off_is_not_read_as_wander() -> None:
    # Independent runs at 3%, each benchmark's history cut in two; in seven of thirteen the
    # cut came a run early, so the current segment opens with one run of the old level, +30%.
    # Its differences sit at every lag past it; counted by their square roots (Cressie and
    # Hawkins) they read 40% of a run's variance as wander for a head five runs on.
    rng = np.random.default_rng(4)
    found = []
    for _ in range(20):
        groups = {}
        for j in range(M):
            before, after = rng.normal(0.0, 0.03, 10), rng.normal(0.0, 0.03, 14)
            after[0] += 0.3 if j % 2 == 0 else 0.0
            groups[(f"b{j}", "time")] = [before, after]
        wandered = noise.wander(groups, lead=5)
        assert wandered is not None
        found.append(wandered.var)
    assert np.mean(found) < 0.15 * 0.03**2


def test_normal_runs_read_as_normal_once_the_machine_factor_is_taken_out() -> None:
    # 24 runs of 13 benchmarks with normal 3% process noise and no machine at all. A run's
    # factor is the median benchmark's deviation: taken out of every benchmark, it leaves the
    # benchmark that was that median exactly on its level, a peak at nothing in about one run
    # of 13 that a t with a free scale reads as tails (64 of these 260 benchmarks at 10 df or
    # heavier, where their values as drawn give 26). Tails are measured against the factor of
    # the other benchmarks (23).
    heavy = []
    for seed in range(20):
        history = _history(Suite(900 + seed, sd=0.03), 24)
        found = noise.history_noise(history)
        heavy.append(sum(weight <= 10 for weight in found.tails.values()))
    assert sum(heavy) <= 45, heavy


def test_normal_calibration_rounds_give_the_runner_light_tails() -> None:
    # The same peak in a calibration's rounds, whose factors are the median benchmark's too:
    # measured against the round factors of the other benchmarks, normal rounds give the runner
    # normal tails (13 benchmarks of 20 rounds: 1 seed of 30 at 10 df or heavier, against 7).
    heavy = 0
    for seed in range(30):
        suite = Suite(950 + seed, sd=0.03)
        record = calibrate([suite.process(commit="e" * 40) for _ in range(20)])
        heavy += record.tail_df is not None and record.tail_df <= 10
    assert heavy <= 4, heavy


def test_process_modes_in_history_are_neither_the_runners_tails_nor_its_wander() -> None:
    # Three of thirteen benchmarks land 2x slow in about one process of seven; the rest are
    # steady at 2%. Their jumps between levels are modes, not tails: counted as tails they set
    # the runner's weight at 1.5 df and its wander near +-3%, and a steady benchmark's +12% read
    # "not significant". The modal benchmarks keep the tails their history shows as it is.
    suite = Suite(720, sd=0.02)
    slow = np.random.default_rng(720).random((24, 3)) < 0.15
    history = _history_of(suite, 24, lambda i: {j: 2.0 for j in range(3) if slow[i, j]})
    found = noise.history_noise(history)
    assert found.tail is not None and found.tail >= 10
    assert all(found.tails[(f"b{j}", "time")] >= 5 for j in range(3, M))
    assert all(found.tails[(f"b{j}", "time")] <= 3 for j in range(3))
    assert found.wander is not None and math.sqrt(found.wander.var) < 0.01
    base, head = [suite.process(commit="a" * 40)], [suite.process({5: 1.12}, commit="c" * 40)]
    result = _time(compare_documents(base, head, history=history))["b5"]
    assert result.verdict == "regression", result.reason


def test_a_few_heavy_tailed_benchmarks_do_not_set_the_typical_tail() -> None:
    # 10 values each of 13 benchmarks, three of them a t with 1.5 df: fitted to all at once,
    # the weight is set by those three (5 df or heavier in 14 of 30 seeds); the typical
    # benchmark's (`noise.typical_tail`) in 4. Where every benchmark is a t with 3 df, the
    # typical one still says so (15 of 30).
    joint = typical = shared = 0
    for seed in range(30):
        rng = np.random.default_rng(1300 + seed)
        groups = {
            (f"b{j}", "time"): [
                0.05 * rng.standard_t(1.5, 10) if j < 3 else rng.normal(0.0, 0.02, 10)
            ]
            for j in range(M)
        }
        joint += (noise.tail_df([g[0] for g in groups.values()]) or 60.0) <= 5
        typical += (noise.typical_tail(groups) or 60.0) <= 5
        everywhere = {(f"b{j}", "time"): [0.02 * rng.standard_t(3, 10)] for j in range(M)}
        shared += (noise.typical_tail(everywhere) or 60.0) <= 5
    assert joint >= 10 and typical <= 7 and shared >= 10, (joint, typical, shared)


def test_a_calibration_takes_the_typical_benchmarks_tails() -> None:
    # Four of 13 benchmarks land far off now and then in the calibration's rounds. The record's
    # weight is the typical benchmark's, so a steady benchmark's +12% with one round a side is
    # found in 52 of 100 comparisons (43 with the weight fitted to all benchmarks at once).
    found = 0
    for seed in range(20):
        suite = Suite(1100 + seed, sd=0.02)
        rng = np.random.default_rng(1100 + seed)
        rounds = [
            suite.process(
                {j: math.exp(0.05 * rng.standard_t(1.5)) for j in range(4)}, commit="e" * 40
            )
            for _ in range(10)
        ]
        calibration = calibrate(rounds)
        for j in range(4, M, 2):
            base = [suite.process(commit="a" * 40)]
            head = [suite.process({j: 1.12}, commit="c" * 40)]
            result = _time(compare_documents(base, head, calibration=calibration))[f"b{j}"]
            found += result.verdict == "regression"
    assert found >= 48, found


def test_a_tail_the_runner_shares_is_taken_no_heavier_than_3_df() -> None:
    # A calibration whose heaviest benchmarks set the runner's one tail weight at 1.5 df: a t
    # that heavy with the false-discovery correction would need a change of some twenty spreads.
    # Shared by every benchmark it stops at 3 df (`shared_tail`), and one round's +50% of a
    # steady 2% benchmark is found.
    suite = Suite(710, sd=0.02)
    calibration = calibrate([suite.process(commit="e" * 40) for _ in range(10)])
    heavy = dataclasses.replace(calibration, tail_df=1.5)
    base, head = [suite.process(commit="a" * 40)], [suite.process({0: 1.5}, commit="c" * 40)]
    found = _time(compare_documents(base, head, calibration=heavy))["b0"]
    assert found.verdict == "regression", found.reason
    assert noise_model.shared_tail(1.5) == noise_model.MIN_TAIL_FOR_SCALE == 3.0
    assert noise_model.shared_tail(8.0) == 8.0 and noise_model.shared_tail(None) is None


def test_a_level_of_three_rounds_has_lighter_tails_than_one_round() -> None:
    # A level that two far-off rounds of three must carry is far off about as often as one
    # round is, squared: the tail weight doubles (`tail_for_rounds`). The fitted weights agree.
    rng = np.random.default_rng(11)
    one = noise.tail_df([0.03 * rng.standard_t(3, 24) for _ in range(40)])
    three = noise.tail_df(
        [two_sample.side_level(0.03 * rng.standard_t(3, (3, 24)), 0.03) for _ in range(40)]
    )
    assert one is not None and three is not None and three >= 1.5 * one, (one, three)
    assert [noise_model.rounds_to_move(n) for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]
    assert noise_model.tail_for_rounds(3.0, measured_on=1, rounds=3) == 6.0
    assert noise_model.tail_for_rounds(8.0, measured_on=3, rounds=1) == 4.0
    assert noise_model.tail_for_rounds(8.0, measured_on=3, rounds=3) == 8.0
    # Shared, no lighter than 3 df as measured, nor as it stands for the side.
    assert noise_model.shared_tail(1.5, measured_on=1, rounds=3) == 6.0
    assert noise_model.shared_tail(4.0, measured_on=3, rounds=1) == 3.0


def test_tails_history_measured_on_single_rounds_do_not_hold_three_alternating_rounds() -> None:
    # Process noise with Student-t tails of 3 df; history's 24 runs of one round each measure
    # them. Three alternating rounds a side have a level two of them must carry, with tails
    # of about 6 df: taken at history's 3 df, +20% of b0 was found in 7 of these 20 seeds.
    found = alarms = 0
    for seed in range(20):
        suite = Suite(seed, sd=0.03, tails=3.0)
        history = _history(suite, 24)
        base, head = suite.sides(3, {0: 1.2})
        results = _time(compare_documents(base, head, history=history))
        found += results["b0"].verdict == "regression"
        alarms += sum(r.verdict in ("regression", "improvement") for r in results.values())
    assert found >= 13, found
    assert alarms - found <= 2, alarms


def test_a_short_history_gives_no_benchmark_a_tail_weight_of_its_own() -> None:
    # Eight runs of normal noise: fitted on their own, some benchmarks' weights came out heavy
    # (in 15 of these 20 seeds; 1.5 df for three of 13 in an evaluation pair, whose +10% three
    # alternating rounds then missed). Under `MIN_OWN_TAIL_VALUES` values a benchmark takes
    # the typical benchmark's weight.
    found = 0
    for seed in range(20):
        suite = Suite(seed + 1700, sd=0.01)
        history = [dataclasses.replace(run, rounds=3) for run in _history(suite, 8)]
        past = noise.history_noise(history)
        assert len(set(past.tails.values())) == 1  # the typical benchmark's
        base, head = suite.sides(3, {seed % M: 1.1})
        found += _time(compare_documents(base, head, history=history))[f"b{seed % M}"].verdict == (
            "regression"
        )
    assert found >= 19, found
    table = np.linspace(0.0, 1.0, len(noise._TAIL_GRID))
    # a's own data prefer 60 df, b's (and the runner's sum) 1.5; with too few values, a takes
    # the typical benchmark's (the lower median, no heavier than a shared weight may be).
    tables = {("a", "time"): table * 20, ("b", "time"): table[::-1] * 30}
    runner, few = noise.tails_from(tables, {("a", "time"): 15, ("b", "time"): 30})
    _, enough = noise.tails_from(tables, {("a", "time"): 16, ("b", "time"): 30})
    assert runner == 1.5 and enough == {("a", "time"): 60.0, ("b", "time"): 1.5}
    assert few[("a", "time")] == noise.MIN_SHARED_TAIL == 3.0


def test_history_runs_of_several_rounds_are_read_as_such() -> None:
    # The same medians as runs of one round and as runs of three: a run of three rounds holds
    # a third of a round's variance (a round's is three times its spread, sides one after the
    # other), and its tails are those of a level of three rounds.
    suite = Suite(720, sd=0.02)
    history = _history(suite, 24)
    thirds = [dataclasses.replace(run, rounds=3) for run in history]
    assert noise.history_noise(thirds).rounds == 3 and noise.history_noise(history).rounds == 1
    base, head = [suite.process(commit="a" * 40)], [suite.process(commit="c" * 40)]

    def process_spread(runs: list[noise.PastRun]) -> float:
        text = _time(compare_documents(base, head, history=runs))["b0"].noise
        assert text is not None and "history of 24 runs" in text
        found = re.match(r"±([0-9.]+)% a process", text)
        assert found is not None, text
        return math.log1p(float(found.group(1)) / 100)

    # (The text shows a tenth of a percent.)
    expected = math.sqrt(3) * process_spread(history)
    assert process_spread(thirds) == pytest.approx(expected, abs=0.0015)
    heavy = noise.History.empty(24)
    heavy = dataclasses.replace(heavy, tail=3.0)
    shape = noise_model.SideShape(
        rounds_base=3, rounds_head=3, jobs_base=1, jobs_head=1, alternated=True
    )
    args: dict[str, Any] = {
        "keys": ["b0"],
        "round_logs": {"b0": ([0.0, 0.01, -0.01], [0.0, 0.02, -0.02])},
        "differences": {"b0": 0.0},
        "round_machine": None,
        "shape": shape,
        "calibration": None,
    }
    floors, _ = noise_model.build(history=heavy, **args)
    assert floors["b0"].tail_df == 6.0
    # Where the tail weight, not the evidence, sets the t, the noise text names it.
    capped = dataclasses.replace(floors["b0"], df=6.0, tail_factor=noise_model.tail_factor(6.0))
    assert "; tails of a t with 6 df" in capped.describe()
    assert "tails" not in dataclasses.replace(capped, tail_factor=1.0).describe()
    light = dataclasses.replace(capped, tail_df=60.0, tail_factor=noise_model.tail_factor(60.0))
    assert "tails" not in light.describe()  # a t of 60 df is as good as normal
    floors, _ = noise_model.build(history=dataclasses.replace(heavy, rounds=3), **args)
    assert floors["b0"].tail_df == 3.0


def test_most_of_the_suite_slower_with_one_round_still_fails_the_gate() -> None:
    # One round a side, no history: the machine's spread is the default's, with 3 df; the
    # suite's median change still stands out when 8 of 13 benchmarks moved +25%.
    fails = 0
    for seed in range(20):
        base, head = Suite(900 + seed, sd=0.03).sides(1, dict.fromkeys(range(8), 1.25))
        comparison = compare_documents(base, head)
        fails += comparison.has_regression()
        assert not any(
            r.verdict in ("regression", "improvement")
            for r in comparison.results
            if r.metric == "time" and int(r.key[1:]) >= 8
        )
    assert fails >= 17


# --- history with a step (a change that landed on the base branch) --------------------------------


def test_a_shift_every_benchmark_shares_beyond_the_machines_history_is_the_suites_finding() -> None:
    # A quiet runner (0.3% a process, steady machine in 24 runs of history); the head's only
    # round ran 10% slow across the board, as in a GPU clock dip. Machine or code, one round
    # cannot tell: no benchmark is a regression on its own, the suite's finding says it.
    suite = Suite(950, sd=0.003)
    history = _history(suite, 24)
    base = [suite.process(commit="a" * 40)]
    head = [suite.process(dict.fromkeys(range(M), 1.10), commit="c" * 40)]
    comparison = compare_documents(base, head, history=history)
    results = _time(comparison)
    assert all(r.verdict == "inconclusive" for r in results.values()), [
        r.reason for r in results.values()
    ]
    assert all(r.ci is not None and r.ci[0] < 1.0 and r.ci[1] > 1.10 for r in results.values())
    assert "every benchmark moved +10" in (results["b0"].noise or "")
    common = comparison.common_factor
    assert common is not None and common.verdict == "regression"
    assert comparison.has_regression()
    # The same dip with one benchmark slowed further by the code: every benchmark moved at
    # least +10%, so that part is the machine's or the whole suite's; the one that moved
    # further is a regression, the others are not called changed for the dip alone.
    # The shared part widens b0's CI as well: it is a regression or, at least, flagged as a
    # possible one, and the suite's finding fails the gate either way.
    head = [suite.process({**dict.fromkeys(range(M), 1.10), 0: 1.40}, commit="c" * 40)]
    comparison = compare_documents(base, head, history=history)
    results = _time(comparison)
    assert results["b0"].verdict == "regression" or results["b0"].flag == "possible_regression"
    assert all(results[f"b{i}"].verdict == "inconclusive" for i in range(1, M))
    assert "or further together" in (results["b1"].noise or "")
    assert comparison.has_regression()
    # Without the dip, the untouched benchmarks share no shift: each is judged on its own.
    head = [suite.process({0: 1.40}, commit="c" * 40)]
    results = _time(compare_documents(base, head, history=history))
    assert results["b0"].verdict == "regression"
    assert "together" not in (results["b1"].noise or "")
    assert not any(results[f"b{i}"].verdict == "regression" for i in range(1, M))


def test_a_suite_finding_on_the_assumed_machine_spread_says_so_and_how_to_learn_it() -> None:
    # One job a side, no history or calibration: the suite's finding is judged against the
    # documented default machine spread, and the note a reader sees names `perfgate calibrate`.
    suite = Suite(975, sd=0.01)
    base, head = suite.sides(1, dict.fromkeys(range(M), 1.30), alternate=False)
    comparison = compare_documents(base, head)
    common = comparison.common_factor
    assert common is not None and common.verdict == "regression"
    assert "assumed: no history or calibration" in common.noise
    assert any(
        w.startswith("regression across the suite") and "`perfgate calibrate` measures it" in w
        for w in comparison.warnings
    )
    # With history the spread is measured: nothing is said to be assumed.
    history = _history(suite, 24)
    base = [suite.process(commit="a" * 40)]
    head = [suite.process(dict.fromkeys(range(M), 1.30), commit="c" * 40)]
    comparison = compare_documents(base, head, history=history)
    assert comparison.common_factor is not None
    assert "assumed" not in comparison.common_factor.noise
    assert not any("perfgate calibrate" in w for w in comparison.warnings)


def test_a_side_whose_benchmarks_went_each_their_own_way_is_read_as_a_disturbed_machine() -> None:
    # The head job ran on a disturbed machine: most of the suite +30%, two benchmarks clearly
    # faster, far beyond what 24 runs of history ever showed the machine do. No benchmark's
    # change there can be read on its own; the suite's finding still fails the gate.
    suite = Suite(960, sd=0.01)
    history = _history(suite, 24)
    base = [suite.process(commit="a" * 40)]
    wild = {**dict.fromkeys(range(M), 1.30), 1: 0.78, 2: 0.8}
    comparison = compare_documents(base, [suite.process(wild, commit="c" * 40)], history=history)
    results = _time(comparison)
    assert all(r.verdict == "inconclusive" for r in results.values()), [
        (k, r.verdict) for k, r in results.items()
    ]
    assert comparison.has_regression()
    # Most of the suite slower with the rest at rest is not a disturbed machine: the slowed
    # benchmarks are regressions on their own.
    change = dict.fromkeys(range(8), 1.30)
    results = _time(
        compare_documents(base, [suite.process(change, commit="c" * 40)], history=history)
    )
    assert all(results[f"b{i}"].verdict == "regression" for i in range(8))
    assert not any(results[f"b{i}"].verdict == "regression" for i in range(8, M))


def _stepped_history(suite: Suite, runs: int, *, at: int, key: int, step: float) -> list[Any]:
    """`runs` main runs whose benchmark `key` runs `step` times slower from run `at` on."""
    out = []
    for i in range(runs):
        document = suite.process({key: step} if i >= at else None, commit=f"{i + 1:040x}")
        medians = {
            (b.key, "time"): float(np.median(b.metrics["time"].samples or [1.0]))
            for b in document.benchmarks
        }
        out.append(noise.PastRun(commit=f"{i + 1:02d}" + "f" * 38, medians=medians))
    return out


def test_steps_at_different_runs_still_bound_the_machine_by_the_suites_shift() -> None:
    # Every benchmark steps +30% at a run of its own, so each pools a different number of
    # history runs into its baseline and none has four others pooling as many. The machine
    # moved 3% a job in history and stood still between base and head: each baseline size's
    # shift is read off every benchmark with a baseline (`noise_model.shift_samples`), and
    # bounds the machine's share. Per group of equal baselines only, no benchmark was bounded and
    # +10% of b3 was found in none of these 20 (the learnt ±3% a job stayed in every CI).
    found = 0
    for seed in range(20):
        suite = Suite(3100 + seed, sd=0.01, machine=0.03)
        history = _history_of(suite, 24, lambda i: {j: 1.3 for j in range(M) if i >= 6 + j})
        suite.machine = 0.0
        moved = dict.fromkeys(range(M), 1.3)
        base = [suite.process(moved, commit="a" * 40)]
        head = [suite.process({**moved, 3: 1.3 * 1.1}, commit="c" * 40)]
        results = _time(compare_documents(base, head, history=history))
        assert len({r.baseline_runs for r in results.values()}) > M // 2
        found += results["b3"].verdict == "regression"
        for key, result in results.items():
            assert result.noise is not None and "shared shift allows" in result.noise, key
            assert key == "b3" or result.verdict not in ("regression", "improvement"), key
    assert found >= 16, found


def test_a_step_in_history_is_a_change_of_level_not_noise() -> None:
    # 24 main runs, b0 +30% from run 12 on; base and head at the new level.
    suite = Suite(1100, sd=0.02)
    history = _stepped_history(suite, 24, at=12, key=0, step=1.3)
    past = noise.history_noise(history)
    segment = past.current[("b0", "time")]
    assert segment.runs == 12 and segment.since == "13" + "f" * 38
    assert past.current[("b1", "time")].since is None  # the untouched ones keep all 24
    assert past.metrics[("b0", "time")].sigma < 0.04  # spread inside the segments, not across

    base = [suite.process({0: 1.3}, commit="a" * 40)]
    at_level = _time(
        compare_documents(base, [suite.process({0: 1.3}, commit="c" * 40)], history=history)
    )
    assert at_level["b0"].verdict != "regression"
    # +20%: at +15% this seed's b0 is found with q = 0.002 or missed with q = 0.07 depending on
    # its tail weight, which its 24 runs put at 60 or 4 df on residual changes under 0.3 sd (the
    # machine factors taken segment by segment moved them that much). The level is the point.
    slower = _time(
        compare_documents(base, [suite.process({0: 1.3 * 1.2}, commit="c" * 40)], history=history)
    )
    assert slower["b0"].verdict == "regression", slower["b0"].reason
    assert "last 12 runs, after the change at 13fffff" in slower["b0"].noise
    assert "baseline: base and its 12 history runs" in slower["b0"].noise
    assert slower["b0"].threshold == pytest.approx(0.03)  # the step did not raise it


def test_one_run_back_at_the_old_level_after_a_step_is_a_stray_not_a_mode() -> None:
    # b0 30% slower until run 12, and one later process slowed back to about the old level (a
    # burst). Taken for a process mode, it made the whole history one segment, whose baseline
    # the old level pulled off the new one: 10 of the 20 false alarms in 1,300 results of the
    # simulated `bursts` runner with a step in history.
    suite = Suite(1450, sd=0.01)
    history = _history_of(suite, 24, lambda i: {0: 1.3} if i < 12 or i == 17 else {})
    past = noise.history_noise(history)
    assert past.current[("b0", "time")].runs == 12
    base, head = [suite.process(commit="a" * 40)], [suite.process(commit="c" * 40)]
    result = _time(compare_documents(base, head, history=history))["b0"]
    assert result.verdict not in ("regression", "improvement"), result.reason
    # Back at the old level twice: the levels alternate, and the whole history is one segment.
    moded = _history_of(suite, 24, lambda i: {0: 1.3} if i < 12 or i in (15, 19) else {})
    assert noise.history_noise(moded).current[("b0", "time")].since is None


def test_steps_benchmarks_take_at_their_own_runs_are_not_the_machine() -> None:
    # Each benchmark 30% slower before a run of its own (b0 until run 6, b1 until run 7, ...):
    # thirteen changes on main, no machine movement. Against each benchmark's median over all
    # the runs, the median deviation slid run by run, and the machine's spread came out 9.4%
    # (0.5% now); the suite's 25% slowdown of 8 benchmarks then did not fail the gate.
    suite = Suite(1600, sd=0.005)
    history = _history_of(suite, 24, lambda i: {j: 1.3 for j in range(M) if i < 6 + j})
    past = noise.history_noise(history)
    assert past.machine is not None and past.machine.sigma < 0.01
    assert [past.current[(f"b{j}", "time")].runs for j in range(M)] == [18 - j for j in range(M)]
    base = [suite.process(commit="a" * 40)]
    head = [suite.process(dict.fromkeys(range(8), 1.25), commit="c" * 40)]
    comparison = compare_documents(base, head, history=history)
    assert comparison.has_regression()
    assert comparison.common_factor is not None
    assert comparison.common_factor.verdict == "regression", comparison.common_factor.reason


def test_a_shift_every_benchmark_takes_at_one_run_stays_the_machines() -> None:
    suite = Suite(1700, sd=0.005)
    history = _history_of(suite, 24, lambda i: dict.fromkeys(range(M), 1.1) if i < 12 else {})
    past = noise.history_noise(history)
    assert past.machine is not None and past.machine.sigma > 0.04


def test_with_history_one_round_a_side_finds_10_percent_on_3_percent_noise() -> None:
    # The baseline pools the base run with 24 runs of history: +10% on 3% noise is found about
    # a third of the time (7 of these 20), where the base run alone (two single rounds) next to
    # never does.
    found_pooled = found_alone = 0
    for seed in range(20):
        suite = Suite(1200 + seed, sd=0.03)
        history = _history(suite, 24)
        base = [suite.process(commit="a" * 40)]
        head = [suite.process({0: 1.10}, commit="c" * 40)]
        found_pooled += _time(compare_documents(base, head, history=history))["b0"].verdict == (
            "regression"
        )
        found_alone += _time(compare_documents(base, head))["b0"].verdict == "regression"
    assert found_pooled >= 6 and found_alone <= 2, (found_pooled, found_alone)


def test_a_benchmark_that_barely_follows_the_machine_is_judged_on_its_own_noise() -> None:
    # b0 follows a tenth of a machine that moves 4% a job; b1 follows it as the rest do. History
    # learns b0's loading, so neither its noise nor its machine share carries the 4%.
    found = {"b0": 0, "b1": 0}
    for seed in range(20):
        suite = Suite(1250 + seed, sd=0.01, machine=0.04, follows={0: 0.1})
        history = _history(suite, 24)
        for key, j in (("b0", 0), ("b1", 1)):
            base = [suite.process(commit="a" * 40)]
            head = [suite.process({j: 1.08}, commit="c" * 40)]
            result = _time(compare_documents(base, head, history=history))[key]
            found[key] += result.verdict == "regression"
            if key == "b0":
                assert result.noise is not None
                match = re.search(r"follows x(\d\.\d\d) of the machine's speed", result.noise)
                assert match is not None and float(match.group(1)) < 0.5, result.noise
    assert found["b0"] >= 16 and found["b1"] <= found["b0"] - 6, found


def test_a_benchmark_that_follows_the_machine_twice_raises_no_alarm_when_it_moves() -> None:
    # Its loading takes the excess out of its own noise in history; the machine's share of its
    # difference must then be the loading's square times the machine's, or it alarms.
    alarms = 0
    for seed in range(30):
        suite = Suite(1280 + seed, sd=0.005, machine=0.03, follows={1: 2.5})
        history = _history(suite, 24)
        base, head = [suite.process(commit="a" * 40)], [suite.process(commit="c" * 40)]
        result = _time(compare_documents(base, head, history=history))["b1"]
        alarms += result.verdict in ("regression", "improvement")
    assert alarms <= 1, alarms


def test_a_base_run_off_the_branchs_level_makes_no_verdict_when_the_head_agrees() -> None:
    suite = Suite(1300, sd=0.01)
    history = _history(suite, 24)
    base = [suite.process({3: 1.4}, commit="a" * 40)]  # the base run drew a slow process
    head = [suite.process(commit="c" * 40)]
    result = _time(compare_documents(base, head, history=history))["b3"]
    assert result.verdict == "inconclusive"
    assert "off the base branch's level in history" in result.reason


def test_a_step_at_the_base_run_leaves_the_base_side_alone_and_says_so() -> None:
    # Main's newest run is the first at a new level (+30%): one run cannot tell a step from an
    # outlier, so history is evidence for the noise but not part of the baseline.
    suite = Suite(1400, sd=0.01)
    history = _history(suite, 24)
    base = [suite.process({5: 1.3}, commit="a" * 40)]
    head = [suite.process({5: 1.3}, commit="c" * 40)]
    result = _time(compare_documents(base, head, history=history))["b5"]
    assert result.verdict != "regression"
    assert "baseline: the base side alone (it sits off history's level)" in result.noise


def test_a_step_three_runs_ago_is_a_level_of_its_own_in_the_baseline() -> None:
    # Too few runs since the step to measure their own spread, but a level: read with the spread
    # history measured inside its segments, they join the base side in the baseline (before,
    # the base side stood alone until the fifth run since), and the step's runs do not widen
    # the benchmark's spread.
    suite = Suite(1500, sd=0.01)
    history = _stepped_history(suite, 24, at=21, key=4, step=1.3)
    past = noise.history_noise(history)
    assert past.current[("b4", "time")].runs == 3
    assert past.metrics[("b4", "time")].sigma < 0.02
    base = [suite.process({4: 1.3}, commit="a" * 40)]
    head = [suite.process({4: 1.3 * 1.15}, commit="c" * 40)]
    result = _time(compare_documents(base, head, history=history))["b4"]
    assert result.verdict == "regression", result.reason
    assert result.noise is not None
    assert "history: last 3 runs, after the change at 22fffff" in result.noise
    assert "baseline: base and its 3 history runs" in result.noise
    assert result.baseline_runs == 3
    # A base run 30% off those three runs' level is not pooled with them.
    off = [suite.process({4: 1.3 * 1.3}, commit="a" * 40)]
    alone = _time(compare_documents(off, head, history=history))["b4"]
    assert alone.baseline_runs == 0
    assert (
        alone.noise is not None
        and "the base side alone (it sits off history's level)" in alone.noise
    )


def test_why_the_base_side_stands_alone_names_the_reason_that_held() -> None:
    # Three runs since a step are a level only with the job spread history measured to read
    # them by; without one they are too few, not off the level.
    since = noise.Segment(raw=np.zeros(3), residuals=np.zeros(3), since="f" * 40)
    assert noise_model.alone_because(since, 0.01) == "it sits off history's level"
    assert noise_model.alone_because(since, None) == (
        "history: last 3 runs, after the change at fffffff: too few for a level"
    )
    assert noise_model.alone_because(None, 0.01) is None


def test_the_pooled_baseline_travels_with_the_result_and_its_json() -> None:
    from perfgate.report.comparison_document import comparison_from_json, comparison_to_json

    suite = Suite(1100, sd=0.02)
    history = _history(suite, 12)
    base, head = [suite.process(commit="a" * 40)], [suite.process(commit="c" * 40)]
    comparison = compare_documents(base, head, history=history)
    assert _time(comparison)["b0"].baseline_runs == 12
    back = comparison_from_json(comparison_to_json(comparison))
    assert _time(back)["b0"].baseline_runs == 12
    assert _time(compare_documents(base, head))["b0"].baseline_runs == 0


@pytest.mark.parametrize("n", [9, 13, 40])
def test_qn_variance_is_unbiased_with_the_degrees_of_freedom_it_claims(n: int) -> None:
    rng = np.random.default_rng(n)
    estimates = [noise.qn_variance(rng.standard_normal(n)) for _ in range(20000)]
    variances = np.array([e.var for e in estimates])
    # A variance estimate worth df degrees of freedom has relative variance 2 / df.
    actual_df = 2.0 * variances.mean() ** 2 / variances.var()
    assert variances.mean() == pytest.approx(1.0, abs=0.02)
    assert estimates[0].df == pytest.approx(actual_df, rel=0.1)
