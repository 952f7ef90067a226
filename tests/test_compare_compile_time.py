"""compile_time has one figure per process: with rounds on both sides, their own spread is its
noise floor (simulated cold compiles, fixed seeds; each process a job, the sides alternating as
bench/compile_agreement.py runs them)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import MetricResult
from synthetic import synthetic_document

KEY = "kernel[n=64,variant=0]"


T0 = datetime(2026, 12, 4, tzinfo=timezone.utc)


def _jobs(side: int, commit: str, seconds: np.ndarray) -> list[Any]:
    """One job per compile, started alternately with the other side's."""
    docs = []
    for index, value in enumerate(seconds):
        doc = synthetic_document(
            benchmarks=4,
            samples=12,
            seed=100 * side + index,
            commit=commit,
            started_at=T0 + timedelta(minutes=2 * index + side),
        )
        (bench,) = [b for b in doc["benchmarks"] if b["key"] == KEY]
        bench["metrics"]["compile_time"] = {
            "unit": "s",
            "direction": "lower",
            "samples": [float(value)],
            "method": "cold_user_cpu",
        }
        docs.append(parse_document(doc))
    return docs


def _compile_time(base: np.ndarray, head: np.ndarray) -> MetricResult:
    comparison = compare_documents(_jobs(0, "a" * 40, base), _jobs(1, "b" * 40, head))
    (found,) = [r for r in comparison.results if r.key == KEY and r.metric == "compile_time"]
    return found


def _processes(seed: int, level: float, sd: float, n: int = 10) -> np.ndarray:
    return level * np.random.default_rng(seed).lognormal(0.0, sd, n)


def test_compiles_that_agree_across_processes_are_unchanged():
    result = _compile_time(_processes(3, 9.7, 0.01), _processes(4, 9.7, 0.01))
    assert result.verdict == "unchanged", result.reason
    assert result.noise is not None and "its own 20 processes" in result.noise


def test_a_ten_percent_slower_compile_is_a_regression():
    result = _compile_time(_processes(3, 9.7, 0.01), _processes(4, 10.67, 0.01))
    assert result.verdict == "regression", result.reason


def test_five_processes_a_side_are_few_samples_not_noisy_ones():
    # `perfgate demo` runs 5 rounds a side: five cold compiles are too few for an
    # order-statistic interval of the median, which is no sign that they spread.
    result = _compile_time(_processes(3, 9.7, 0.01, n=5), _processes(4, 9.7, 0.01, n=5))
    assert result.verdict == "unchanged", result.reason
    slower = _compile_time(_processes(3, 9.7, 0.01, n=5), _processes(4, 10.67, 0.01, n=5))
    assert slower.verdict == "regression", slower.reason


def test_compiles_that_spread_widely_are_not_called_unchanged():
    result = _compile_time(_processes(3, 9.7, 0.10), _processes(4, 9.7, 0.10))
    assert result.verdict == "inconclusive", result.reason


def test_one_process_a_side_keeps_the_suites_floor():
    result = _compile_time(_processes(3, 9.7, 0.01, n=1), _processes(4, 9.7, 0.01, n=1))
    assert result.noise is not None and "its own" not in result.noise
    assert result.verdict == "inconclusive"


def test_alternated_processes_already_hold_the_machine_in_their_spread():
    # Nothing divides the machine's speed out of a compile's figure, so with the sides
    # alternating its CI is the processes' own spread alone, not that plus the suite's
    # machine share (which made it 1.7 times as wide here).
    base, head = _processes(5, 9.7, 0.015, n=8), _processes(6, 9.7, 0.015, n=8)
    result = _compile_time(base, head)
    logs = [np.log(base), np.log(head)]
    process_var = sum(float(((x - x.mean()) ** 2).sum()) for x in logs) / 14
    half = float(scipy_stats.t.ppf(0.975, 14)) * math.sqrt(process_var * 2 * 1.04 / 8)
    assert result.ci is not None
    low, high = np.log(result.ci)
    assert (high - low) / 2 == pytest.approx(half, rel=0.1)
