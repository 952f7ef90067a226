"""The comment's shape: benchmarks counted, one estimate per row, short when nothing changed,
one section per regressed benchmark, trend links, and a plain-text headline on the terminal."""

from __future__ import annotations

import io

import pytest
from ghhelpers import BASE_SHA, HEAD_SHA
from rich.console import Console

from perfgate.report.checks import regression_annotations, status_description
from perfgate.report.markdown import Links, render_markdown
from perfgate.report.terminal import render_terminal
from perfgate.report.trend import trend_page_url
from perfgate.report.verdicts import short_reason
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import (
    Comparison,
    MetricResult,
    OpDelta,
    SideInfo,
    SideSummary,
    Verdict,
)
from synthetic import synthetic_document

DASHBOARD = "https://perf.example/compare?project=acme%2Fmodels&base=aaaa&head=bbbb"
OPS = [OpDelta("aten::copy_", 33.3, 143.3, 110.0, 2, 4), OpDelta("aten::mm", 50.0, 51.0, 1.0, 1, 1)]
# The comparator's reasons, as `stats/two_sample.py` words them.
STRADDLES = "+1.0% (95% CI -3.0% to +5.0%); the CI straddles the 3.0% threshold"
NOISY = (
    "noisy: the head samples are too spread (or bimodal) to pin the median down; "
    "+2.0% (95% CI -9.0% to +14.0%)"
)


def _result(
    key: str,
    verdict: Verdict,
    ratio: float,
    *,
    metric: str = "time",
    head: float | None = None,
    ci: tuple[float, float] | None = None,
    reason: str = "",
    noise: str | None = None,
    history: list[float] | None = None,
    attribution: list[OpDelta] | None = None,
    baseline_runs: int = 0,
) -> MetricResult:
    """One result, 100 units on base and `head` (default: `ratio` times that) on head."""
    exact = metric != "time"
    return MetricResult(
        key=key,
        benchmark=key.split("[", maxsplit=1)[0],
        params={},
        metric=metric,
        unit="s" if not exact else "count",
        direction="lower",
        exact=exact,
        base=SideSummary(n=30, median=100e-6 if not exact else 100.0, iqr=0.0, rounds=3),
        head=SideSummary(
            n=30,
            median=head if head is not None else (100e-6 if not exact else 100.0) * ratio,
            iqr=0.0,
            rounds=3,
        ),
        ratio=ratio,
        ci=None if exact else (ci or (ratio * 0.98, ratio * 1.02)),
        p_value=None if exact else 0.01,
        q_value=None if exact else 0.01,
        threshold=0.03,
        verdict=verdict,
        reason=reason or f"{verdict} at this threshold",
        noise=noise,
        history=history or [],
        attribution=attribution or [],
        baseline_runs=baseline_runs,
    )


def _comparison(*results: MetricResult, label: str | None = "merge-base") -> Comparison:
    return Comparison(
        base=SideInfo(commit=BASE_SHA, runs=["b"], branch="main", label=label),
        head=SideInfo(commit=HEAD_SHA, runs=["h"], branch="feature"),
        alpha=0.05,
        threshold=0.03,
        warnings=[],
        results=list(results),
    )


def _suite(
    benchmarks: int, *, inconclusive: int = 0, extra: tuple[MetricResult, ...] = ()
) -> Comparison:
    """`benchmarks` keys of three metrics each, all unchanged but `inconclusive` of the times."""
    results = [*extra]
    for i in range(benchmarks):
        key = f"kernel[n={i}]"
        noisy = i < inconclusive
        results += [
            _result(
                key,
                "inconclusive" if noisy else "unchanged",
                1.01,
                ci=(0.95, 1.07) if noisy else (0.99, 1.02),
                reason=STRADDLES if noisy else "",
            ),
            _result(key, "unchanged", 1.0, metric="op_count"),
            _result(key, "unchanged", 1.0, metric="graph_breaks"),
        ]
    return _comparison(*results)


