"""The comparator: reference values from scipy, and simulated data with known answers."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from perfgate.results import Op, parse_document
from perfgate.stats.attribution import attribute
from perfgate.stats.compare_documents import compare_documents, sides_alternated
from perfgate.stats.two_sample import (
    CompareSettings,
    decide_exact,
    decide_single_value,
    mann_whitney_p,
    median_halfwidth,
    min_two_sided_p,
)
from synthetic import synthetic_document


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
    tight_width, bimodal_width = median_halfwidth(tight), median_halfwidth(bimodal)
    assert tight_width is not None and tight_width < 0.01
    assert bimodal_width is not None and bimodal_width > 0.15
    # Five values have no order-statistic interval of their median at all.
    assert median_halfwidth(tight[:5]) is None


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


def _docs(seed: int, slowdown: dict[str, float] | None = None, **kw: Any) -> Any:
    return parse_document(
        synthetic_document(benchmarks=30, samples=40, seed=seed, slowdown=slowdown, **kw)
    )


def _rounds(seed: int, slowdown: dict[str, float] | None = None) -> list[Any]:
    """Three separate runs of one commit: the comparator pools them as rounds."""
    return [_docs(seed * 10 + i, slowdown) for i in range(3)]


def test_three_rounds_find_a_25_percent_regression() -> None:
    base = _rounds(1)
    key = base[0].benchmarks[4].key
    comparison = compare_documents(base, _rounds(2, {key: 1.25}))
    found = [r for r in comparison.results if r.verdict == "regression"]
    assert [(r.key, r.metric) for r in found] == [(key, "time")]
    assert found[0].ratio == pytest.approx(1.25, rel=0.03)
    assert found[0].ci is not None and found[0].ci[0] > 1.03
    assert found[0].q_value is not None and found[0].q_value < 0.05
    assert found[0].noise is not None and "(rounds)" in found[0].noise
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
    # Huber's location: the far-off round counts as if it sat 1.5 spreads from the others.
    assert result.ratio == pytest.approx(1.0, abs=0.05)


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
    # The same head rounds, but the machine ran the second 8% and the third 4% slower: without
    # the round factors each benchmark's level would pick a different round by its own noise.
    # With them, every benchmark moves by the same machine factor (the rounds' mean; it is the
    # machine's, so nothing subtracts it: it widens every CI instead).
    shaken = compare_documents(base, _noisy_rounds([1, 3, 5], [1.0, 1.08, 1.04]))
    ratios = {r.key: r.ratio for r in steady.results if r.metric == "time"}
    moved = [r.ratio / ratios[r.key] for r in shaken.results if r.metric == "time" and r.ratio]
    assert max(moved) == pytest.approx(min(moved), rel=1e-9)
    assert moved[0] == pytest.approx((1.08 * 1.04) ** (1 / 3), rel=1e-6)


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


def test_identical_code_raises_no_alarm() -> None:
    comparison = compare_documents([_docs(1)], [_docs(2)])
    assert comparison.summary()["regression"] == 0
    assert comparison.summary()["improvement"] == 0


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
