"""Conversion between the results document and table rows, in both directions.

Storing then rebuilding a document gives back the same content (same `content_hash`): nothing a
runner sent is lost in the store.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from perfgate.results import ResultsDocument, parse_document
from perfgate.stats.summary import stored_median_ci, summarize, summarize_value
from perfgate.store import models
from perfgate.store.repository import pack_samples, unpack_samples


def environment_overrides(shared: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """How `own` differs from the shared environment row: fields to set and fields to drop."""
    return {
        "set": {k: v for k, v in own.items() if k not in shared or shared[k] != v},
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


def child_rows(
    document: ResultsDocument, *, benchmark_ids: dict[str, int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows for instances, measurements and ops of every benchmark in the document."""
    run = document.run
    instances: list[dict[str, Any]] = []
    measurements: list[dict[str, Any]] = []
    ops: list[dict[str, Any]] = []
    for position, bench in enumerate(document.benchmarks):
        bench_id = benchmark_ids[bench.key]
        instances.append(
            {
                "run_id": run.id,
                "benchmark_id": bench_id,
                "position": position,
                "device": bench.device,
                "error": bench.error,
                "tags": bench.tags,
                "has_profile": bench.profile is not None,
                "trace": bench.profile.trace if bench.profile else None,
            }
        )
        for metric_name, metric in bench.metrics.items():
            ci: tuple[float, float] | None = None
            if metric.samples is not None:
                summary = summarize(metric.samples)
                blob: bytes | None = pack_samples(metric.samples)
                ci = stored_median_ci(metric.samples)
            else:
                assert metric.value is not None
                summary = summarize_value(metric.value)
                blob = None
            measurements.append(
                {
                    "run_id": run.id,
                    "benchmark_id": bench_id,
                    "metric": metric_name,
                    "unit": metric.unit,
                    "direction": metric.direction,
                    "exact": metric.exact,
                    "n": summary.n,
                    "median": summary.median,
                    "iqr": summary.iqr,
                    "min": summary.min,
                    "max": summary.max,
                    "ci_low": ci[0] if ci else None,
                    "ci_high": ci[1] if ci else None,
                    "samples": blob,
                    "rounds": metric.rounds,
                    "value": metric.value,
                    "method": metric.method,
                    "note": metric.note,
                    "branch": run.branch,
                    "started_at": run.started_at,
                }
            )
        if bench.profile is not None:
            ops.extend(
                {
                    "run_id": run.id,
                    "benchmark_id": bench_id,
                    "op": op.op,
                    "count": op.count,
                    "self_cpu_us": op.self_cpu_us,
                    "self_device_us": op.self_device_us,
                    "flops": op.flops,
                }
                for op in bench.profile.ops
            )
    return instances, measurements, ops


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
        benchmarks.append(
            {
                "name": bench.name,
                "params": bench.params,
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
