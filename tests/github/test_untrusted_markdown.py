"""Hostile names in results documents render inert in the PR comment, job summary and check run.

The comment is rendered to HTML the way GitHub does it (CommonMark with tables, raw HTML
allowed) and the HTML is inspected: no image, no link to the attacker, no heading or extra
`</details>` of theirs, no @mention or issue reference outside code, and every hostile name still
shown, whole, as text.
"""

from __future__ import annotations

import dataclasses
import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import pytest
from ghhelpers import BASE_SHA, HEAD_SHA
from markdown_it import MarkdownIt

from perfgate.github.actions import warning_command
from perfgate.report.checks import check_summary, regression_annotations
from perfgate.report.markdown import Links, render_markdown
from perfgate.report.untrusted import code_span, one_line, plain_text
from perfgate.results import make_key, parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import CommonFinding, Comparison, MetricResult
from perfgate.stats.noise import PastRun
from synthetic import synthetic_document

IMG = "<img src=x onerror=alert(1)>"
LINK = "[Looks good - click to approve](https://evil.example)"
PAYLOAD = f"`</details>{IMG} {LINK} @octocat @org/team #1 |x|\n```\n# owned\n</details>"
NAME = f"bench`{IMG}"
PARAMS = {"p": PAYLOAD}
KEY = make_key(NAME, PARAMS)
OP = f"aten::``mm`` </details>{IMG} {LINK} @octocat"
UNIT = IMG  # 28 characters: within the results format's 32
BRANCH = f"main</details>{IMG}@octocat"
# What the template itself opens and closes: the trend chart of the one regression with history,
# and the folded table of the other results (the failed benchmark, the inconclusive ones).
TEMPLATE_DETAILS = 2
DASHBOARD = "https://perf.example/compare?project=acme%2Fmodels&base=a&head=b"
MENTION = re.compile(r"(?<![\w@])[@#][A-Za-z0-9]")


def _documents() -> tuple[dict[str, Any], dict[str, Any]]:
    base = synthetic_document(benchmarks=3, samples=30, seed=1, commit=BASE_SHA, branch=BRANCH)
    head = synthetic_document(benchmarks=3, samples=30, seed=2, commit=HEAD_SHA, branch="x")
    for doc, factor in ((base, 1.0), (head, 3.0)):
        first, failing = doc["benchmarks"][0], doc["benchmarks"][1]
        first.update(name=NAME, params=PARAMS, key=KEY)
        time = first["metrics"]["time"]
        time["samples"] = [s * factor for s in time["samples"]]
        first["metrics"]["widgets"] = {
            "unit": UNIT,
            "direction": "lower",
            "value": 2.0 * factor,
            "exact": True,
        }
        failing.update(error=PAYLOAD, metrics={})
    head["benchmarks"][0]["profile"]["ops"].append(
        {"op": OP, "count": 3, "self_cpu_us": 500.0, "self_device_us": 0.0, "flops": 0.0}
    )
    head["environment"] = {**head["environment"], "torch": PAYLOAD}
    return base, head


def _with_payload(result: MetricResult) -> MetricResult:
    """PAYLOAD where a forged comparison could put it: the regression's noise note, and the
    metric name of a noisy result (the warnings name those)."""
    if result.key == KEY and result.metric == "time":
        assert result.verdict == "regression"
        return dataclasses.replace(result, noise=PAYLOAD)
    if result.verdict == "unchanged" and result.metric == "time":
        return dataclasses.replace(result, verdict="inconclusive", metric=PAYLOAD)
    return result


def hostile() -> Comparison:
    """Everything a results document (or a forged comparison) can name, set to PAYLOAD."""
    base, head = _documents()
    history = [
        PastRun(commit=f"{i + 1:040x}", medians={(KEY, "time"): 1e-4 * (1 + i / 100)})
        for i in range(4)
    ]
    comparison = compare_documents(
        [parse_document(base)],
        [parse_document(head)],
        history=history,
        base_label=PAYLOAD,
        warnings=[PAYLOAD],
    )
    results = [_with_payload(result) for result in comparison.results]
    shift = CommonFinding(
        ratio=1.3,
        ci=(1.2, 1.4),
        benchmarks=3,
        verdict="regression",
        reason=PAYLOAD,
        noise=PAYLOAD,
        affected=(KEY, PAYLOAD),
    )
    return dataclasses.replace(comparison, results=results, common_factor=shift)


