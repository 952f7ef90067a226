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
    assert page.count('class="num"') == 4 * 2  # base, head, Δ, CI in the head row and one row
    assert "xychart-beta" not in page and 'class="mermaid-note"' in page
    assert len(re.findall(r"<table>", page)) == 2


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
