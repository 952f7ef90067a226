"""Conversion between the results document and table rows, in both directions.

Storing then rebuilding a document gives back the same content (same `content_hash`): nothing a
runner sent is lost in the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from perfgate.document_json import same_json
from perfgate.results import Benchmark, ResultsDocument, parse_document
from perfgate.stats.summary import Summary, median_ci, summarize_value
from perfgate.store import models
from perfgate.store.row_writes import unpack_samples


def environment_overrides(shared: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """How `own` differs from the shared environment row: fields to set and fields to drop.

    Compared as JSON values (`same_json`), so that `true`, `1` and `1.0` are three values here as
    they are in the document and its content hash.
    """
    return {
        "set": {k: v for k, v in own.items() if k not in shared or not same_json(shared[k], v)},
        "unset": sorted(k for k in shared if k not in own),
    }


def apply_overrides(shared: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = {**shared, **overrides.get("set", {})}
    for key in overrides.get("unset", []):
        merged.pop(key, None)
    return merged


def run_row(
    document: ResultsDocument,
    *,
    project_id: int,
    environment: models.Environment,
    content_hash: str,
) -> models.Run:
    run = document.run
    own_env = document.environment.as_dict()
    return models.Run(
        id=run.id,
        project_id=project_id,
        commit=run.commit,
        branch=run.branch,
        pr=run.pr,
        base_commit=run.base_commit,
        started_at=run.started_at,
        finished_at=run.finished_at,
        environment_id=environment.id,
        environment_overrides=environment_overrides(environment.data, own_env),
        ci=run.ci,
        content_hash=content_hash,
    )


# Column order of the rows the generators below yield (the writer in store/bulk.py names them).
INSTANCE_COLUMNS = (
    "run_id",
    "benchmark_id",
    "position",
    "device",
    "error",
    "tags",
    "has_profile",
    "trace",
    "benchmark_override",
)
MEASUREMENT_COLUMNS = (
    "run_id",
    "benchmark_id",
    "metric",
    "unit",
    "direction",
    "exact",
    "n",
    "median",
    "iqr",
    "min",
    "max",
    "ci_low",
    "ci_high",
    "samples",
    "rounds",
    "value",
    "method",
    "note",
    "branch",
    "started_at",
)
OP_COLUMNS = ("run_id", "benchmark_id", "op", "count", "self_cpu_us", "self_device_us", "flops")

# Benchmarks summarised together: numpy works on one array per sample count in a chunk, and the
# chunk bounds what is held at once however large the document.
SUMMARY_CHUNK = 2048


def benchmark_override(
    bench: Benchmark, stored: tuple[str, dict[str, Any]] | None
) -> dict[str, Any] | None:
    """The instance's `benchmark_override`: its name and params where they differ, as JSON, from
    the `stored` (name, params) of the benchmark row its key shares; None where they do not.

    A key does not tell every pair apart: params `1`, `1.0`, `true` and `"1"` give `k[n=1]`,
    `k[n=1.0]`, `k[n=True]` and `k[n=1]`, and a name may itself look like `k[n=1]`.
    """
    if stored is None:
        return None
    name, params = stored
    if name == bench.name and same_json(params, bench.params):
        return None
    return {"name": bench.name, "params": bench.params}


def instance_rows(
    document: ResultsDocument,
    *,
    benchmark_ids: dict[str, int],
    stored: Mapping[str, tuple[str, dict[str, Any]]] | None = None,
    first_position: int = 0,
) -> Iterator[tuple[Any, ...]]:
    """One `instances` row (INSTANCE_COLUMNS) per benchmark, in document order, the first at
    `first_position` (where `document` holds a slice of the run's benchmarks).

    `stored` maps the keys of benchmark rows whose stored (name, params) may differ from the
    document's to them (`benchmark_override`); a key not in it has the document's own.
    """
    run_id = document.run.id
    before = stored or {}
    for position, bench in enumerate(document.benchmarks, first_position):
        yield (
            run_id,
            benchmark_ids[bench.key],
            position,
            bench.device,
            bench.error,
            bench.tags,
            bench.profile is not None,
            bench.profile.trace if bench.profile else None,
            benchmark_override(bench, before.get(bench.key)),
        )


def measurement_rows(
    document: ResultsDocument, *, benchmark_ids: dict[str, int]
) -> Iterator[tuple[Any, ...]]:
    """One `measurements` row (MEASUREMENT_COLUMNS) per metric, in document order.

    The summary columns are exactly `summarize` and `stored_median_ci` of the samples, computed a
    chunk of benchmarks at a time.
    """
    run = document.run
    benchmarks = document.benchmarks
    for start in range(0, len(benchmarks), SUMMARY_CHUNK):
        chunk = benchmarks[start : start + SUMMARY_CHUNK]
        sampled = [m.samples for b in chunk for m in b.metrics.values() if m.samples is not None]
        summaries = iter(sample_summaries(sampled))
        for bench in chunk:
            bench_id = benchmark_ids[bench.key]
            for metric_name, metric in bench.metrics.items():
                if metric.samples is not None:
                    summary, ci, blob = next(summaries)
                else:
                    assert metric.value is not None
                    summary, ci, blob = summarize_value(metric.value), None, None
                yield (
                    run.id,
                    bench_id,
                    metric_name,
                    metric.unit,
                    metric.direction,
                    metric.exact,
                    summary.n,
                    summary.median,
                    summary.iqr,
                    summary.min,
                    summary.max,
                    ci[0] if ci else None,
                    ci[1] if ci else None,
                    blob,
                    metric.rounds,
                    metric.value,
                    metric.method,
                    metric.note,
                    run.branch,
                    run.started_at,
                )


def op_rows(
    document: ResultsDocument, *, benchmark_ids: dict[str, int]
) -> Iterator[tuple[Any, ...]]:
    """One `ops` row (OP_COLUMNS) per profiled operator, in document order."""
    run_id = document.run.id
    for bench in document.benchmarks:
        if bench.profile is None:
            continue
        bench_id = benchmark_ids[bench.key]
        for op in bench.profile.ops:
            yield (
                run_id,
                bench_id,
                op.op,
                op.count,
                op.self_cpu_us,
                op.self_device_us,
                op.flops,
            )


Stored = tuple[Summary, tuple[float, float] | None, bytes]


def sample_summaries(sample_lists: Sequence[Sequence[float]]) -> list[Stored]:
    """Per sample list: its `summarize`, its `stored_median_ci` and its packed samples.

    Equal to calling those functions one list at a time (a test checks it value for value), but
    with one numpy call per distinct sample count instead of several per list: per-list numpy
    calls cost more than the COPY of the rows.
    """
    out: list[Stored | None] = [None] * len(sample_lists)
    by_count: dict[int, list[int]] = {}
    for i, samples in enumerate(sample_lists):
        by_count.setdefault(len(samples), []).append(i)
    for n, where in by_count.items():
        values = np.array([sample_lists[i] for i in where], dtype="<f8").reshape(len(where), n)
        q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75], axis=1).tolist()
        lows, highs = values.min(axis=1).tolist(), values.max(axis=1).tolist()
        if n >= 6:
            # median_ci of the ranks 0..n-1 is the pair of ranks it picks.
            lo, hi = (int(r) for r in median_ci(range(n), presorted=True))
            ordered = np.sort(values, axis=1)
            cis: list[tuple[float, float] | None] = list(
                zip(ordered[:, lo].tolist(), ordered[:, hi].tolist(), strict=True)
            )
        else:
            cis = [None] * len(where)
        for j, i in enumerate(where):
            summary = Summary(n=n, median=median[j], iqr=q3[j] - q1[j], min=lows[j], max=highs[j])
            out[i] = (summary, cis[j], values[j].tobytes())
    return [stored for stored in out if stored is not None]


def rebuild_document(session: Session, *, run_id: str) -> ResultsDocument | None:
    """The results document of a stored run, as it was uploaded; None if the run is unknown."""
    run = session.get(models.Run, run_id)
    if run is None:
        return None
    project = session.get(models.Project, run.project_id)
    environment = session.get(models.Environment, run.environment_id)
    assert project is not None and environment is not None

    instances = session.execute(
        select(models.Instance, models.Benchmark)
        .join(models.Benchmark, models.Benchmark.id == models.Instance.benchmark_id)
        .where(models.Instance.run_id == run_id)
        .order_by(models.Instance.position)
    ).all()
    metrics: dict[int, dict[str, Any]] = {}
    for m in session.scalars(
        select(models.Measurement)
        .where(models.Measurement.run_id == run_id)
        .order_by(models.Measurement.id)
    ):
        entry: dict[str, Any] = {
            "unit": m.unit,
            "direction": m.direction,
            "exact": m.exact,
            "method": m.method,
            "note": m.note,
        }
        if m.samples is not None:
            entry["samples"] = unpack_samples(m.samples)
            entry["rounds"] = m.rounds
        else:
            entry["value"] = m.value
        metrics.setdefault(m.benchmark_id, {})[m.metric] = entry
    ops: dict[int, list[dict[str, Any]]] = {}
    for op in session.scalars(
        select(models.Op).where(models.Op.run_id == run_id).order_by(models.Op.id)
    ):
        ops.setdefault(op.benchmark_id, []).append(
            {
                "op": op.op,
                "count": op.count,
                "self_cpu_us": op.self_cpu_us,
                "self_device_us": op.self_device_us,
                "flops": op.flops,
            }
        )

    benchmarks = []
    for instance, bench in instances:
        own = instance.benchmark_override or {"name": bench.name, "params": bench.params}
        benchmarks.append(
            {
                "name": own["name"],
                "params": own["params"],
                "key": bench.key,
                "device": instance.device,
                "error": instance.error,
                "tags": instance.tags,
                "metrics": metrics.get(bench.id, {}),
                "profile": (
                    {"ops": ops.get(bench.id, []), "trace": instance.trace}
                    if instance.has_profile
                    else None
                ),
            }
        )
    data = {
        "schema": "perfgate/results@1",
        "run": {
            "id": run.id,
            "project": project.name,
            "commit": run.commit,
            "branch": run.branch,
            "pr": run.pr,
            "base_commit": run.base_commit,
            "started_at": run.started_at.isoformat(),
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "ci": run.ci,
        },
        "environment": apply_overrides(environment.data, run.environment_overrides),
        "benchmarks": benchmarks,
    }
    return parse_document(data, source=f"run {run_id}")
