"""The results@1 benchmark records the harness fills while it measures, typed from the start.

Measuring, the secondary passes, the worker's JSON lines and the merging of rounds all handle
`perfgate.results.Benchmark` and `Metric` objects. They are built unvalidated
(`model_construct`): a value the format refuses (a non-finite sample, an over-long note) must
not stop a measurement halfway, and surfaces instead where the finished record is checked as a
whole (`checked`), as a DocumentError that names the benchmark and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from perfgate.results import Benchmark, Metric, Op, Profile, parse_benchmark


def new_entry(
    name: str, key: str, params: Mapping[str, Any], device: str | None, tags: Sequence[str]
) -> Benchmark:
    """An instance's record before anything is measured: no metrics, no error, no profile."""
    return Benchmark.model_construct(
        name=name,
        params=dict(params),
        key=key,
        device=device,
        error=None,
        tags=list(tags),
        metrics={},
        profile=None,
    )


def sampled_metric(
    unit: str,
    samples: Sequence[float],
    *,
    direction: Literal["lower", "higher"] = "lower",
    method: str | None = None,
    note: str | None = None,
) -> Metric:
    """A noisy metric: one sample per call (or per process, for compile_time)."""
    return Metric.model_construct(
        unit=unit, direction=direction, samples=list(samples), method=method, note=note
    )


def exact_metric(unit: str, value: int, note: str | None = None) -> Metric:
    """A count that is the same on every run of the same code path (compared exactly)."""
    return Metric.model_construct(
        unit=unit, direction="lower", value=int(value), exact=True, note=note
    )


def value_metric(unit: str, value: float, *, method: str, note: str) -> Metric:
    """One measured value that is not exact (peak RSS, a compile's wall time)."""
    return Metric.model_construct(
        unit=unit, direction="lower", value=value, method=method, note=note
    )


def add_note(metric: Metric, note: str) -> None:
    """Append a sentence to a metric's `note` (several findings may concern one metric)."""
    metric.note = f"{metric.note}; {note}" if metric.note else note


def profile_of(ops: Sequence[Mapping[str, Any]], trace: str | None) -> Profile:
    """The profile pass's aggregated ops (`profile_events.aggregate` rows) and trace file."""
    return Profile.model_construct(ops=[Op.model_construct(**op) for op in ops], trace=trace)


def entry_json(entry: Benchmark) -> dict[str, Any]:
    """The record as results@1 JSON (fields at their defaults left out), e.g. a worker's line."""
    return entry.model_dump(by_alias=True, exclude_defaults=True)


def checked(entry: Benchmark, *, source: str, path: str) -> Benchmark:
    """The finished record validated as a results@1 benchmark (DocumentError names the field)."""
    return parse_benchmark(entry_json(entry), source=source, path=path)
