"""Metrics a results document declares informational (a `note` starting "informational"):
the comparator never decides on them, and the PR comment counts them instead of listing them
among the inconclusive results a reader should look at."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from perfgate.report.comment_parts import compared_line
from perfgate.report.comparison_document import comparison_from_json, comparison_to_json
from perfgate.report.markdown import render_markdown
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison, MetricResult
from synthetic import synthetic_document

KEY = "kernel[n=64,variant=0]"
WALL_NOTE = "informational: wall seconds of the cold compile, which follow the machine's load"


def _doc(seed: int, commit: str, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    doc = synthetic_document(benchmarks=4, samples=12, seed=seed, commit=commit)
    (bench,) = [b for b in doc["benchmarks"] if b["key"] == KEY]
    bench["metrics"].update(metrics)
    return doc


def _wall(value: float) -> dict[str, Any]:
    return {
        "unit": "s",
        "direction": "lower",
        "value": value,
        "method": "cold_wall",
        "note": WALL_NOTE,
    }


def _compare(base: dict[str, Any], head: dict[str, Any]) -> Comparison:
    return compare_documents([parse_document(base)], [parse_document(head)])


def _result(comparison: Comparison, metric: str) -> MetricResult:
    (found,) = [r for r in comparison.results if r.key == KEY and r.metric == metric]
    return found


def test_an_informational_value_is_marked_and_never_a_regression():
    comparison = _compare(
        _doc(1, "a" * 40, {"compile_wall_time": _wall(12.0)}),
        _doc(2, "b" * 40, {"compile_wall_time": _wall(24.0)}),
    )
    result = _result(comparison, "compile_wall_time")
    assert result.informational
    assert result.verdict == "inconclusive"
    assert not _result(comparison, "time").informational
    # The mark survives the comparison document.
    again = comparison_from_json(comparison_to_json(comparison))
    assert _result(again, "compile_wall_time").informational


def test_an_informational_sampled_metric_is_not_a_regression_either():
    note = "informational: a figure for people to read"
    slow = {"unit": "s", "direction": "lower", "samples": [2.0] * 12, "note": note}
    fast = {"unit": "s", "direction": "lower", "samples": [1.0] * 12, "note": note}
    comparison = _compare(
        _doc(1, "a" * 40, {"warm_time": fast}), _doc(2, "b" * 40, {"warm_time": slow})
    )
    result = _result(comparison, "warm_time")
    assert result.informational
    assert result.verdict == "inconclusive"
    assert result.flag is None
    assert result.reason.startswith("informational: ")


def test_the_comment_counts_inconclusive_informational_rows_without_listing_them():
    comparison = _compare(
        _doc(1, "a" * 40, {"compile_wall_time": _wall(12.0)}),
        _doc(2, "a" * 40, {"compile_wall_time": _wall(24.0)}),
    )
    assert _result(comparison, "compile_wall_time").verdict == "inconclusive"
    text = render_markdown(comparison)
    listed = [
        line for line in text.splitlines() if line.startswith("|") and "compile_wall_time" in line
    ]
    assert listed == []
    assert "1 informational, not listed" in text
    # Alone, it does not ask for more rounds: more rounds would not settle it.
    alone = replace(comparison, results=[_result(comparison, "compile_wall_time")])
    assert "Inconclusive results narrow" not in compared_line(alone, quiet=True)
