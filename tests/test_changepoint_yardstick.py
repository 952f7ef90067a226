"""The change-point yardstick's machinery: series, injected steps and scores with known answers."""

from __future__ import annotations

import numpy as np
import pytest

import changepoint_yardstick as yardstick
from changepoint_yardstick import Case, History
from recordings import find


def flat_cases(count: int, n: int = 60) -> list[Case]:
    rng = np.random.default_rng(3)
    return [Case(f"s{i}@0", np.exp(rng.normal(0.0, 0.01, n)), None, 0.0) for i in range(count)]


def test_inject_multiplies_exactly_the_tail() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    out = yardstick.inject(values, 2, 1.5)
    assert out.tolist() == [1.0, 2.0, 4.5, 6.0, 7.5]
    assert values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # the A/A series is left as it was


@pytest.mark.parametrize("at", [0, 5, -1])
def test_inject_refuses_a_step_outside_the_series(at: int) -> None:
    with pytest.raises(ValueError, match="inside the series"):
        yardstick.inject(np.ones(5), at, 1.1)


def test_stepped_places_one_step_of_each_size_at_recorded_indices() -> None:
    aa = flat_cases(3)
    cases = yardstick.stepped(aa, sizes=(0.05, 0.15), placements=4, seed=1, edge=10)
    assert len(cases) == 3 * 2 * 4
    for case in cases:
        assert case.step_at is not None and 10 <= case.step_at <= 50
        base = next(a for a in aa if case.name.startswith(a.name))
        ratio = case.values / base.values
        # Exactly the tail from the recorded index moved, by 1 + size or 1 - size.
        np.testing.assert_allclose(ratio[: case.step_at], 1.0)
        assert ratio[case.step_at] == pytest.approx(ratio[-1])
        assert abs(ratio[-1] - 1.0) == pytest.approx(case.size)
    assert {c.size for c in cases} == {0.05, 0.15}
    again = yardstick.stepped(aa, sizes=(0.05, 0.15), placements=4, seed=1, edge=10)
    assert [c.step_at for c in again] == [c.step_at for c in cases]
    other = yardstick.stepped(aa, sizes=(0.05, 0.15), placements=4, seed=2, edge=10)
    assert [c.step_at for c in other] != [c.step_at for c in cases]


def test_f1_against_the_injected_index_uses_the_margin() -> None:
    case = Case("c", np.ones(100), 40, 0.08)
    assert yardstick.f1_of(case, [40]) == 1.0
    assert yardstick.f1_of(case, [45]) == 1.0  # within the margin of 5
    assert yardstick.f1_of(case, [46]) == pytest.approx(0.5)  # precision 1/2, recall 1/2
    assert yardstick.f1_of(case, []) == pytest.approx(2 / 3)  # precision 1, recall 1/2
    assert yardstick.f1_of(case, [40, 80]) == pytest.approx(0.8)  # precision 2/3, recall 1
    aa = Case("a", np.ones(100), None, 0.0)
    assert yardstick.f1_of(aa, []) == 1.0


def test_evaluate_scores_known_detectors() -> None:
    aa = flat_cases(4)
    steps = yardstick.stepped(aa, sizes=(0.05, 0.15), placements=2, seed=5, edge=10)

    def oracle(z: np.ndarray, _case: Case) -> list[int]:
        # Finds exactly the injected step, and nothing on the A/A series.
        for case in steps:
            if case.step_at is not None and np.array_equal(yardstick.prepared(case.values), z):
                return [case.step_at]
        return []

    perfect = yardstick.evaluate(oracle, aa, steps)
    assert perfect.f1 == {0.05: 1.0, 0.15: 1.0} and perfect.overall == 1.0
    assert perfect.false_by_series == (0, 0, 0, 0)
    nothing = yardstick.evaluate(yardstick.zero, aa, steps)
    assert nothing.overall == pytest.approx(2 / 3) and nothing.false_points == 0
    always = yardstick.evaluate(lambda z, case: [10, 30], aa, steps)
    assert always.false_points == 8 and always.false_per_series == 2.0


def test_prepared_is_the_z_scored_log() -> None:
    values = np.array([1.0, 2.0, 4.0, 8.0])
    z = yardstick.prepared(values)
    assert z.mean() == pytest.approx(0.0)
    assert z.std(ddof=1) == pytest.approx(1.0)
    np.testing.assert_allclose(np.diff(z), np.diff(z)[0])  # equal ratios, equal log steps


@pytest.mark.parametrize("method", sorted(set(yardstick.METHODS) - {"zero"}))
def test_every_method_finds_a_clear_step(method: str) -> None:
    rng = np.random.default_rng(8)
    values = yardstick.inject(np.exp(rng.normal(0.0, 0.01, 80)), 30, 1.15)
    case = Case("c", values, 30, 0.15, np.log(np.exp(rng.normal(0.0, 0.01, 80))), ())
    assert yardstick.METHODS[method](yardstick.prepared(values), case) == [30]


def test_normalise_divides_each_dataset_by_its_median() -> None:
    values = np.array([2.0, 4.0, 6.0, 10.0, 30.0])
    out = yardstick.normalise(values, ["a", "a", "a", "b", "b"])
    np.testing.assert_allclose(out, [0.5, 1.0, 1.5, 0.5, 1.5])


def test_windows_cut_each_history_at_the_offsets() -> None:
    h = History("bench", np.arange(1.0, 11.0), ("a",) * 10)
    cases = yardstick.windows([h], length=4, offsets=(0, 6))
    assert [c.name for c in cases] == ["bench@0", "bench@6"]
    assert cases[1].values.tolist() == [7.0, 8.0, 9.0, 10.0]
    assert all(c.step_at is None for c in cases)
    with pytest.raises(SystemExit, match="too few"):
        yardstick.windows([h], length=4, offsets=(7,))


def test_histories_from_recordings_are_in_time_order_and_normalised() -> None:
    sets = [find("rounds3"), find("threads1")]
    items = yardstick.histories(sets)
    jobs = len(sets[0].job_names()) + len(sets[1].job_names())
    assert len(items) == 13
    for h in items:
        assert h.values.size == len(h.datasets) == jobs
        for name in ("rounds3", "threads1"):
            part = h.values[np.asarray(h.datasets) == name]
            assert float(np.median(part)) == pytest.approx(1.0)
    # rounds3 was recorded before threads1 (its jobs' started_at), so its points come first.
    assert items[0].datasets[:7] == ("rounds3",) * 7


def test_job_levels_count_benchmarks_that_move_together() -> None:
    datasets = ("a",) * 4
    items = [
        History("x", np.array([1.0, 1.2, 0.9, 1.0]), datasets),
        History("y", np.array([1.0, 1.1, 0.8, 1.04]), datasets),
        History("z", np.array([1.0, 1.3, 1.0, 0.97]), datasets),
    ]
    levels = yardstick.job_levels(items, 1, 3)
    assert [lv.index for lv in levels] == [1, 2, 3]
    assert [(lv.above, lv.below) for lv in levels] == [(3, 0), (0, 2), (0, 0)]
    assert levels[0].median == pytest.approx(1.2) and levels[1].median == pytest.approx(0.9)
    with pytest.raises(SystemExit, match="not within"):
        yardstick.job_levels(items, 2, 4)
