"""Round value-axis ticks for the trend chart: 1-2-5 steps in the unit the labels show.

A chart labelled by `toPrecision(3)` of evenly spaced raw values repeats itself on a flat series
("11.6 ms" five times) and reads badly in binary units (9.54 / 19.1 / 28.6 MiB). Here the unit is
chosen first (ms, MiB, ...), the step is 1, 2 or 5 times a power of ten in that unit, and labels
carry exactly the decimals the step needs, so no two labels are alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TIME_SCALES = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
BYTE_SCALES = (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("B", 1.0))
# A flat series is shown over at least this share of its level, so noise does not fill the chart.
MIN_RELATIVE_SPAN = 0.02
TARGET_TICKS = 5


@dataclass(frozen=True)
class Axis:
    """A value axis: its range and ticks in the metric's own unit, labels in `unit`."""

    low: float
    high: float
    ticks: list[float]
    labels: list[str]
    unit: str
    step: float  # in `unit`


def display_scale(unit: str, magnitude: float) -> tuple[str, float]:
    """The unit labels show for values up to `magnitude` (raw units), and its size in raw units."""
    if unit == "s":
        scales: tuple[tuple[str, float], ...] = TIME_SCALES
    elif unit == "B":
        scales = BYTE_SCALES
    else:
        scales = ((f"G{unit}", 1e9), (f"M{unit}", 1e6), (f"k{unit}", 1e3), (unit, 1.0))
    for name, scale in scales:
        if magnitude >= scale:
            return name, scale
    return scales[-1]


def nice_step(span: float, target: int = TARGET_TICKS) -> float:
    """The smallest 1, 2 or 5 × 10^k at least `span / target` (span > 0)."""
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    for mantissa in (1.0, 2.0, 5.0, 10.0):
        if mantissa * power >= raw * (1 - 1e-9):
            return mantissa * power
    return 10.0 * power


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


def axis_ticks(low: float, high: float, unit: str, *, target: int = TARGET_TICKS) -> Axis:
    """Ticks that cover [low, high] (raw units) with a round step in the displayed unit."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"axis bounds must be finite, not {low!r} and {high!r}")
    low, high = min(low, high), max(low, high)
    middle = (low + high) / 2
    floor = MIN_RELATIVE_SPAN * abs(middle) or 1.0
    if high - low < floor:
        low, high = middle - floor / 2, middle + floor / 2
    name, scale = display_scale(unit, max(abs(low), abs(high)))
    lo, hi = low / scale, high / scale
    step = nice_step(hi - lo, target)
    first = math.floor(lo / step + 1e-9)
    last = math.ceil(hi / step - 1e-9)
    decimals = _decimals(step)
    shown = [k * step for k in range(first, last + 1)]
    suffix = f" {name}" if name else ""
    # `+ 0.0` turns -0.0 into 0.0, so the axis never reads "-0 ms".
    labels = [f"{round(v, decimals) + 0.0:.{decimals}f}{suffix}" for v in shown]
    return Axis(
        low=shown[0] * scale,
        high=shown[-1] * scale,
        ticks=[v * scale for v in shown],
        labels=labels,
        unit=name,
        step=step,
    )