class _Html(HTMLParser):
    """What a browser would make of the rendered comment: tags, links, text in and out of code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[str] = []
        self.ends: list[str] = []
        self.hrefs: list[str] = []
        self.code: list[str] = []
        self.text: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append(tag)
        self.hrefs += [value or "" for name, value in attrs if name in ("href", "src")]
        if tag == "code":
            self._in_code += 1
            self.code.append("")

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)
        if tag == "code":
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        if self._in_code:
            self.code[-1] += data
        else:
            self.text.append(data)


def _as_github_shows(markdown: str) -> _Html:
    # GitHub allows raw HTML in comments (it strips scripts and handlers, not <img> or <a>).
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    parsed = _Html()
    parsed.feed(html)
    parsed.close()
    return parsed


@pytest.mark.parametrize("links", [None, Links(dashboard_url=DASHBOARD)], ids=["plain", "trend"])
def test_hostile_names_render_inert(links: Links | None) -> None:
    rendered = render_markdown(hostile(), links=links)
    page = _as_github_shows(rendered)

    assert "img" not in page.starts
    # Links go to the dashboard only; a hostile key is percent-encoded in a trend link's query.
    assert all(urlsplit(h).netloc == "perf.example" for h in page.hrefs)
    assert not [h for h in page.hrefs if "evil" in h and "/trend?" not in h]
    trends = [h for h in page.hrefs if "/trend?" in h]
    assert len(trends) == (0 if links is None else 2)  # the two regressed metrics of KEY
    for href in trends:
        assert href.startswith("https://perf.example/p/acme/models/trend?key=bench%60%3Cimg")
    assert page.starts.count("details") == page.ends.count("details") == TEMPLATE_DETAILS
    headings = [t for t in page.starts if re.fullmatch(r"h[1-6]", t)]
    assert headings == ["h3"]  # the verdict line, and no `# owned`
    outside_code = [m.group() for chunk in page.text for m in MENTION.finditer(chunk)]
    assert outside_code == []  # no @octocat, @org/team or #1 that GitHub would link

    # Still there, whole, for a reader: names as code, the rest as text.
    assert one_line(KEY) in page.code
    assert one_line(OP) in page.code
    shown = "".join(page.text).replace("\u200b", "")
    for part in (IMG, LINK, "@octocat @org/team #1 |x|", "# owned"):
        assert part in shown
    # The trend chart stays one fenced block: the hostile title did not close it.
    (chart,) = [c for c in page.code if c.startswith("xychart-beta")]
    assert len(chart.splitlines()) == 5


def test_job_summary_check_run_and_annotations_carry_the_same_escaping() -> None:
    comparison = hostile()
    rendered = render_markdown(comparison)
    # The job summary is this text as written; the check run's summary is it too.
    assert check_summary(rendered) == rendered
    for annotation in regression_annotations(comparison):
        command = warning_command(annotation)
        assert "\n" not in command and "\r" not in command


def test_code_span_fence_outlasts_every_backtick_run() -> None:
    assert code_span("kernel[n=1]") == "`kernel[n=1]`"
    assert code_span("a``b") == "```a``b```"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("a|b\nc") == "`a\\|b c`"
    page = _as_github_shows(f"| k |\n|---|\n| {code_span('`a``|b`' + IMG)} |\n")
    assert "img" not in page.starts
    assert page.code == ["`a``|b`" + IMG]


def test_plain_text_escapes_markdown_html_and_mentions() -> None:
    assert plain_text("peak_memory, 3.2 ms") == "peak_memory, 3.2 ms"
    assert plain_text("_x_ *y*") == "&#95;x&#95; &#42;y&#42;"
    assert plain_text("@octocat #12 a@b") == "@&#8203;octocat &#35;&#8203;12 a@&#8203;b"
    assert plain_text("<b>&amp;</b>") == "&lt;b&gt;&amp;amp;&lt;/b&gt;"
    assert plain_text("[x](y) ![i](j) `c` ~s~ $m$ a|b \\") == (
        "&#91;x&#93;(y) &#33;&#91;i&#93;(j) &#96;c&#96; &#126;s&#126; &#36;m&#36; a&#124;b &#92;"
    )
    assert plain_text("one\ntwo\r\n\tthree") == "one two three"
