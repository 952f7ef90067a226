"""The comparator: reference values from scipy, and simulated data with known answers."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from perfgate.results import Op, parse_document
from perfgate.stats.attribution import attribute
from perfgate.stats.compare import (
    CROSSING_NEARER,
    CompareSettings,
    crossing_round,
    decide_exact,
    decide_single_value,
    mann_whitney_p,
    median_halfwidth,
    min_two_sided_p,
)
from perfgate.stats.comparison import compare_documents, sides_alternated
from perfgate.stats.noise import (
    INTERLEAVED,
    SEQUENTIAL,
    common_factor,
    history_noise,
    mad_sigma,
    priors_for,
    with_drift,
)
from perfgate.synthetic import synthetic_document


@pytest.mark.parametrize(
    ("n1", "n2", "shift"),
    [(40, 40, 0.0), (40, 40, 0.03), (9, 31, 0.1), (120, 100, 0.005), (5, 6, 0.2)],
)
def test_mann_whitney_matches_scipy(n1: int, n2: int, shift: float) -> None:
    rng = np.random.default_rng(n1 * 100 + n2)
    base = np.round(rng.lognormal(0, 0.05, n1), 3)  # rounding makes ties
    head = np.round(rng.lognormal(shift, 0.05, n2), 3)
    method = "exact" if min(n1, n2) < 8 else "asymptotic"
    expected = scipy_stats.mannwhitneyu(head, base, alternative="two-sided", method=method).pvalue
    assert mann_whitney_p(base, head) == pytest.approx(expected, rel=1e-9)


def test_constant_samples_give_p_one() -> None:
    assert mann_whitney_p(np.ones(20), np.ones(20)) == 1.0


def test_min_p_matches_exact_test() -> None:
    base, head = np.arange(5.0), np.arange(5.0) + 100
    exact = scipy_stats.mannwhitneyu(head, base, alternative="two-sided", method="exact").pvalue
    assert min_two_sided_p(5, 5) == pytest.approx(exact)
    assert min_two_sided_p(3, 3) > 0.05 > min_two_sided_p(4, 5)


def test_median_halfwidth_grows_with_bimodality() -> None:
    rng = np.random.default_rng(1)
    tight = rng.lognormal(0, 0.01, 40)
    bimodal = np.concatenate([rng.lognormal(0, 0.01, 20), rng.lognormal(0.5, 0.01, 20)])
    assert median_halfwidth(tight) < 0.01
    assert median_halfwidth(bimodal) > 0.15


def test_exact_and_single_values() -> None:
    assert decide_exact(100, 100, direction="lower")[0] == "unchanged"
    assert decide_exact(100, 101, direction="lower")[0] == "regression"
    assert decide_exact(100, 99, direction="lower")[0] == "improvement"
    assert (
        decide_single_value(1000, 1500, direction="lower", threshold=0.03, deterministic=True)[0]
        == "regression"
    )
    assert (
        decide_single_value(1000, 1500, direction="lower", threshold=0.03, deterministic=False)[0]
        == "inconclusive"
    )
    assert (
        decide_single_value(1000, 1010, direction="lower", threshold=0.03, deterministic=False)[0]
        == "unchanged"
    )


def test_attribution_orders_slowdowns_first() -> None:
    base = [
        Op(op="aten::mm", count=1, self_cpu_us=100.0),
        Op(op="aten::add", count=2, self_cpu_us=10.0),
        Op(op="aten::gone", count=1, self_cpu_us=5.0),
    ]
    head = [
        Op(op="aten::mm", count=1, self_cpu_us=101.0),
        Op(op="aten::add", count=2, self_cpu_us=10.0),
        Op(op="aten::copy_", count=1, self_cpu_us=21.5),
    ]
    deltas = attribute(base, head)
    assert [d.op for d in deltas] == ["aten::copy_", "aten::mm", "aten::gone"]
    assert (deltas[0].base_us, deltas[0].head_us, deltas[0].delta_us) == (0.0, 21.5, 21.5)
    assert (deltas[0].base_count, deltas[0].head_count) == (0, 1)


def test_attribution_prefers_device_time() -> None:
    base = [Op(op="k", count=1, self_cpu_us=5.0, self_device_us=10.0)]
    head = [Op(op="k", count=1, self_cpu_us=5.0, self_device_us=30.0)]
    assert attribute(base, head)[0].delta_us == 20.0


def test_common_factor_is_the_median_log_ratio() -> None:
    assert common_factor([0.01, 0.012, 0.008, 0.011, 0.3]) == pytest.approx(0.011)
    assert common_factor([0.01] * 3) == 0.0  # too few benchmarks to tell


def test_history_noise_removes_run_factor_and_flags_excursions() -> None:
    rng = np.random.default_rng(3)
    runs = []
    for i in range(12):
        run_factor = rng.normal(0, 0.05)  # large shared drift must not count as spread
        run = {(f"b{j}", "time"): math.exp(run_factor + rng.normal(0, 0.01)) for j in range(10)}
        if i == 7:
            run[("b3", "time")] *= 2.0
        runs.append(run)
    history = history_noise(runs)
    floors = history.floors
    assert floors[("b0", "time")].sigma < 0.02
    assert floors[("b3", "time")].excursion == pytest.approx(math.log(2), abs=0.05)
    assert floors[("b0", "time")].excursion is None
    assert history.common_sigma is not None and history.common_sigma > 0.02
    assert history_noise(runs[:4]).floors == {}
    # The t's tails: heavy by default (sequential runs), lighter for interleaved ones.
    assert floors[("b0", "time")].df == 2.0
    assert history_noise(runs, tail_df=INTERLEAVED.history_tail_df).floors[("b0", "time")].df == 4.0


def test_mad_sigma_of_normal() -> None:
    values = np.random.default_rng(0).normal(0, 2.0, 20000)
    assert mad_sigma(values) == pytest.approx(2.0, rel=0.03)


def _docs(seed: int, slowdown: dict[str, float] | None = None, **kw: Any) -> Any:
    return parse_document(
        synthetic_document(benchmarks=30, samples=40, seed=seed, slowdown=slowdown, **kw)
    )


def _rounds(seed: int, slowdown: dict[str, float] | None = None) -> list[Any]:
    """Three separate runs of one commit: the comparator pools them as rounds."""
    return [_docs(seed * 10 + i, slowdown) for i in range(3)]


def test_one_round_needs_a_large_change() -> None:
    base = _docs(1)
    key = base.benchmarks[4].key
    modest = compare_documents([base], [_docs(2, {key: 1.2})])
    assert modest.summary()["regression"] == 0  # one process a side: +20% could be noise
    large = compare_documents([base], [_docs(2, {key: 1.8})])
    found = [r for r in large.results if r.verdict == "regression"]
    assert [(r.key, r.metric) for r in found] == [(key, "time")]
    assert found[0].noise is not None and "default run-to-run noise" in found[0].noise


def _sampled(seed: int, sampling: str, slowdown: dict[str, float] | None = None) -> Any:
    document = synthetic_document(benchmarks=30, samples=40, seed=seed, slowdown=slowdown)
    document["environment"]["sampling"] = sampling
    return parse_document(document)


def test_interleaved_runs_get_the_priors_measured_for_them() -> None:
    assert priors_for(["interleaved", "interleaved"]) is INTERLEAVED
    assert priors_for(["interleaved", "sequential"]) is SEQUENTIAL
    assert priors_for(["interleaved", None]) is SEQUENTIAL  # a document from before the field
    key = _docs(1).benchmarks[4].key
    # One round a side, +25%: within what sequentially sampled processes move by, beyond what
    # interleaved ones do (docs/comparator.md has the measurements).
    verdicts = {}
    for sampling in ("interleaved", "sequential"):
        comparison = compare_documents(
            [_sampled(1, sampling)], [_sampled(2, sampling, {key: 1.25})]
        )
        verdicts[sampling] = next(
            r.verdict for r in comparison.results if r.key == key and r.metric == "time"
        )
        assert comparison.summary()["regression"] == (sampling == "interleaved")
    assert verdicts == {"interleaved": "regression", "sequential": "inconclusive"}


def test_three_rounds_find_a_25_percent_regression() -> None:
    base = _rounds(1)
    key = base[0].benchmarks[4].key
    comparison = compare_documents(base, _rounds(2, {key: 1.25}))
    found = [r for r in comparison.results if r.verdict == "regression"]
    assert [(r.key, r.metric) for r in found] == [(key, "time")]
    assert found[0].ratio == pytest.approx(1.25, rel=0.03)
    assert found[0].ci is not None and found[0].ci[0] > 1.03
    assert found[0].q_value is not None and found[0].q_value < 0.05
    assert found[0].noise is not None and found[0].noise.startswith("round-to-round")
    assert found[0].base is not None and found[0].base.rounds == 3


def _round_at(hour: int, slowdown: dict[str, float] | None = None) -> Any:
    """A run of one commit started at `hour` (seeded by the hour, so all differ)."""
    return parse_document(
        synthetic_document(
            benchmarks=30,
            samples=40,
            seed=hour,
            started_at=datetime(2026, 3, 1, tzinfo=timezone.utc) + timedelta(hours=hour),
            slowdown=slowdown,
        )
    )


def _timed_rounds(hours: list[int], slowdown: dict[str, float] | None = None) -> list[Any]:
    """Runs of one commit started at the given hours."""
    return [_round_at(hour, slowdown) for hour in hours]


def test_sides_alternated_needs_each_side_before_the_other() -> None:
    assert sides_alternated(_timed_rounds([0, 2, 4]), _timed_rounds([1, 3, 5]))
    assert sides_alternated(_timed_rounds([1, 2]), _timed_rounds([0, 3]))
    assert not sides_alternated(_timed_rounds([0, 1, 2]), _timed_rounds([3, 4, 5]))
    assert not sides_alternated(
        _timed_rounds([0]), _timed_rounds([1, 2])
    )  # one run a side: no rounds


def test_rounds_run_one_side_after_the_other_carry_drift() -> None:
    key = _timed_rounds([0])[0].benchmarks[4].key
    # +15%: beyond what alternating rounds leave open, within what drift between the sides'
    # jobs can explain when all of one side ran before the other.
    alternating = compare_documents(_timed_rounds([0, 2, 4]), _timed_rounds([1, 3, 5], {key: 1.15}))
    found = [r for r in alternating.results if r.verdict == "regression"]
    assert [(r.key, r.metric) for r in found] == [(key, "time")]
    assert found[0].noise is not None and found[0].noise.startswith("round-to-round spread (")

    sequential = compare_documents(_timed_rounds([0, 1, 2]), _timed_rounds([3, 4, 5], {key: 1.15}))
    result = next(r for r in sequential.results if r.key == key and r.metric == "time")
    assert result.verdict == "inconclusive"
    assert result.noise is not None and "drift between the sides' jobs" in result.noise


def test_one_outlier_round_is_not_a_regression_however_many_samples_it_has() -> None:
    key = _timed_rounds([0])[0].benchmarks[4].key
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    # A disturbed round: far off and, because its samples never settled, sampled 6× as long.
    disturbed = synthetic_document(
        benchmarks=30, samples=240, seed=99, started_at=start + timedelta(hours=5)
    )
    for bench in disturbed["benchmarks"]:
        if bench["key"] == key:
            bench["metrics"]["time"]["samples"] = [
                v * 1.4 for v in bench["metrics"]["time"]["samples"]
            ]
    head = [*_timed_rounds([1, 3]), parse_document(disturbed)]
    comparison = compare_documents(_timed_rounds([0, 2, 4]), head)
    result = next(r for r in comparison.results if r.key == key and r.metric == "time")
    assert result.verdict != "regression", result.reason
    assert result.ratio == pytest.approx(1.0, abs=0.02)  # the median of the round medians


def test_rounds_that_cross_sides_are_not_a_verdict() -> None:
    key = _timed_rounds([0])[0].benchmarks[4].key
    # A benchmark with two process modes, 30% apart: base drew the slow one twice, head never.
    base = [
        *_timed_rounds([0]),
        *_timed_rounds([2], {key: 1.3}),
        *_timed_rounds([4], {key: 1.3}),
    ]
    comparison = compare_documents(base, _timed_rounds([1, 3, 5]))
    result = next(r for r in comparison.results if r.key == key and r.metric == "time")
    assert result.ratio == pytest.approx(1 / 1.3, rel=0.03)
    assert result.verdict == "inconclusive"
    assert "rounds do not separate the sides" in result.reason
    assert crossing_round([np.ones(5), np.ones(5) * 2], [np.ones(5) * 2.1] * 2) == "base"
    assert crossing_round([np.ones(5)] * 2, [np.ones(5) * 1.1] * 2) is None
    assert crossing_round([np.ones(5)], [np.ones(5) * 3]) is None  # one round a side


def test_an_alternating_round_just_past_the_midpoint_does_not_cross() -> None:
    # +10% with one head round at +4.5%: nearer base than its own side, but not twice as near;
    # ordinary round noise on a real change, which the t-model of the rounds already covers.
    head = [np.full(5, 1.045), np.full(5, 1.10), np.full(5, 1.10)]
    assert crossing_round([np.ones(5)] * 3, head, nearer=CROSSING_NEARER) is None
    # Back-to-back rounds keep the strict rule: the stray round may be a shared excursion's tell.
    assert crossing_round([np.ones(5)] * 3, head) == "head"
    head[0] = np.full(5, 1.02)  # two thirds of the way back to base: it sits with base
    assert crossing_round([np.ones(5)] * 3, head, nearer=CROSSING_NEARER) == "head"


def _noisy_rounds(hours: list[int], speeds: list[float]) -> list[Any]:
    """Rounds whose benchmarks each move ±3% on their own and `speeds` times together."""
    keys = [b.key for b in _round_at(0).benchmarks]
    docs = []
    for hour, speed in zip(hours, speeds, strict=True):
        own = np.random.default_rng(1000 + hour).lognormal(0.0, 0.03, len(keys))
        docs.append(_round_at(hour, {k: speed * float(f) for k, f in zip(keys, own, strict=True)}))
    return docs


def test_each_rounds_own_speed_is_divided_out_before_the_medians() -> None:
    base = _noisy_rounds([0, 2, 4], [1.0, 1.0, 1.0])
    steady = compare_documents(base, _noisy_rounds([1, 3, 5], [1.0, 1.0, 1.0]))
    # The same head rounds, but the machine ran the second 8% and the third 4% slower: each
    # benchmark's median of three would now pick a different round by its own noise.
    shaken = compare_documents(base, _noisy_rounds([1, 3, 5], [1.0, 1.08, 1.04]))
    ratios = {(r.key, r.metric): r.ratio for r in steady.results if r.metric == "time"}
    for result in shaken.results:
        if result.metric == "time":
            assert result.ratio == pytest.approx(ratios[(result.key, "time")], rel=1e-9)


def test_throughput_takes_the_verdict_of_the_time_it_is_derived_from() -> None:
    def with_throughput(seed: int, slowdown: dict[str, float] | None = None) -> Any:
        data = synthetic_document(benchmarks=30, samples=40, seed=seed, slowdown=slowdown)
        for bench in data["benchmarks"]:
            times = bench["metrics"]["time"]["samples"]
            bench["metrics"]["throughput"] = {
                "unit": "item/s",
                "direction": "higher",
                "samples": [64 / t for t in times],
            }
        return parse_document(data)

    key = _docs(1).benchmarks[4].key
    comparison = compare_documents(
        [with_throughput(s) for s in (10, 11, 12)],
        [with_throughput(s, {key: 1.25}) for s in (20, 21, 22)],
    )
    by_metric = {r.metric: r for r in comparison.results if r.key == key}
    time, throughput = by_metric["time"], by_metric["throughput"]
    assert time.verdict == throughput.verdict == "regression"
    assert (throughput.ratio, throughput.ci, throughput.q_value) == (
        time.ratio,
        time.ci,
        time.q_value,
    )
    assert throughput.delta is not None and throughput.delta == pytest.approx(
        1 / 1.25 - 1, rel=0.05
    )
    assert throughput.reason.startswith("as time")
    for result in comparison.results:  # and everywhere else, the two agree
        if result.metric == "throughput":
            twin = next(r for r in comparison.results if r.key == result.key and r.metric == "time")
            assert result.verdict == twin.verdict


def test_with_drift_adds_a_variance_rounds_cannot_average_away() -> None:
    widened = with_drift(0.02, rounds_b=3, rounds_h=3, drift=0.03)
    spread = widened * math.sqrt(2 / 3)
    assert spread == pytest.approx(math.sqrt(0.02**2 * 2 / 3 + 2 * 0.03**2))
    assert with_drift(0.02, rounds_b=3, rounds_h=3, drift=0.0) == pytest.approx(0.02)


def test_identical_code_raises_no_alarm() -> None:
    comparison = compare_documents([_docs(1)], [_docs(2)])
    assert comparison.summary()["regression"] == 0
    assert comparison.summary()["improvement"] == 0


def test_global_slowdown_is_a_finding_of_its_own() -> None:
    base = _rounds(1)
    everything = {b.key: 1.3 for b in base[0].benchmarks}
    comparison = compare_documents(base, _rounds(2, everything))
    common = comparison.common_factor
    assert common is not None and common.verdict == "regression"
    assert common.ratio == pytest.approx(1.3, rel=0.02)
    assert comparison.has_regression()
    assert comparison.summary()["regression"] == 0  # each benchmark, relative to the shift
    assert any("slower together" in w for w in comparison.warnings)


def test_shared_drift_is_taken_out() -> None:
    base = _rounds(1)
    drift = {b.key: 1.04 for b in base[0].benchmarks}
    key = base[0].benchmarks[0].key
    drift[key] = 1.04 * 1.25
    comparison = compare_documents(base, _rounds(2, drift))
    regression = [r for r in comparison.results if r.verdict == "regression"]
    assert [r.key for r in regression] == [key]
    assert regression[0].ratio == pytest.approx(1.25, rel=0.03)
    assert comparison.common_factor is not None
    assert comparison.common_factor.ratio == pytest.approx(1.04, rel=0.01)


def test_exact_metrics_missing_new_and_errors() -> None:
    base_data = synthetic_document(benchmarks=6, samples=20, seed=1)
    head_data = synthetic_document(benchmarks=6, samples=20, seed=2)
    head_data["benchmarks"][0]["metrics"]["flops"]["value"] += 1
    head_data["benchmarks"][1].update(metrics={}, error="RuntimeError: CUDA OOM", profile=None)
    head_data["benchmarks"][2]["metrics"].pop("peak_memory")
    moved = head_data["benchmarks"].pop(3)
    moved["name"] = "renamed"
    moved["key"] = moved["key"].replace("kernel", "renamed")
    head_data["benchmarks"].append(moved)
    comparison = compare_documents([parse_document(base_data)], [parse_document(head_data)])
    by = {(r.key, r.metric): r for r in comparison.results}
    k = [b["key"] for b in base_data["benchmarks"]]
    assert by[(k[0], "flops")].verdict == "regression" and by[(k[0], "flops")].exact
    assert by[(k[1], "time")].verdict == "error"
    assert "head failed: RuntimeError: CUDA OOM" in by[(k[1], "time")].reason
    assert by[(k[2], "peak_memory")].verdict == "missing"
    assert by[(k[3], "time")].verdict == "missing"
    assert by[(moved["key"], "time")].verdict == "new"


def test_too_few_samples_is_inconclusive() -> None:
    base = parse_document(synthetic_document(benchmarks=1, samples=3, seed=1))
    head = parse_document(
        synthetic_document(
            benchmarks=1, samples=3, seed=2, slowdown={"kernel[n=64,variant=0]": 2.0}
        )
    )
    result = next(r for r in compare_documents([base], [head]).results if r.metric == "time")
    assert result.verdict == "inconclusive" and "too few samples" in result.reason


def test_comparison_is_deterministic() -> None:
    base, head = _docs(1), _docs(2)
    first = compare_documents([base], [head], settings=CompareSettings(seed=5))
    second = compare_documents([base], [head], settings=CompareSettings(seed=5))
    assert [r.ci for r in first.results] == [r.ci for r in second.results]


def test_environment_change_is_warned() -> None:
    base_data = synthetic_document(benchmarks=2, seed=1)
    head_data = synthetic_document(benchmarks=2, seed=2)
    head_data["environment"].update(fingerprint="other", torch="2.14.0")
    comparison = compare_documents([parse_document(base_data)], [parse_document(head_data)])
    assert any("torch: '2.13.0' -> '2.14.0'" in w for w in comparison.warnings)


def _spread_in(noise_text: str | None) -> float:
    assert noise_text is not None and "history of 8 base runs" in noise_text, noise_text
    return float(noise_text.split("(±")[1].split("%")[0]) / 100


def test_rounds_spread_wider_than_history_widen_its_noise_floor() -> None:
    history = [
        {
            (b.key, "time"): float(np.median(b.metrics["time"].samples or [1.0]))
            for b in run.benchmarks
        }
        for run in _timed_rounds(list(range(10, 18)))
    ]
    key = _timed_rounds([0])[0].benchmarks[4].key

    def spread(base: list[Any], head: list[Any]) -> float:
        comparison = compare_documents(base, head, history=history)
        return _spread_in(
            next(r for r in comparison.results if r.key == key and r.metric == "time").noise
        )

    quiet = spread(_timed_rounds([0, 2, 4]), _timed_rounds([1, 3, 5]))
    # Each benchmark's rounds now move ±3% on their own, which eight quiet runs never showed.
    noisy = spread(_noisy_rounds([0, 2, 4], [1.0] * 3), _noisy_rounds([1, 3, 5], [1.0] * 3))
    assert quiet < 0.01
    assert noisy > 2 * quiet
