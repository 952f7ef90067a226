"""The change-point issue's markdown: hostile names render inert, the marker survives them, and
the reproduce line runs the key it names. Rendered the way GitHub does (CommonMark, tables, raw
HTML allowed) and inspected as HTML."""

from __future__ import annotations

import dataclasses
import shlex

from test_untrusted_markdown import BRANCH, IMG, KEY, LINK, MENTION, OP, _as_github_shows

from perfgate.report.change_issue import (
    TITLE_CHARS,
    Marker,
    Resolution,
    SeriesId,
    StepReport,
    bisect_command,
    close_comment,
    issue_body,
    issue_title,
    marker_line,
    moved_comment,
    parse_marker,
    trend_url,
)
from perfgate.report.untrusted import one_line
from perfgate.stats.model import OpDelta
from perfgate.stats.step import step_size

GOOD = "1" * 40
BAD = "2" * 40
SERIES = SeriesId(project="acme/models", branch=BRANCH, key=KEY, metric="time")


def report(series: SeriesId = SERIES, **kw: object) -> StepReport:
    fields: dict[str, object] = {
        "series": series,
        "run": "00000000-0000-4000-8000-000000000001",
        "status": "open",
        "unit": "s",
        "direction": "lower",
        "step": step_size([1e-4, 1.01e-4, 0.99e-4, 1e-4], [1.2e-4, 1.21e-4, 1.19e-4]),
        "good": GOOD,
        "bad": BAD,
        "threshold": 0.03,
        "ops": (OpDelta(OP, 10.0, 70.0, 60.0, 1.0, 2.0),),
        "profiled": (5, 5),
    }
    fields.update(kw)
    return StepReport(**fields)  # type: ignore[arg-type]


def test_hostile_names_render_inert_in_the_issue() -> None:
    body = issue_body(report(), trend=trend_url("https://perf.example", SERIES))
    page = _as_github_shows(body)
    assert "img" not in page.starts
    (href,) = page.hrefs
    assert href.startswith("https://perf.example/p/acme/models/trend?key=bench%60%3Cimg")
    headings = [t for t in page.starts if t[0] == "h" and t[1:].isdigit()]
    assert headings == ["h2", "h3", "h3", "h3"]  # the title, ops, reproduce, trend: no `# owned`
    assert page.starts.count("details") == page.ends.count("details") == 0
    outside_code = [m.group() for chunk in page.text for m in MENTION.finditer(chunk)]
    assert outside_code == []
    # Still shown whole: the key and the op as code, the branch as text.
    assert one_line(KEY) in page.code and one_line(OP) in page.code
    shown = "".join(page.text).replace("\u200b", "")
    assert one_line(BRANCH) in shown and LINK not in "".join(page.hrefs)
    # The reproduce line is one code block that runs exactly this key.
    (command,) = [c for c in page.code if c.startswith("perfgate bisect")]
    assert shlex.split(command) == [
        "perfgate",
        "bisect",
        GOOD,
        BAD,
        "--benchmark",
        one_line(KEY),
    ]
    assert command.strip() == bisect_command(report())


def test_the_marker_survives_any_key_and_names_the_series() -> None:
    hostile = SeriesId(project="acme/models", branch="a b-->", key=f"k -->{IMG}\n", metric="t")
    body = issue_body(report(hostile), trend=None)
    assert body.splitlines()[0] == marker_line(report(hostile).marker)
    assert body.splitlines()[0].count("-->") == 1  # only the marker's own end
    assert parse_marker(body) == Marker(hostile, report().run, GOOD, BAD)
    assert "No dashboard link" in body


def test_damaged_or_foreign_markers_are_not_perfgate_issues() -> None:
    line = marker_line(report().marker)
    assert parse_marker(line + "\nbody") is not None
    assert parse_marker("text\n" + line) is None  # not the first line
    assert parse_marker(line.replace(" run=", " ran=")) is None
    assert parse_marker(line.replace("range=", "range=nodots")) is None
    assert parse_marker(line.replace(" metric=time", " metric=")) is None
    assert parse_marker(None) is None
    assert parse_marker("<!-- perfgate:pr-comment -->") is None


def test_titles_are_one_line_and_fit_github() -> None:
    title = issue_title(report())
    assert "\n" not in title and title.startswith("perfgate: bench`<img")
    assert " time +20.0% slower on main</details>" in title and title.endswith("…")
    plain = issue_title(report(dataclasses.replace(SERIES, key="k[n=1]", branch="main")))
    assert plain == f"perfgate: k[n=1] time +20.0% slower on main ({GOOD[:12]}..{BAD[:12]})"
    long = dataclasses.replace(SERIES, key="k" * 5000)
    assert len(issue_title(report(long))) <= TITLE_CHARS
    # The longest key and branch results@1 allows, and op names of any length, fit a body.
    longest = SeriesId("o" * 100 + "/" + "n" * 99, "b" * 255, "k" * 1000, "m" * 64)
    ops = tuple(OpDelta("%" * 10_000 + str(i), 1.0, 2.0, 1.0, 1.0, 1.0) for i in range(8))
    assert len(issue_body(report(longest, ops=ops), trend=None)) < 20_000


def test_without_profiles_the_issue_says_so() -> None:
    body = issue_body(report(ops=(), profiled=(0, 4)), trend=None)
    assert "No profiled run before the step" in body
    body = issue_body(report(ops=(), profiled=(3, 4)), trend=None)
    assert "No op's per-call time or count moved" in body


def test_comments_say_why() -> None:
    old = Marker(SERIES, "r0", "3" * 40, "4" * 40)
    moved = moved_comment(report(), old, still_detected=False)
    assert "`333333333333..444444444444`" in moved and "`111111111111..222222222222`" in moved
    later = moved_comment(report(), old, still_detected=True)
    assert "A later step" in later and "still in perfgate's history" in later
    assert "dismissed in perfgate" in close_comment(Resolution("dismissed"), old)
    small = close_comment(Resolution("small", ratio=1.012, threshold=0.03), old)
    assert "+1.2%, under the 3.0% threshold" in small
    back = close_comment(Resolution("recovered", good="5" * 40, bad="6" * 40), old)
    assert "`555555555555..666666666666`" in back
    assert "no longer detects" in close_comment(Resolution("vanished"), None)
    assert "ignores this benchmark" in close_comment(Resolution("ignored"), old)
