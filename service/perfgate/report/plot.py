"""A benchmark's trend as a self-contained SVG (or an HTML page around it): no CDN, no libraries."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from perfgate.report.units import format_value

WIDTH, HEIGHT = 900, 360
LEFT, RIGHT, TOP, BOTTOM = 80, 20, 40, 50


@dataclass(frozen=True)
class PlotPoint:
    time: datetime
    commit: str
    median: float
    ci: tuple[float, float] | None
    change_point: bool


def render_svg(points: Sequence[PlotPoint], *, title: str, unit: str) -> str:
    """Median per run with its CI as a band, change points as dashed red lines."""
    if not points:
        raise ValueError("nothing to plot")
    lows = [p.ci[0] if p.ci else p.median for p in points]
    highs = [p.ci[1] if p.ci else p.median for p in points]
    y_min, y_max = min(lows), max(highs)
    if y_max == y_min:
        y_min, y_max = y_min * 0.95, y_max * 1.05 or 1.0
    pad = (y_max - y_min) * 0.08
    y_min, y_max = y_min - pad, y_max + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (len(points) - 1) if len(points) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - y_min) / (y_max - y_min))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="15">{html.escape(title)}</text>',
    ]
    for k in range(5):
        value = y_min + (y_max - y_min) * k / 4
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" '
            f'y2="{y(value):.1f}" stroke="#eee"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">'
            f"{html.escape(format_value(value, unit))}</text>"
        )
    band = [f"{x(i):.1f},{y(h):.1f}" for i, h in enumerate(highs)]
    band += [f"{x(i):.1f},{y(lo):.1f}" for i, lo in reversed(list(enumerate(lows)))]
    parts.append(
        f'<polygon class="ci" points="{" ".join(band)}" fill="#9ecae1" fill-opacity="0.5"/>'
    )
    line = " ".join(f"{x(i):.1f},{y(p.median):.1f}" for i, p in enumerate(points))
    parts.append(
        f'<polyline class="median" points="{line}" fill="none" stroke="#08519c" '
        'stroke-width="1.5"/>'
    )
    for i, p in enumerate(points):
        label = f"{p.commit[:7]} {p.time:%Y-%m-%d %H:%M} {format_value(p.median, unit)}"
        parts.append(
            f'<circle class="point" cx="{x(i):.1f}" cy="{y(p.median):.1f}" r="3" '
            f'fill="#08519c"><title>{html.escape(label)}</title></circle>'
        )
        if p.change_point:
            parts.append(
                f'<line class="change-point" x1="{x(i):.1f}" x2="{x(i):.1f}" '
                f'y1="{TOP}" y2="{HEIGHT - BOTTOM}" stroke="#d62728" '
                'stroke-dasharray="4 3"/>'
            )
    first, last = points[0].time, points[-1].time
    parts.append(f'<text x="{LEFT}" y="{HEIGHT - 20}">{first:%Y-%m-%d}</text>')
    parts.append(
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 20}" text-anchor="end">{last:%Y-%m-%d}</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def render_html(points: Sequence[PlotPoint], *, title: str, unit: str) -> str:
    """A standalone page: the SVG inline, so it opens offline and hovers show each run."""
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n"
        + render_svg(points, title=title, unit=unit)
        + "</body></html>\n"
    )
