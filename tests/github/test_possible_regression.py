"""Possible regressions, speed levels and suite-wide shifts, in every place a verdict is shown."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fake_github import FakeGitHub
from ghhelpers import BASE_SHA, HEAD_SHA, body_of
from rich.console import Console

from perfgate.api.dashboard.views import changed_keys
from perfgate.cli import cli
from perfgate.errors import DocumentError
from perfgate.report.checks import (
    check_conclusion,
    check_title,
    has_changes,
    regression_annotations,
    status_description,
    status_state,
)
from perfgate.report.comparison_document import comparison_from_json, comparison_to_json
from perfgate.report.markdown import render_markdown
from perfgate.report.terminal import render_terminal
from perfgate.report.verdicts import headline_icon, severity_order, summary_phrase
from perfgate.stats.model import (
    POSSIBLE_REGRESSION,
    CommonFinding,
    Comparison,
    Flag,
    MetricResult,
    OpDelta,
    SideInfo,
    SideSummary,
    Verdict,
)

FLAGGED = "attention[heads=16]"
SLOW = "matmul[n=1024]"
FAST = "conv[k=3]"
MODES = "layer_norm[hidden=768]"
QUIET = "softmax[n=64]"
NOISY = "gelu[n=64]"
Env = dict[str, str | None]


def _result(
    key: str,
    verdict: Verdict,
    ratio: float,
    *,
    flag: Flag | None = None,
    levels: tuple[float, ...] = (),
    reason: str = "",
) -> MetricResult:
    """One timing, 100 µs on base, `ratio` times that on head, CI ±15% of the ratio."""
    return MetricResult(
        key=key,
        benchmark=key.split("[", maxsplit=1)[0],
        params={},
        metric="time",
        unit="s",
        direction="lower",
        exact=False,
        base=SideSummary(n=30, median=100e-6, iqr=2e-6, rounds=3),
        head=SideSummary(n=30, median=100e-6 * ratio, iqr=2e-6, rounds=3),
        ratio=ratio,
        ci=(ratio * 0.85, ratio * 1.15),
        p_value=0.2,
        q_value=0.3,
        threshold=0.03,
        verdict=verdict,
        reason=reason or f"{verdict} at this threshold",
        flag=flag,
        levels=levels,
    )


def _comparison(*results: MetricResult, common: CommonFinding | None = None) -> Comparison:
    return Comparison(
        base=SideInfo(commit=BASE_SHA, runs=["base-run"], branch="main", label="merge-base"),
        head=SideInfo(commit=HEAD_SHA, runs=["head-run"], branch="feature"),
        alpha=0.05,
        threshold=0.03,
        warnings=[],
        results=list(results),
        common_factor=common,
    )


def _flagged(key: str = FLAGGED, ratio: float = 1.45) -> MetricResult:
    return _result(
        key,
        "inconclusive",
        ratio,
        flag=POSSIBLE_REGRESSION,
        reason="+45% is far beyond the threshold, but the 95% CI still reaches below it",
    )


def possible() -> Comparison:
    """A possible regression and nothing that regressed outright."""
    return _comparison(
        _result(QUIET, "unchanged", 1.0),
        _result(FAST, "improvement", 0.7),
        _flagged(),
        _result(NOISY, "inconclusive", 1.02),
    )


def _terminal(comparison: Comparison) -> str:
    console = Console(file=io.StringIO(), width=240, color_system=None)
    render_terminal(comparison, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def test_possible_regression_is_never_green() -> None:
    comparison = possible()
    assert comparison.possible_regressions() and not comparison.has_regression()
    assert headline_icon(comparison) not in ("✅", "⚠️")
    assert check_conclusion(comparison) == "neutral"
    assert status_state(comparison) == "pending"
    assert "1 possible regression" in check_title(comparison)
    assert has_changes(comparison)


def test_summary_counts_possible_regressions_after_regressions_once() -> None:
    comparison = _comparison(
        _result(SLOW, "regression", 1.3),
        _flagged(),
        _flagged("attention[heads=32]", 1.6),
        _result(FAST, "improvement", 0.7),
        _result(NOISY, "inconclusive", 1.02),
    )
    # The flagged results are inconclusive too, but counted once, as possible regressions.
    assert summary_phrase(comparison) == (
        "1 regression, 2 possible regressions, 1 improvement, 1 inconclusive"
    )
    assert status_description(comparison) == summary_phrase(comparison)
    # A regression still decides: failure, and the ⚠️ headline.
    assert headline_icon(comparison) == "⚠️"
    assert check_conclusion(comparison) == "failure"
    assert status_state(comparison) == "failure"


def test_flagged_rows_come_right_after_regressions() -> None:
    results = [
        _result(QUIET, "unchanged", 1.0),
        _result(FAST, "improvement", 0.7),
        _flagged("attention[heads=32]", 1.3),
        _result(NOISY, "inconclusive", 1.02),
        _result(SLOW, "regression", 1.2),
        _flagged(FLAGGED, 1.6),
    ]
    ordered = [r.key for r in severity_order(results)]
    assert ordered == [SLOW, FLAGGED, "attention[heads=32]", FAST, QUIET, NOISY]


def test_markdown_names_the_possible_regression_in_words() -> None:
    rendered = render_markdown(possible())
    lines = rendered.splitlines()
    assert lines[0].startswith(
        f"### 🟡 1 possible regression (`{FLAGGED}` time +45.0%), 1 improvement, "
    )
    assert "✅" not in lines[0]
    changes = [line for line in lines if line.startswith("| `")]
    # The changes table holds the improvement; the possible regression has its own section
    # after it, with why; the plain inconclusive one is folded with the other results.
    assert changes[0].startswith(f"| `{FAST}` ") and changes[0].endswith("| 🟢 improvement |")
    assert changes[1].startswith(f"| `{FLAGGED}` ")
    assert changes[1].endswith(
        "| 🟡 inconclusive · possible regression | +45% is far beyond the threshold, but the "
        "95% CI still reaches below it |"
    )
    section = lines.index(
        "**1 possible regression**: changed far beyond the threshold, but the 95% CI still "
        "reaches below it; more rounds (`perfgate run --rounds 3`) decide whether it is real."
    )
    assert lines.index(changes[0]) < section < lines.index(changes[1])
    assert changes[2].startswith(f"| `{NOISY}` ") and changes[2].endswith(
        "| 🟡 inconclusive | inconclusive at this threshold |"
    )
    assert "<details><summary>Other results: 1 inconclusive; 1 unchanged</summary>" in lines


def test_possible_regressions_stay_out_of_the_regressions_details() -> None:
    ops = [OpDelta("aten::mm", 10.0, 20.0, 10.0, 1, 1)]
    comparison = _comparison(
        replace(_result(SLOW, "regression", 1.3), attribution=ops),
        replace(_flagged(), attribution=[OpDelta("aten::bmm", 1.0, 9.0, 8.0, 1, 1)]),
    )
    lines = render_markdown(comparison).splitlines()
    details = lines.index(f"**`{SLOW}`**: time +30.0%")
    section = next(i for i, line in enumerate(lines) if line.startswith("**1 possible regr"))
    assert details < section
    assert f"**`{FLAGGED}`**" not in "\n".join(lines)  # no details section of its own
    assert any(line.startswith("| `aten::mm` ") for line in lines[details:section])
    assert not any("aten::bmm" in line for line in lines)  # the short section has no ops
    table = [line for line in lines[:details] if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in table] == [f"| `{SLOW}`"]


def test_terminal_names_the_possible_regression_in_words() -> None:
    text = _terminal(possible())
    first, *rest = text.splitlines()
    assert first.startswith(f"🟡 1 possible regression ({FLAGGED} time +45.0%), ")
    row = next(line for line in rest if line.startswith(FLAGGED))
    assert "inconclusive · possible regression" in row
    assert "far beyond the threshold" in row
    rows = [line.split()[0] for line in rest if line.split() and "[" in line.split()[0]]
    assert rows[:2] == [FLAGGED, FAST]


def test_json_carries_flags_levels_and_affected_and_reads_them_back() -> None:
    common = CommonFinding(
        ratio=1.24,
        ci=(1.2, 1.28),
        benchmarks=13,
        verdict="regression",
        reason="the suite moved together",
        noise="round-to-round spread",
        affected=(SLOW, QUIET),
    )
    comparison = _comparison(
        _flagged(),
        _result(MODES, "unchanged", 1.0, levels=(1.0, 1.31)),
        _result(QUIET, "unchanged", 1.0),
        common=common,
    )
    data = json.loads(json.dumps(comparison_to_json(comparison)))
    by_key = {r["key"]: r for r in data["results"]}
    assert by_key[FLAGGED]["flag"] == "possible_regression"
    assert by_key[QUIET]["flag"] is None and "levels" not in by_key[QUIET]
    assert by_key[MODES]["levels"] == [1.0, 1.31]
    assert data["common_factor"]["affected"] == [SLOW, QUIET]
    again = comparison_from_json(data)
    assert again == comparison
    assert render_markdown(again) == render_markdown(comparison)


def test_json_without_the_new_fields_still_reads() -> None:
    common = CommonFinding(
        ratio=1.1, ci=(1.05, 1.15), benchmarks=3, verdict="regression", reason="r", noise="n"
    )
    data = comparison_to_json(_comparison(_result(QUIET, "unchanged", 1.0), common=common))
    for result in data["results"]:
        del result["flag"]
    del data["common_factor"]["affected"]
    again = comparison_from_json(data)
    assert again.results[0].flag is None and again.results[0].levels == ()
    assert again.common_factor is not None and again.common_factor.affected == ()
    data["results"][0]["flag"] = "maybe_faster"
    with pytest.raises(DocumentError, match=r"results\[0\]\.flag: must be 'possible_regression'"):
        comparison_from_json(data)


def test_speed_levels_are_shown_next_to_the_row() -> None:
    comparison = _comparison(_result(MODES, "inconclusive", 1.0, levels=(1.0, 1.31)))
    row = next(line for line in render_markdown(comparison).splitlines() if MODES in line)
    assert row.endswith(
        "| 🟡 inconclusive · speed levels 1.00x / 1.31x | inconclusive at this threshold |"
    )
    text = _terminal(comparison)
    assert "speed levels 1.00x / 1.31x" in next(line for line in text.splitlines() if MODES in line)


def _shift(affected: int) -> Comparison:
    keys = [f"kernel[n={i}]" for i in range(13)]
    common = CommonFinding(
        ratio=1.24,
        ci=(1.19, 1.29),
        benchmarks=13,
        verdict="regression",
        reason="13 benchmarks' head/base ratios centre on +24%",
        noise="round-to-round spread",
        affected=tuple(keys[:affected]),
    )
    results = [
        _result(k, "regression" if i < affected else "unchanged", 1.24 if i < affected else 1.0)
        for i, k in enumerate(keys)
    ]
    return _comparison(*results, common=common)


def test_a_suite_wide_shift_lists_the_benchmarks_that_moved() -> None:
    comparison = _shift(3)
    assert summary_phrase(comparison).startswith("3 of 13 benchmarks +24.0% together, ")
    lines = render_markdown(comparison).splitlines()
    assert lines[0].startswith(
        "### ⚠️ 3 of 13 benchmarks +24.0% together, 3 regressions (worst `kernel[n=0]` time "
        "+24.0%), 10 unchanged · "
    )
    assert lines[4] == (
        "Moved together (+24.0%, 95% CI +19.0% … +29.0%): "
        "`kernel[n=0]`, `kernel[n=1]`, `kernel[n=2]`."
    )
    first = regression_annotations(comparison)[0]
    assert first.title == "perfgate: 3 of 13 benchmarks +24.0% together, slower"
    assert first.message.endswith("Moved together: kernel[n=0], kernel[n=1], kernel[n=2].")
    text = _terminal(comparison)
    assert "moved together: kernel[n=0], kernel[n=1], kernel[n=2]" in text


def test_a_long_affected_list_is_cut_short() -> None:
    lines = render_markdown(_shift(11)).splitlines()
    assert lines[4].endswith("`kernel[n=7]` and 3 more.")
    assert "`kernel[n=8]`" not in lines[4]


def test_annotations_warn_on_possible_regressions_after_regressions() -> None:
    comparison = _comparison(
        _result(SLOW, "regression", 1.3), _flagged(), _result(QUIET, "unchanged", 1.0)
    )
    notes = regression_annotations(comparison)
    assert [n.title for n in notes] == [
        f"perfgate: {SLOW} time regressed",
        f"perfgate: {FLAGGED} time possible regression",
    ]
    assert notes[1].message.startswith(f"{FLAGGED} time: 100 µs → 145 µs (+45.0%, 95% CI ")
    many = _comparison(
        *(_result(f"slow[n={i}]", "regression", 1.3) for i in range(5)),
        *(_flagged(f"flagged[n={i}]") for i in range(5)),
    )
    notes = regression_annotations(many)
    assert len(notes) == 8
    assert notes[-1].message == (
        "3 more possible regressions: see the job summary or the PR comment"
    )
    mixed = regression_annotations(many, limit=4)
    assert mixed[-1].message.startswith("7 more regressions and possible regressions")


def test_dashboard_links_the_possible_regressions_trend() -> None:
    assert (FLAGGED, "time", "possible_regression") in changed_keys(possible())


def test_fail_on_regression_ignores_possible_regressions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("perfgate.cli.compare.build_comparison", lambda **_kw: possible())
    result = CliRunner().invoke(
        cli, ["compare", "main", "feature", "--fail-on-regression", "--format", "markdown"]
    )
    assert result.exit_code == 0, result.output
    assert "🟡 inconclusive · possible regression" in result.output


def _write(path: Path, comparison: Comparison) -> Path:
    path.write_text(json.dumps(comparison_to_json(comparison)))
    return path


def test_comment_posts_pending_status_neutral_check_and_a_warning(
    github: FakeGitHub, actions_env: Env, comment: Callable[..., Result], tmp_path: Path
) -> None:
    github.add_pull(7, HEAD_SHA)
    result = comment(str(_write(tmp_path / "c.json", possible())), env=actions_env)
    assert result.exit_code == 0, result.output
    assert "🟡 inconclusive · possible regression" in body_of(github)
    (status,) = github.statuses
    assert status["state"] == "pending"
    assert status["description"].startswith("1 possible regression, ")
    (check,) = github.check_runs
    assert check["conclusion"] == "neutral"
    assert check["output"]["title"].startswith("1 possible regression")
    warnings = [line for line in result.stdout.splitlines() if line.startswith("::warning ")]
    assert len(warnings) == 1 and f"{FLAGGED} time possible regression" in warnings[0]


def test_on_regression_mode_comments_on_a_possible_regression(
    github: FakeGitHub, actions_env: Env, comment: Callable[..., Result], tmp_path: Path
) -> None:
    github.add_pull(7, HEAD_SHA)
    quiet = _comparison(_result(QUIET, "unchanged", 1.0), _result(NOISY, "inconclusive", 1.02))
    args: list[Any] = ["--mode", "on-regression"]
    result = comment(str(_write(tmp_path / "q.json", quiet)), *args, env=actions_env)
    assert result.exit_code == 0, result.output
    assert not github.perfgate_comments(7)
    assert github.statuses[-1]["state"] == "success"
    result = comment(str(_write(tmp_path / "p.json", possible())), *args, env=actions_env)
    assert result.exit_code == 0, result.output
    assert "possible regression" in body_of(github)
