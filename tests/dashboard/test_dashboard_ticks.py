"""The trend chart's value axis: round 1-2-5 steps in the displayed unit, never a repeated label."""

from __future__ import annotations

import math

import pytest

from perfgate.api.dashboard.ticks import axis_ticks, display_scale, nice_step

MIB = 1024.0**2


def is_round(step: float) -> bool:
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    return any(math.isclose(mantissa, m, rel_tol=1e-9) for m in (1.0, 2.0, 5.0))


@pytest.mark.parametrize(
    ("span", "step"), [(1.0, 0.2), (0.7, 0.2), (3.0, 1.0), (10.0, 2.0), (24.0, 5.0), (0.05, 0.01)]
)
def test_nice_step_is_the_smallest_round_step_for_five_ticks(span: float, step: float) -> None:
    assert math.isclose(nice_step(span), step)


def test_a_flat_series_gets_distinct_labels() -> None:
    # 11.6 ms on every run: toPrecision(3) labelled five ticks "11.6 ms".
    axis = axis_ticks(0.0116, 0.0116, "s")
    assert axis.unit == "ms"
    assert len(set(axis.labels)) == len(axis.labels) >= 3
    assert is_round(axis.step)
    assert axis.low <= 0.0116 <= axis.high


def test_memory_ticks_are_round_in_mib() -> None:
    # Ticks of 10 MB in bytes read 9.54 / 19.1 / 28.6 MiB.
    axis = axis_ticks(3 * MIB, 29 * MIB, "B")
    assert axis.unit == "MiB"
    assert axis.labels == ["0 MiB", "10 MiB", "20 MiB", "30 MiB"]
    assert [t / MIB for t in axis.ticks] == [0, 10, 20, 30]


@pytest.mark.parametrize(
    ("low", "high", "unit"),
    [
        (0.0114, 0.0119, "s"),
        (9.9e-5, 1.31e-4, "s"),
        (1.0, 1.0000001, "s"),
        (4096.0, 12288.0, "B"),
        (0.0, 0.0, "B"),
        (2.4e8, 2.6e9, "flop"),
        (-3.0, 7.0, ""),
        (123456.0, 123457.0, "ops"),
    ],
)
def test_ticks_are_round_distinct_and_cover_the_range(low: float, high: float, unit: str) -> None:
    axis = axis_ticks(low, high, unit)
    assert is_round(axis.step), axis
    assert len(set(axis.labels)) == len(axis.labels), axis.labels
    assert 2 <= len(axis.ticks) <= 12, axis
    assert axis.low <= low and axis.high >= high
    assert axis.ticks == sorted(axis.ticks)
    assert not any(label.startswith("-0 ") or label == "-0" for label in axis.labels)


def test_display_scale_follows_the_magnitude() -> None:
    assert display_scale("s", 2.5) == ("s", 1.0)
    assert display_scale("s", 3e-7) == ("ns", 1e-9)
    assert display_scale("B", 3 * 1024.0**3) == ("GiB", 1024.0**3)
    assert display_scale("flop", 5e9) == ("Gflop", 1e9)


def test_non_finite_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        axis_ticks(0.0, math.inf, "s")
