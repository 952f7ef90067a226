"""Comparisons of two small synthetic documents where one benchmark carries extra metrics.

Shared by the tests of how the comparator treats a metric's `method` and an informational note.
"""

from __future__ import annotations

from typing import Any

from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison, MetricResult
from synthetic import synthetic_document

KEY = "kernel[n=64,variant=0]"


def document_with(seed: int, commit: str, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A four-benchmark results document (fixed seed) whose KEY benchmark also has `metrics`."""
    doc = synthetic_document(benchmarks=4, samples=12, seed=seed, commit=commit)
    (bench,) = [b for b in doc["benchmarks"] if b["key"] == KEY]
    bench["metrics"].update(metrics)
    return doc


def compare(base: dict[str, Any], head: dict[str, Any]) -> Comparison:
    return compare_documents([parse_document(base)], [parse_document(head)])


def result_of(comparison: Comparison, metric: str) -> MetricResult:
    """KEY's result for `metric`."""
    (found,) = [r for r in comparison.results if r.key == KEY and r.metric == metric]
    return found
