"""The PR comment's tokens made fit for a page: verdict badges, SVG trends, scrolling tables.

The comment speaks in emoji (🔴 regression) and Unicode block sparklines (▁▂▃→█), which GitHub
draws but a browser without an emoji font shows as boxes. Here, before the markdown is rendered:
a verdict icon and its word become a coloured badge with the word as its label, the table row
gets the verdict's class (`verdict-regression`), a block sparkline becomes the server's SVG
sparkline of the same values, and every table sits in a box that scrolls on a narrow screen,
with its secondary columns marked so narrow screens can fold them away.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from markdown_it.token import Token

from perfgate.report.trend import BARS
from perfgate.report.verdicts import FLAG_WORDS, ICONS

# Headline icons (report.verdicts.headline_icon) when no verdict word follows them.
_HEADLINE = {
    "⚠️": ("regression", "regressed"),
    "❌": ("error", "errors"),
    "🟡": ("possible_regression", "needs a look"),
    "➖": ("empty", "nothing compared"),
    "✅": ("ok", "ok"),
}
_ICONS = sorted({*ICONS.values(), *_HEADLINE, "⚠"}, key=len, reverse=True)
_ICON = "|".join(re.escape(i) for i in _ICONS)
_FLAGS = "|".join(re.escape(w) for w in FLAG_WORDS.values())
_VERDICT = re.compile(rf"^(?:{_ICON})\ufe0f?\s+({'|'.join(ICONS)})(?: · ({_FLAGS}))?(?=$|\s|·)")
_LEADING_ICON = re.compile(rf"^({_ICON})\ufe0f?\s*")
_STRAY_ICON = re.compile(rf"(?:{_ICON})\ufe0f?\s?")
_SPARK = re.compile(rf"[{BARS}]+→[{BARS}]")
# Columns a narrow screen may fold away: the comparison stays readable without them.
SECONDARY_COLUMNS = frozenset({"base", "head", "95% CI", "trend", "why"})

Sparkline = Callable[[Sequence[float]], str]


def badge(kind: str, label: str) -> str:
    return f'<span class="badge badge-{kind}">{label}</span>'


def _html(content: str) -> Token:
    token = Token("html_inline", "", 0)
    token.content = content
    return token


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _add_class(token: Token, name: str) -> None:
    current = str(token.attrGet("class") or "")
    token.attrSet("class", f"{current} {name}".strip())


def _badges(children: list[Token]) -> tuple[list[Token], list[str]]:
    """Children with verdict icons turned into badges, and the verdicts found (for the row)."""
    out: list[Token] = []
    verdicts: list[str] = []
    for child in children:
        if child.type != "text" or not _STRAY_ICON.search(child.content):
            out.append(child)
            continue
        text = child.content
        if match := _VERDICT.match(text):
            verdict, flag = match[1], match[2]
            verdicts.append(verdict)
            out.append(_html(badge(verdict, verdict)))
            if flag:
                kind = flag.replace(" ", "_")
                verdicts.append(kind)
                out += [_text(" · "), _html(badge(kind, flag))]
            text = text[match.end() :]
        elif match := _LEADING_ICON.match(text):
            kind, label = _HEADLINE.get(match[1], ("neutral", ""))
            if label:
                out.append(_html(badge(kind, label) + " "))
            text = text[match.end() :]
        rest = _STRAY_ICON.sub("", text)
        if rest:
            out.append(_text(rest))
    return out, verdicts


def _sparks(
    children: list[Token], key: str | None, metric: str | None, svg: Callable[..., str | None]
) -> list[Token]:
    """Block-character sparklines replaced by the SVG of the same benchmark's values."""
    out: list[Token] = []
    for child in children:
        if child.type == "code_inline" and key is None:
            key = child.content
        if child.type != "text" or not _SPARK.search(child.content):
            out.append(child)
            continue
        drawn = svg(key, metric) if key is not None else None
        parts = _SPARK.split(child.content)
        for i, part in enumerate(parts):
            if part:
                out.append(_text(part))
            if i < len(parts) - 1:
                out.append(_html(drawn or '<span class="trend-word">trend</span>'))
    return out


def decorate(
    tokens: list[Token],
    *,
    values: Mapping[tuple[str, str], Sequence[float]],
    sparkline: Sparkline,
) -> list[Token]:
    """The comment's tokens with badges, row classes, SVG trends and scrolling tables.

    `values` holds each (key, metric)'s trend values (earlier runs, base, head) as the comment's
    block sparkline drew them; `sparkline` draws them as SVG.
    """
    by_key: dict[str, Sequence[float]] = {}
    for (key, _), series in values.items():
        by_key.setdefault(key, series)

    def svg(key: str, metric: str | None) -> str | None:
        found = values.get((key, metric)) if metric else None
        found = found or by_key.get(key)
        return sparkline(found) if found else None

    out: list[Token] = []
    columns: list[str] = []
    row_open: Token | None = None
    cells: list[Token] = []
    row_inlines: list[Token] = []
    in_head = False
    for token in tokens:
        if token.type == "table_open":
            out.append(_block('<div class="table-scroll">'))
            columns = []
        if token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            row_open, cells, row_inlines = token, [], []
        elif token.type in ("th_open", "td_open"):
            cells.append(token)
        elif token.type == "inline" and row_open is not None and token.children is not None:
            index = len(cells) - 1
            if in_head:
                columns.append(token.content.strip())
            else:
                row_key = _first_code(row_inlines)
                metric = row_inlines[1].content.strip() if len(row_inlines) > 1 else None
                token.children = _sparks(token.children, row_key, metric, svg)
            row_inlines.append(token)
            token.children, verdicts = _badges(token.children)
            for verdict in verdicts:
                _add_class(row_open, f"verdict-{verdict}")
            if 0 <= index < len(columns) and columns[index] in SECONDARY_COLUMNS:
                _add_class(cells[index], "secondary")
        elif token.type == "inline" and token.children is not None:
            token.children = _sparks(token.children, None, None, svg)
            token.children, _ = _badges(token.children)
        elif token.type == "tr_close":
            row_open = None
        out.append(token)
        if token.type == "table_close":
            out.append(_block("</div>\n"))
    return out


def _block(content: str) -> Token:
    token = Token("html_block", "", 0)
    token.content = content
    return token


def _first_code(inlines: list[Token]) -> str | None:
    if not inlines or not inlines[0].children:
        return None
    return next((c.content for c in inlines[0].children if c.type == "code_inline"), None)
