"""Human-readable numbers: times, bytes, counts and rates with sensible units."""

from __future__ import annotations

import math

_TIME = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_BYTES = (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("B", 1.0))
_SI = (("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))


def _scaled(value: float, scales: tuple[tuple[str, float], ...], unit_after: str = "") -> str:
    for suffix, scale in scales:
        if abs(value) >= scale or scale == scales[-1][1]:
            number = value / scale
            # Three significant digits: enough to see a 1% change, few enough to read.
            text = f"{number:,.0f}" if abs(number) >= 1000 else f"{number:.3g}"
            return f"{text} {suffix}{unit_after}".rstrip()
    return f"{value:g}"  # pragma: no cover - the last scale always matches


def format_value(value: float | None, unit: str) -> str:
    """`0.000201, "s"` -> `201.0 µs`; `262144, "B"` -> `256.0 KiB`; counts keep every digit."""
    if value is None or math.isnan(value):
        return "—"
    if unit == "s":
        return _scaled(value, _TIME)
    if unit == "B":
        return _scaled(value, _BYTES)
    if unit == "flop":
        return _scaled(value, _SI, "FLOP")
    if unit.endswith("/s"):
        # "3.67M tokens/s": the prefix belongs to the count, not to the unit's name.
        number, _, prefix = _scaled(value, _SI).partition(" ")
        return f"{number}{prefix} {unit}"
    if float(value).is_integer():
        return f"{int(value):,}" + (f" {unit}" if unit and unit != "count" else "")
    return f"{value:.4g}" + (f" {unit}" if unit else "")


def format_bytes_change(delta: int) -> str:
    """A signed byte difference: 1572864 -> `+1.5 MiB`, -512 -> `-512 B`, 0 -> `0 B`."""
    return ("+" if delta > 0 else "") + format_value(delta, "B")


def format_change(ratio: float | None) -> str:
    """A ratio as a signed percentage: 1.119 -> +11.9%."""
    if ratio is None or math.isnan(ratio) or math.isinf(ratio):
        return "—"
    return f"{ratio - 1:+.1%}"


def format_ci(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return "—"
    return f"{ci[0] - 1:+.1%} … {ci[1] - 1:+.1%}"