def _terminal(comparison: Comparison) -> list[str]:
    console = Console(file=io.StringIO(), width=240, color_system=None)
    render_terminal(comparison, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text.splitlines()


def test_headline_counts_benchmarks_and_names_the_worst_change() -> None:
    # layer_norm regressed in two metrics: one benchmark, not two rows.
    extra = (
        _result("layer_norm[n=4]", "regression", 1.2, attribution=OPS),
        _result("layer_norm[n=4]", "regression", 1.5, metric="op_count"),
        _result("softmax[n=8]", "regression", 1.52),
        _result("conv[k=3]", "improvement", 0.8),
    )
    comparison = _suite(31, extra=extra)
    first = render_markdown(comparison).splitlines()[0]
    assert first == (
        "### ⚠️ 2 regressions (worst `softmax[n=8]` time +52.0%), 1 improvement, 31 unchanged "
        "· base `aaaaaaa` (merge-base) → head `bbbbbbb`"
    )
    # The commit status carries the same counts.
    assert status_description(comparison) == "2 regressions, 1 improvement, 31 unchanged"


def test_delta_and_ci_are_one_estimate() -> None:
    # The medians moved +5.7%, the comparator (round factors, its baseline) says -2.0%.
    result = _result(
        "gelu[n=64]", "inconclusive", 0.98, head=105.7e-6, ci=(0.937, 1.025), reason=STRADDLES
    )
    rendered = render_markdown(_comparison(result))
    row = next(line for line in rendered.splitlines() if line.startswith("| `gelu"))
    assert "| 100 µs | 106 µs | -2.0% | -6.3% … +2.5% |" in row
    assert "+5.7%" not in rendered
    terminal = next(line for line in _terminal(_comparison(result)) if "gelu" in line)
    assert "-2.0%" in terminal and "+5.7%" not in terminal
    slow = _result("gelu[n=64]", "regression", 1.3, head=140e-6)
    (note,) = regression_annotations(_comparison(slow))
    assert "100 µs → 140 µs (+30.0%, 95% CI +27.4% … +32.6%)" in note.message


def test_a_baseline_pooled_with_history_is_marked() -> None:
    noise = "±0.4% a process (history of 8 runs); baseline: base and its 8 history runs"
    pooled = _result("mm[n=1]", "regression", 1.25, noise=noise, baseline_runs=8)
    alone = _result("mm[n=2]", "regression", 1.3, noise="±0.4% a process (history of 8 runs)")
    lines = render_markdown(_comparison(pooled, alone)).splitlines()
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| `mm")}
    assert "| +25.0% † |" in rows["| `mm[n=1]`"]
    assert "| +30.0% |" in rows["| `mm[n=2]`"]
    assert (
        "† Δ and CI are against the baseline: base pooled with its 8 earlier runs of `main` "
        "(the base column is this run alone)."
    ) in lines


def test_every_inconclusive_row_says_why_in_short() -> None:
    comparison = _comparison(
        _result("a[n=1]", "inconclusive", 1.01, reason=STRADDLES),
        _result("b[n=1]", "inconclusive", 1.02, reason=NOISY),
        _result("c[n=1]", "missing", 1.0, reason="only in base"),
    )
    rows = [line for line in render_markdown(comparison).splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `c[n=1]`") and rows[0].endswith("| only in base |")
    assert rows[1].endswith(
        "| 🟡 inconclusive | noisy: the head samples are too spread (or "
        "bimodal) to pin the median down |"
    )
    assert rows[2].endswith("| 🟡 inconclusive | the CI straddles the 3.0% threshold |")
    long = _result("d[n=1]", "inconclusive", 1.0, reason="x" * 500)
    assert len(short_reason(long)) == 120 and short_reason(long).endswith("…")


@pytest.mark.parametrize(("benchmarks", "inconclusive"), [(13, 0), (13, 2), (500, 40), (2000, 0)])
def test_nothing_changed_is_short_for_any_suite_size(benchmarks: int, inconclusive: int) -> None:
    rendered = render_markdown(_suite(benchmarks, inconclusive=inconclusive))
    lines = rendered.splitlines()
    assert len(lines) <= 15 and len(rendered.encode()) <= 2048
    assert f"{benchmarks:,} benchmarks compared, {3 * benchmarks:,} results " in lines[2]
    assert "no benchmark got measurably slower or faster" in lines[2]
    assert "| ⚪ unchanged" not in rendered
    rows = [line for line in lines if line.startswith("| `")]
    assert len(rows) == min(inconclusive, 3)


def test_a_real_500_benchmark_comparison_without_changes_is_short() -> None:
    base = synthetic_document(benchmarks=500, samples=20, seed=1, commit=BASE_SHA)
    head = synthetic_document(benchmarks=500, samples=20, seed=2, commit=HEAD_SHA)
    quiet = compare_documents([parse_document(base)], [parse_document(head)])
    rendered = render_markdown(quiet, links=Links(run_url="https://ci.example/1"))
    assert len(rendered.splitlines()) <= 15 and len(rendered.encode()) <= 2048
    verdicts = [result.verdict for result in quiet.results]
    assert not {"regression", "improvement"} & set(verdicts)
    inconclusive, unchanged = verdicts.count("inconclusive"), verdicts.count("unchanged")
    assert inconclusive > 3 and inconclusive + unchanged == 1500
    other = f"Other results: {inconclusive:,} inconclusive (3 shown); {unchanged:,} unchanged"
    assert other in rendered


def test_one_section_per_regressed_benchmark_with_its_ops_once() -> None:
    key = "layer_norm[n=4]"
    comparison = _comparison(
        _result(key, "regression", 1.3, attribution=OPS, history=[100e-6] * 5),
        _result(key, "regression", 1.5, metric="op_count", attribution=OPS),
    )
    rendered = render_markdown(comparison)
    assert rendered.count(f"**`{key}`**") == 1
    assert f"**`{key}`**: op_count +50.0%, time +30.0% ▁▁▁▁▁▁→█" in rendered
    assert rendered.count("Ops that moved most") == 1
    assert rendered.count("| `aten::copy_` |") == 1
    assert "- op_count: changed from" not in rendered  # the hand-built reason is used as is
    assert "- op_count: regression at this threshold" in rendered
    assert rendered.count("```mermaid") == 1


def test_changed_rows_link_their_trend_or_show_a_sparkline() -> None:
    with_history = _result("mm[n=1]", "regression", 1.3, history=[100e-6] * 4)
    without = _result("mm[n=2]", "regression", 1.2)
    comparison = _comparison(with_history, without)
    linked = render_markdown(comparison, links=Links(dashboard_url=DASHBOARD)).splitlines()
    trend = "https://perf.example/p/acme/models/trend?key=mm%5Bn%3D{}%5D&metric=time&branch=main"
    row = next(line for line in linked if line.startswith("| `mm[n=1]`"))
    assert f"| [▁▁▁▁▁→█]({trend.format(1)}) |" in row
    row = next(line for line in linked if line.startswith("| `mm[n=2]`"))
    assert f"| [trend]({trend.format(2)}) |" in row
    plain = render_markdown(comparison)
    assert "| ▁▁▁▁▁→█ |" in plain and "/trend?" not in plain


def test_trend_page_url_only_for_the_dashboards_comparison_link() -> None:
    url = trend_page_url(
        "https://perf.example/pg/compare?project=o%2Fn&base=a&head=b",
        key="k[x=a) ]",
        metric="time",
        branch=None,
    )
    assert url == "https://perf.example/pg/p/o/n/trend?key=k%5Bx%3Da%29+%5D&metric=time"
    assert trend_page_url(None, key="k", metric="time", branch=None) is None
    assert trend_page_url("https://ci.example/run/1", key="k", metric="t", branch=None) is None
    assert trend_page_url("/compare?project=o", key="k", metric="t", branch=None) is None


def test_terminal_headline_is_plain_text() -> None:
    comparison = _comparison(
        _result("attn_fwd[n=1]", "regression", 1.3), label="merge-base <of> main & co"
    )
    first = _terminal(comparison)[0]
    assert first == (
        "⚠️ 1 regression (attn_fwd[n=1] time +30.0%) · base aaaaaaa (merge-base <of> main & co) "
        "→ head bbbbbbb"
    )
    # The markdown keeps its code spans and escaping.
    assert render_markdown(comparison).splitlines()[0] == (
        "### ⚠️ 1 regression (`attn_fwd[n=1]` time +30.0%) · base `aaaaaaa` "
        "(merge-base &lt;of&gt; main &amp; co) → head `bbbbbbb`"
    )
