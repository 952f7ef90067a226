"""Trend pictures that GitHub renders inline (a Unicode sparkline, a mermaid xychart), and the
link to a benchmark's trend page on the dashboard."""

from __future__ import annotations

import math
from collections.abc import Sequence
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from perfgate.report.units import format_value
from perfgate.report.untrusted import one_line
from perfgate.stats.model import MetricResult

BARS = "▁▂▃▄▅▆▇█"
# Fewer earlier runs than this make a line that says nothing.
MIN_HISTORY = 2

_TIME_SCALES = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_BYTE_SCALES = (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("B", 1.0))


def series(result: MetricResult) -> list[float] | None:
    """Earlier base-branch medians, then base, then head; None without enough history."""
    if len(result.history) < MIN_HISTORY or result.base is None or result.head is None:
        return None
    values = [*result.history, result.base.median, result.head.median]
    if not all(math.isfinite(v) for v in values):
        return None
    return values


def sparkline(values: Sequence[float]) -> str:
    """`▂▃▂▂▃▂▂→█`: the base branch's medians, an arrow, then head (same scale)."""
    low, high = min(values), max(values)
    span = high - low

    def bar(value: float) -> str:
        if span <= abs(high) * 1e-9:
            return BARS[(len(BARS) - 1) // 2]
        return BARS[min(len(BARS) - 1, int((value - low) / span * len(BARS)))]

    return "".join(bar(v) for v in values[:-1]) + "→" + bar(values[-1])


def result_sparkline(result: MetricResult) -> str:
    values = series(result)
    return sparkline(values) if values else ""


def _axis_unit(values: Sequence[float], unit: str) -> tuple[str, float]:
    """The display unit for the whole chart (one scale, so points stay comparable)."""
    typical = sorted(abs(v) for v in values)[len(values) // 2]
    scales = _TIME_SCALES if unit == "s" else _BYTE_SCALES if unit == "B" else ((unit, 1.0),)
    for name, scale in scales:
        if typical >= scale:
            return name, scale
    return scales[-1]


def _quoted(text: str) -> str:
    # Mermaid strings cannot hold a double quote; brackets and commas are fine inside quotes.
    # One line: a key with a newline and ``` would otherwise close the fence around the chart.
    return '"' + one_line(text).replace('"', "'") + '"'


def mermaid_chart(result: MetricResult) -> str | None:
    """A mermaid `xychart-beta` of the base branch's trend with head as the last point."""
    values = series(result)
    if values is None:
        return None
    unit_name, scale = _axis_unit(values, result.unit)
    earlier = len(values) - 2
    labels = [f"-{earlier - i}" for i in range(earlier)] + ["base", "head"]
    points = ", ".join(f"{v / scale:.4g}" for v in values)
    low, high = min(values) / scale, max(values) / scale
    pad = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
    title = f"{result.key} {result.metric}: head {format_value(values[-1], result.unit)}"
    return "\n".join(
        [
            "```mermaid",
            "xychart-beta",
            f"    title {_quoted(title)}",
            f"    x-axis [{', '.join(_quoted(label) for label in labels)}]",
            f"    y-axis {_quoted(unit_name)} {max(low - pad, 0.0):.4g} --> {high + pad:.4g}",
            f"    line [{points}]",
            "```",
        ]
    )


def trend_page_url(
    dashboard_url: str | None, *, key: str, metric: str, branch: str | None
) -> str | None:
    """The dashboard's trend page of one benchmark metric, next to the comparison page.

    `perfgate comment --server S` links the comparison as `S/compare?project=P&base=&head=`; the
    same server draws a benchmark's trend at `S/p/P/trend?key=&metric=&branch=`. None when there
    is no dashboard link or it has another shape. Every part is percent-encoded, so a key can
    neither end the markdown link nor add a parameter.
    """
    if not dashboard_url:
        return None
    parts = urlsplit(dashboard_url)
    project = parse_qs(parts.query).get("project", [""])[0]
    if not parts.path.endswith("/compare") or not project or not parts.netloc:
        return None
    root = parts.path.removesuffix("/compare")
    query = {"key": key, "metric": metric} | ({"branch": branch} if branch else {})
    path = f"{root}/p/{quote(project, safe='/')}/trend"
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))
