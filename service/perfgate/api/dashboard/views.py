"""What the pages show, as HTML-ready data: the PR comment as HTML, sparklines, page paths.

A comparison page shows exactly the PR comment (`report/markdown.py`), converted to HTML here:
the same headline, tables and warnings, with nothing left out for GitHub's size limit. The
markdown is rendered with raw HTML disabled, so names in it are always escaped; the few HTML
lines the comment itself writes (`<details>`, `<sub>`) are recognised line by line instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlencode

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from perfgate.api.dashboard.decorate import decorate
from perfgate.report.markdown import render_markdown
from perfgate.report.trend import series
from perfgate.stats.model import Comparison

_DETAILS_OPEN = re.compile(r"^<details><summary>(.*)</summary>$")
_SUB = re.compile(r"^<sub>(.*)</sub>$")
_ALIGN_CLASS = {"text-align:right": "num", "text-align:center": "center"}
# No size limit on a page: the whole comparison is shown.
_NO_LIMIT = 1 << 40


def _fence(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    # GitHub draws the comment's mermaid charts; here the dashboard's own chart is one link away.
    if tokens[idx].info.strip() == "mermaid":
        return (
            '<p class="mermaid-note">GitHub draws this trend in the comment; here, open the '
            'benchmark\'s <a href="#trend-links">trend chart</a>.</p>\n'
        )
    return renderer.fence(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.add_render_rule("fence", _fence)
    return md


def _without_inline_styles(tokens: Sequence[Token]) -> None:
    # The pages' Content-Security-Policy forbids style attributes: alignment becomes a class.
    for token in tokens:
        style = token.attrGet("style")
        if style is not None and token.type in ("th_open", "td_open"):
            del token.attrs["style"]
            token.attrSet("class", _ALIGN_CLASS.get(str(style), ""))


def markdown_html(
    text: str, *, trends: Mapping[tuple[str, str], Sequence[float]] | None = None
) -> str:
    """HTML for perfgate's own markdown: tables, code, lists, links, and its details blocks;
    verdicts as badges, and block sparklines as SVG (from `trends`: (key, metric) -> values)."""
    md = _markdown()
    out: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        if chunk:
            tokens = md.parse("\n".join(chunk))
            _without_inline_styles(tokens)
            tokens = decorate(tokens, values=trends or {}, sparkline=_trend_sparkline)
            out.append(md.renderer.render(tokens, md.options, {}))
            chunk.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if match := _DETAILS_OPEN.match(stripped):
            flush()
            summary = md.parseInline(match[1])
            summary = decorate(summary, values=trends or {}, sparkline=_trend_sparkline)
            shown = md.renderer.render(summary, md.options, {})
            out.append(f"<details><summary>{shown}</summary>\n")
        elif stripped == "</details>":
            flush()
            out.append("</details>\n")
        elif match := _SUB.match(stripped):
            flush()
            out.append(f'<p class="footer"><small>{md.renderInline(match[1])}</small></p>\n')
        elif stripped.startswith("<!--") and stripped.endswith("-->"):
            flush()
        else:
            chunk.append(line)
    flush()
    return "".join(out)


def comparison_html(comparison: Comparison) -> str:
    """The PR comment for `comparison`, whole, as HTML (safe to insert into a page)."""
    trends = {(r.key, r.metric): values for r in comparison.results if (values := series(r))}
    return markdown_html(render_markdown(comparison, limit=_NO_LIMIT), trends=trends)


def _trend_sparkline(values: Sequence[float]) -> str:
    # The comment's sparkline ends with head: it gets the marked last point.
    return sparkline_svg(values, [], width=90, height=22)


def changed_keys(comparison: Comparison) -> list[tuple[str, str, str]]:
    """(key, metric, verdict) of each regression, possible regression and improvement, for links
    to their trends; a possible regression's verdict reads `possible_regression`."""
    return [
        (r.key, r.metric, r.flag or r.verdict)
        for r in comparison.results
        if r.verdict in ("regression", "improvement") or r.flag is not None
    ]


def sparkline_svg(
    values: Sequence[float], changes: Sequence[int], *, width: int = 120, height: int = 28
) -> str:
    """A tiny inline SVG of recent medians; change points as red ticks. Numbers only inside."""
    if not values:
        return ""
    low, high = min(values), max(values)
    # At least ±5% of the level in view, so run-to-run noise looks like noise, not like a trend.
    middle = (low + high) / 2
    floor = 0.1 * abs(middle) or 1.0
    if high - low < floor:
        low, high = middle - floor / 2, middle + floor / 2
    span = high - low
    pad = 2.0

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / (len(values) - 1) if len(values) > 1 else 0.5)

    def y(v: float) -> float:
        return pad + (height - 2 * pad) * (1 - (v - low) / span)

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    marks = "".join(
        f'<line class="spark-change" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="0" y2="{height}"/>'
        for i in changes
        if 0 <= i < len(values)
    )
    return (
        f'<svg class="sparkline" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-hidden="true">{marks}'
        f'<polyline points="{points}"/>'
        f'<circle cx="{x(len(values) - 1):.1f}" cy="{y(values[-1]):.1f}" r="2"/></svg>'
    )


def project_path(root: str, project: str) -> str:
    # Project names are `owner/name`: the slash stays a slash, everything else is escaped.
    return f"{root}/p/{quote(project, safe='/')}"


def trend_path(
    root: str, project: str, *, key: str, metric: str, branch: str | None, head: str | None = None
) -> str:
    """The trend page; with `head` (a pull request's run id), its value drawn over the trend."""
    query = {"key": key, "metric": metric}
    if branch:
        query["branch"] = branch
    if head:
        query["head"] = head
    return f"{project_path(root, project)}/trend?{urlencode(query)}"


def run_path(root: str, project: str, run_id: str) -> str:
    return f"{project_path(root, project)}/runs/{quote(run_id, safe='')}"


def compare_path(root: str, project: str, *, base: str, head: str) -> str:
    return f"{project_path(root, project)}/compare?{urlencode({'base': base, 'head': head})}"
