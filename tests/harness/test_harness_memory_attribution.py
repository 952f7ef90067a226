"""Live: the demo's planted copy in `layer_norm` is a memory regression that names `aten::clone`.

Only exact facts are asserted (bytes and op names, the same on every run); timings are not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from perfgate.harness.runner import RunOptions, run_benchmarks
from perfgate.results import ResultsDocument
from perfgate.stats.compare_documents import compare_documents

MICRO = Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "bench_micro.py"
# The planted copy: one more 512x768 float32 input per call.
COPY_BYTES = 512 * 768 * 4


def _layer_norm(monkeypatch: pytest.MonkeyPatch, *, planted: bool, commit: str) -> ResultsDocument:
    monkeypatch.setenv("PERFGATE_DEMO_SLOWDOWN", "1" if planted else "0")
    return run_benchmarks(
        RunOptions(
            paths=(MICRO,),
            filter="layer_norm",
            device="cpu",
            max_time=0.05,
            threads=1,
            commit=commit,
            branch="main",
            project="acme/demo",
        )
    )


def test_the_demos_planted_copy_is_a_memory_regression_naming_the_clone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = _layer_norm(monkeypatch, planted=False, commit="a" * 40)
    head = _layer_norm(monkeypatch, planted=True, commit="b" * 40)
    comparison = compare_documents([base], [head])
    for metric in ("allocated_bytes", "peak_allocated_bytes"):
        (result,) = [r for r in comparison.results if r.metric == metric]
        assert result.verdict == "regression", result.reason
        assert result.base is not None and result.head is not None
        assert result.head.median - result.base.median == COPY_BYTES
        first = result.allocation_attribution[0]
        assert (first.op, first.base_bytes, first.delta_bytes) == ("aten::clone", 0, COPY_BYTES)
        assert (first.base_count, first.head_count) == (0, 1)
        assert sum(d.delta_bytes for d in result.allocation_attribution) == COPY_BYTES
