"""Metrics a results document declares informational (a `note` starting "informational"):
the comparator never decides on them, and the PR comment counts them instead of listing them
among the inconclusive results a reader should look at."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from extra_metrics import compare, document_with, result_of
from perfgate.report.comment_parts import compared_line
from perfgate.report.comparison_document import comparison_from_json, comparison_to_json
from perfgate.report.markdown import render_markdown

WALL_NOTE = "informational: wall seconds of the cold compile, which follow the machine's load"


def _wall(value: float) -> dict[str, Any]:
    return {
        "unit": "s",
        "direction": "lower",
        "value": value,
        "method": "cold_wall",
        "note": WALL_NOTE,
    }


def test_an_informational_value_is_marked_and_never_a_regression():
    comparison = compare(
        document_with(1, "a" * 40, {"compile_wall_time": _wall(12.0)}),
        document_with(2, "b" * 40, {"compile_wall_time": _wall(24.0)}),
    )
    result = result_of(comparison, "compile_wall_time")
    assert result.informational
    assert result.verdict == "inconclusive"
    assert not result_of(comparison, "time").informational
    # The mark survives the comparison document.
    again = comparison_from_json(comparison_to_json(comparison))
    assert result_of(again, "compile_wall_time").informational


def test_an_informational_sampled_metric_is_not_a_regression_either():
    note = "informational: a figure for people to read"
    slow = {"unit": "s", "direction": "lower", "samples": [2.0] * 12, "note": note}
    fast = {"unit": "s", "direction": "lower", "samples": [1.0] * 12, "note": note}
    comparison = compare(
        document_with(1, "a" * 40, {"warm_time": fast}),
        document_with(2, "b" * 40, {"warm_time": slow}),
    )
    result = result_of(comparison, "warm_time")
    assert result.informational
    assert result.verdict == "inconclusive"
    assert result.flag is None
    assert result.reason.startswith("informational: ")


def test_the_comment_counts_inconclusive_informational_rows_without_listing_them():
    comparison = compare(
        document_with(1, "a" * 40, {"compile_wall_time": _wall(12.0)}),
        document_with(2, "a" * 40, {"compile_wall_time": _wall(24.0)}),
    )
    assert result_of(comparison, "compile_wall_time").verdict == "inconclusive"
    text = render_markdown(comparison)
    listed = [
        line for line in text.splitlines() if line.startswith("|") and "compile_wall_time" in line
    ]
    assert listed == []
    assert "1 informational, not listed" in text
    # Alone, it does not ask for more rounds: more rounds would not settle it.
    alone = replace(comparison, results=[result_of(comparison, "compile_wall_time")])
    assert "Inconclusive results narrow" not in compared_line(alone, quiet=True)
