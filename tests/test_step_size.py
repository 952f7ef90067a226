"""The size of a step between two segments of a history: level ratio and seeded bootstrap CI."""

from __future__ import annotations

import numpy as np
import pytest

from perfgate.stats.step import step_size


def test_a_planted_step_is_measured_with_a_ci_that_covers_it() -> None:
    rng = np.random.default_rng(11)
    before = 1e-3 * rng.lognormal(0.0, 0.02, 30)
    after = 1.1e-3 * rng.lognormal(0.0, 0.02, 30)
    step = step_size(before.tolist(), after.tolist())
    # Levels are medians on a log scale, as the detector's (with 30 runs: the geometric mean of
    # the middle two).
    level = np.exp(np.median(np.log(after)) - np.median(np.log(before)))
    assert step.ratio == pytest.approx(float(level), rel=1e-12)
    assert step.ci is not None
    low, high = step.ci
    assert low < 1.1 < high and low < step.ratio < high
    assert 0.005 < high - low < 0.04  # about 4 standard errors of a 2% noise over 30 runs
    assert (step.runs_before, step.runs_after) == (30, 30)
    assert step_size(before.tolist(), after.tolist()) == step  # seeded: the same every time


def test_the_ci_covers_a_planted_step_about_95_times_in_100() -> None:
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(100):
        before = rng.lognormal(0.0, 0.05, 20)
        after = 1.08 * rng.lognormal(0.0, 0.05, 20)
        ci = step_size(before.tolist(), after.tolist(), resamples=500).ci
        assert ci is not None
        covered += ci[0] <= 1.08 <= ci[1]
    assert 88 <= covered <= 100


def test_short_segments_have_no_ci_and_bad_values_are_refused() -> None:
    assert step_size([1.0, 1.1], [2.0, 2.1, 2.2]).ci is None
    assert step_size([1.0, 1.0, 1.0], [2.0, 2.0, 2.0]).ci == (2.0, 2.0)
    with pytest.raises(ValueError, match="before the step has no runs"):
        step_size([], [1.0])
    with pytest.raises(ValueError, match="after the step holds a value that is not positive"):
        step_size([1.0], [0.0])
