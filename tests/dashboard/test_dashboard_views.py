"""The pure parts of the pages: the comment's markdown as safe HTML, sparklines, login targets."""

from __future__ import annotations

import re

import pytest

from perfgate.api.dashboard.login import safe_next
from perfgate.api.dashboard.views import markdown_html, project_path, sparkline_svg, trend_path

COMMENT = """### ⚠️ 1 regression · base `abc1234` → head `def5678`

| benchmark | metric | base | head | Δ | 95% CI | verdict |
|---|---|---:|---:|---:|---:|---|
| `a\\|b<script>x</script>` | time | 1 µs | 2 µs | +100.0% | +90.0% … +110.0% | 🔴 regression |

<details><summary>Trend: last 5 runs of `<img src=x onerror=alert(1)>`</summary>

```mermaid
xychart-beta
    title "x"
```

</details>

**Warnings**

- branch <b onmouseover=alert(1)>main</b> [click](javascript:alert(1))

<details><summary>All 1 results</summary>

| benchmark | metric |
|---|---|
| `k` | time |

</details>

<sub>alpha 0.05 · [CI run](https://ci.example/1) · perfgate</sub>
"""


def test_comment_markdown_becomes_escaped_html() -> None:
    page = markdown_html(COMMENT)
    assert "<script>" not in page and "<img" not in page and "<b " not in page
    assert "&lt;script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "a|b" in page  # the escaped pipe is a character of the cell, not a column
    assert 'href="javascript:' not in page
    assert page.count("<details>") == page.count("</details>") == 2
    assert "<summary>All 1 results</summary>" in page
    assert '<p class="footer"><small>alpha 0.05 · <a href="https://ci.example/1">CI run</a>' in page
    # The page's Content-Security-Policy allows no style attributes: alignment is a class.
    assert "style=" not in page
    # base, head, Δ, CI in the head row and one row
    assert len(re.findall(r'class="num\b', page)) == 4 * 2
    assert "xychart-beta" not in page and 'class="mermaid-note"' in page
    assert len(re.findall(r"<table>", page)) == 2


TRENDED = """### 🟡 1 possible regression · base `a` → head `b`

| benchmark | metric | base | head | Δ | 95% CI | trend | verdict |
|---|---|---:|---:|---:|---:|---|---|
| `k1` | time | 1 µs | 2 µs | +100.0% | +90.0% … +110.0% | ▁▁▁→█ | 🔴 regression |
| `k2` | time | 2 µs | 1 µs | -50.0% | -55.0% … -45.0% | [▁▁▁→▁](https://x.example/t) | 🟢 improvement |
| `k3` | time | 2 µs | 2 µs | +4.0% | -1.0% … +9.0% | ▁▁▁→▁ | 🟡 inconclusive · possible regression · speed levels 1.00x / 1.31x |

**`k1`**: time +100.0% ▁▁▁→█
"""  # noqa: E501


def test_verdicts_become_badges_on_classed_rows_and_trends_become_svg() -> None:
    trends = {("k1", "time"): [1.0, 1.1, 1.0, 2.0], ("k2", "time"): [2.0, 2.0, 2.1, 1.0]}
    page = markdown_html(TRENDED, trends=trends)
    # No emoji and no block characters are left: a browser without an emoji font reads it all.
    assert not re.search("[\U0001f300-\U0001faff\u2580-\u259f\u26a0\u2705\u2796]", page)
    rows = re.findall(r"<tr( class=\"[^\"]*\")?>(.*?)</tr>", page, re.S)
    classes = [c for c, _ in rows]
    assert classes == [
        "",
        ' class="verdict-regression"',
        ' class="verdict-improvement"',
        ' class="verdict-inconclusive verdict-possible_regression"',
    ]
    assert '<span class="badge badge-regression">regression</span>' in rows[1][1]
    assert '<span class="badge badge-improvement">improvement</span>' in rows[2][1]
    assert (
        '<span class="badge badge-inconclusive">inconclusive</span> · '
        '<span class="badge badge-possible_regression">possible regression</span>'
        " · speed levels 1.00x / 1.31x"
    ) in rows[3][1]
    # k1 and k2 have values: their trend cells (and k1's paragraph) are SVG sparklines; the
    # link around k2's stays. k3 has none: the word stands in for the blocks.
    assert rows[1][1].count('<svg class="sparkline"') == 1
    assert '<a href="https://x.example/t"><svg class="sparkline"' in rows[2][1]
    assert '<span class="trend-word">trend</span>' in rows[3][1]
    assert page.count('<svg class="sparkline"') == 3
    assert '<span class="badge badge-possible_regression">needs a look</span> 1 possible' in page
    # Tables scroll in their own box; secondary columns carry a class a narrow screen hides.
    assert page.count('<div class="table-scroll">') == page.count("<table>") == 1
    assert page.count('class="num secondary"') == 3 * 4  # base, head, 95% CI; head row + 3 rows


def test_sparkline_draws_values_and_change_marks_only() -> None:
    svg = sparkline_svg([1.0, 1.0, 2.0, 2.0], [2, 9])
    assert svg.count('class="spark-change"') == 1  # index 9 is outside the window
    points = re.search(r'points="([^"]+)"', svg)
    assert points is not None and len(points.group(1).split()) == 4
    assert sparkline_svg([], []) == ""
    flat = sparkline_svg([100.0, 100.5, 99.5], [])
    ys = [float(p.split(",")[1]) for p in re.findall(r"\d+\.\d,\d+\.\d", flat)]
    # Half a percent of noise stays a nearly flat line (the y range is at least ±5%).
    assert max(ys) - min(ys) < 4


def test_paths_escape_names_but_keep_the_owner_slash() -> None:
    assert project_path("", "acme/models") == "/p/acme/models"
    assert project_path("/pg", "a b/c?d") == "/pg/p/a%20b/c%3Fd"
    assert trend_path("", "o/n", key="k[n=1]", metric="time", branch="feature/x") == (
        "/p/o/n/trend?key=k%5Bn%3D1%5D&metric=time&branch=feature%2Fx"
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/p/acme/models?branch=main", "/p/acme/models?branch=main"),
        ("", "/"),
        ("//evil.example/", "/"),
        ("https://evil.example/", "/"),
        ("javascript:alert(1)", "/"),
        ("/\\evil.example", "/"),
        ("/ok\r\nSet-Cookie: x", "/"),
    ],
)
def test_login_returns_only_to_paths_on_this_server(target: str, expected: str) -> None:
    assert safe_next("", target) == expected
