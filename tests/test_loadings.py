"""Each benchmark's loading on the machine's speed: measured, shrunk, and learnt from history."""

from __future__ import annotations

import numpy as np
import pytest

from perfgate.stats import noise
from perfgate.stats.loadings import (
    Slope,
    huber_slope,
    measured_slopes,
    shrunk_loadings,
)


def measured_slope(values: np.ndarray, movement: np.ndarray) -> Slope | None:
    """One series' slope, fitted alone."""
    return measured_slopes({0: (values, movement)}).get(0)


def test_the_huber_slope_recovers_a_loading_past_an_outlying_run() -> None:
    rng = np.random.default_rng(1)
    movement = rng.normal(0.0, 0.05, 40)
    values = 0.3 * movement + rng.normal(0.0, 0.005, 40)
    values[7] += 0.5  # one process that landed somewhere else entirely
    assert huber_slope(values, movement) == pytest.approx(0.3, abs=0.05)
    assert huber_slope(-movement, movement) == 0.0  # nothing gets faster on a busy machine


def test_a_slope_carries_its_sampling_variance() -> None:
    rng = np.random.default_rng(2)
    movement = rng.normal(0.0, 0.02, 24)
    fits = [
        measured_slope(1.5 * movement + rng.normal(0.0, 0.01, 24), movement) for _ in range(300)
    ]
    values = np.asarray([f.value for f in fits if f is not None])
    claimed = float(np.median([f.var for f in fits if f is not None]))
    assert float(np.mean(values)) == pytest.approx(1.5, abs=0.06)
    # The jackknife's variance is the slopes' own, erring on the wide side (it is known to for
    # a median-centred, reweighted fit): a loading is never kept on less evidence than it has.
    assert float(np.var(values)) < claimed < 2.0 * float(np.var(values))
    assert measured_slope(movement, np.zeros(24)) is None


def test_series_fitted_together_get_each_its_own_slope_and_variance() -> None:
    rng = np.random.default_rng(3)
    series = {}
    for k in range(40):
        n = int(rng.integers(3, 30))  # lengths differ, and some repeat
        movement = rng.normal(0.0, 0.03, n)
        series[k] = (rng.uniform(0.0, 2.0) * movement + 0.01 * rng.standard_t(3, n), movement)
    series[40] = (rng.normal(0.0, 0.01, 12), np.zeros(12))  # the factors did not move
    together = measured_slopes(series)
    assert set(together) == set(range(40))
    for key, (values, movement) in series.items():
        alone = measured_slope(values, movement)
        if alone is None:
            continue
        # Rows of one reweighting stop together, once all have settled: within its tolerance.
        assert together[key].value == pytest.approx(alone.value, abs=1e-8)
        assert together[key].var == pytest.approx(alone.var, rel=1e-6)


def test_loadings_keep_what_the_runs_tell_apart_from_one_and_no_more() -> None:
    # Truly different loadings, measured precisely, among typical ones: each keeps its own.
    typical = {k: Slope(1.0, 0.001) for k in "cdefg"}
    spread = {"a": Slope(0.1, 0.001), "b": Slope(1.9, 0.001), **typical}
    kept = shrunk_loadings(spread)
    assert kept["a"] == pytest.approx(0.1, abs=0.01)
    assert kept["b"] == pytest.approx(1.9, abs=0.01)
    # Relative to the typical slope: every slope attenuated alike gives the same loadings.
    halved = shrunk_loadings({k: Slope(s.value / 2, s.var / 4) for k, s in spread.items()})
    assert halved == pytest.approx(kept)
    # Slopes that differ by no more than their sampling error: every loading is 1.
    chance = {
        k: Slope(1.0 + d, 0.09)
        for k, d in zip("abcdef", (-0.3, 0.2, 0.1, -0.1, 0.3, 0.0), strict=True)
    }
    assert set(shrunk_loadings(chance).values()) == {1.0}
    # A noisy estimate among precise ones moves towards 1 by more than a precise one does.
    mixed = shrunk_loadings({**spread, "h": Slope(0.1, 0.5)})
    assert mixed["a"] < 0.2 < mixed["h"] < 1.0
    # Slopes on factors that are mostly the benchmarks' own noise: nothing is learnt.
    unmeasured = {
        k: Slope(v, 0.3) for k, v in zip("abcdef", (0.9, -0.4, 0.2, 1.6, -0.8, 0.1), strict=True)
    }
    assert set(shrunk_loadings(unmeasured).values()) == {1.0}


def test_history_learns_each_benchmarks_loading_and_leaves_it_out_of_its_noise() -> None:
    rng = np.random.default_rng(3)
    runs, m = 24, 13
    follows = np.ones(m)
    follows[0], follows[1] = 0.1, 2.0
    machine = rng.normal(0.0, 0.05, runs)
    logs = rng.normal(0.0, 0.01, (runs, m)) + np.outer(machine, follows)
    history = [
        noise.PastRun(
            commit=f"{i:040x}",
            medians={(f"b{j}", "time"): float(np.exp(logs[i, j])) for j in range(m)},
        )
        for i in range(runs)
    ]
    past = noise.history_noise(history)
    assert past.loadings[("b0", "time")] == pytest.approx(0.1, abs=0.1)
    assert past.loadings[("b1", "time")] == pytest.approx(2.0, abs=0.15)
    assert past.loadings[("b5", "time")] == pytest.approx(1.0, abs=0.1)
    # With the whole factor taken out, b0 would keep 90% of the machine's 5% as its own noise.
    for j in (0, 1, 5):
        assert past.metrics[(f"b{j}", "time")].sigma < 0.02, j
