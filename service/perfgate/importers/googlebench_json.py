"""Google Benchmark's `--benchmark_format=json` output: each repetition is a sample of its
per-iteration time; aggregate rows (mean, median, stddev, cv, BigO, RMS) are never counted as
samples; user counters become metrics (docs/importers.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from perfgate.errors import DocumentError
from perfgate.importers.common import (
    SUMMARY_METHOD,
    ImportedBenchmark,
    ImportedFile,
    ImportedMetric,
    Node,
    load_json,
    metric_name,
    parse_time,
)
from perfgate.results import Direction, ParamValue

FORMAT = "googlebench"

TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# Fields of a benchmark row that are not user counters.
_ROW_FIELDS = frozenset(
    {
        "name",
        "family_index",
        "per_family_instance_index",
        "run_name",
        "run_type",
        "repetitions",
        "repetition_index",
        "threads",
        "iterations",
        "real_time",
        "cpu_time",
        "time_unit",
        "aggregate_name",
        "aggregate_unit",
        "error_occurred",
        "error_message",
        "skipped",
        "skip_message",
        "label",
        "big_o",
        "rms",
        "complexity_n",
    }
)
# Name parts that say how the benchmark was sampled, not which benchmark it is: dropped from the
# key, so that changing --benchmark_min_time or Repetitions() keeps the history.
_SAMPLING_PARTS = frozenset({"repeats", "min_time", "min_warmup_time"})
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
# Google Benchmark's own rate counters, and what perfgate calls them.
_RATES = {
    "items_per_second": ("throughput", "items/s"),
    "bytes_per_second": ("bytes_per_second", "B/s"),
}


@dataclass
class _Instance:
    name: str
    params: dict[str, ParamValue]
    where: str
    source: str
    real: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    counters: dict[str, list[float]] = field(default_factory=dict)
    median: tuple[float, float] | None = None
    repetitions: int = 1
    error: str | None = None


def import_googlebench(raw: bytes, *, source: str) -> ImportedFile:
    """Read one Google Benchmark JSON file (C++ library or the `google_benchmark` bindings)."""
    root = load_json(raw, source=source)
    context = root.get("context")
    instances: dict[str, _Instance] = {}
    for row in root.get("benchmarks").list():
        run_name = (row.opt("run_name") or row.get("name")).name()
        instance = instances.get(run_name)
        if instance is None:
            name, params = split_name(run_name)
            instance = instances[run_name] = _Instance(name, params, row.path, source)
        _add_row(instance, row)
    date = context.opt("date")
    return ImportedFile(
        source=source,
        benchmarks=[_benchmark(i) for i in instances.values()],
        environment=_environment(context),
        started_at=parse_time(date.text()) if date is not None else None,
    )


def split_name(run_name: str) -> tuple[str, dict[str, ParamValue]]:
    """`BM_mm/64/threads:2/real_time` -> (`BM_mm`, {arg0: 64, threads: 2, real_time: True})."""
    family, *parts = run_name.split("/")
    params: dict[str, ParamValue] = {}
    position = 0
    for part in parts:
        label, colon, text = part.partition(":")
        if colon and label in _SAMPLING_PARTS:
            continue
        if colon:
            params[label] = _param(text)
        elif _NUMBER.fullmatch(part):
            params[f"arg{position}"] = _param(part)
            position += 1
        else:
            params[part] = True
    return family, params


def _param(text: str) -> ParamValue:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return float(text)
    return text


def _add_row(instance: _Instance, row: Node) -> None:
    data = row.obj()
    if data.get("error_occurred") or (data.get("skipped") and data.get("error_message")):
        message = data.get("error_message") or data.get("skip_message") or "error"
        instance.error = f"Google Benchmark reported an error: {message}"
        return
    run_type = data.get("run_type", "iteration")
    scale = _time_scale(row)
    if run_type == "aggregate":
        # Aggregates restate the repetitions; only the median is kept, for files written with
        # --benchmark_report_aggregates_only that have no repetitions to read.
        if data.get("aggregate_name") == "median":
            real = row.get("real_time").sample() * scale
            cpu = row.get("cpu_time").sample() * scale
            instance.median = (real, cpu)
            repetitions = row.opt("repetitions")
            instance.repetitions = repetitions.count() if repetitions else 1
        return
    if run_type != "iteration":
        raise row.get("run_type").error(f"unknown run_type {run_type!r}")
    row.get("iterations").count()
    # real_time and cpu_time are per iteration already (Google Benchmark divides by iterations).
    instance.real.append(row.get("real_time").sample() * scale)
    instance.cpu.append(row.get("cpu_time").sample() * scale)
    for key, value in row.items():
        if key in _ROW_FIELDS:
            continue
        instance.counters.setdefault(key, []).append(value.number())


def _time_scale(row: Node) -> float:
    unit_node = row.opt("time_unit")
    unit = unit_node.text() if unit_node is not None else "ns"
    if unit not in TIME_UNITS:
        assert unit_node is not None
        raise unit_node.error(f"unknown time unit {unit!r} (expected ns, us, ms or s)")
    return TIME_UNITS[unit]


def _benchmark(instance: _Instance) -> ImportedBenchmark:
    metrics: dict[str, ImportedMetric] = {}
    # `time` is the time Google Benchmark itself goes by: CPU time, unless the benchmark asked
    # for wall-clock (UseRealTime) or its own (UseManualTime), which the name then says.
    wall = bool({"real_time", "manual_time"} & instance.params.keys())
    other = "cpu_time" if wall else "real_time"
    if instance.real:
        primary, secondary = (
            (instance.real, instance.cpu) if wall else (instance.cpu, instance.real)
        )
        metrics["time"] = ImportedMetric("s", "lower", samples=tuple(primary))
        metrics[other] = ImportedMetric("s", "lower", samples=tuple(secondary))
        for raw_name, values in instance.counters.items():
            name, unit, direction = _counter(raw_name)
            if name in metrics:
                raise DocumentError(
                    f"counter {raw_name!r} of {instance.name!r} collides with metric {name!r}",
                    path=instance.where,
                    source=instance.source,
                )
            if len(values) != len(instance.real):
                continue  # a counter set in some repetitions only has no samples to pair
            metrics[name] = ImportedMetric(unit, direction, samples=tuple(values))
    elif instance.median is not None:
        note = (
            f"Google Benchmark kept aggregates only: the median of {instance.repetitions} "
            "repetitions is one sample (drop --benchmark_report_aggregates_only to keep them)"
        )
        real, cpu = instance.median
        for name, value in (("time", real if wall else cpu), (other, cpu if wall else real)):
            metrics[name] = ImportedMetric(
                "s", "lower", samples=(value,), method=SUMMARY_METHOD, note=note
            )
    elif instance.error is None:
        instance.error = "Google Benchmark recorded no repetition for this benchmark"
    return ImportedBenchmark(
        name=instance.name,
        params=instance.params,
        metrics=metrics if instance.error is None else {},
        where=instance.where,
        error=instance.error,
    )


def _counter(raw_name: str) -> tuple[str, str, Direction]:
    if raw_name in _RATES:
        name, unit = _RATES[raw_name]
        return name, unit, "higher"
    name = metric_name(raw_name)
    # The JSON does not carry a counter's flags; a rate is the one kind whose name says so.
    if raw_name.endswith("_per_second"):
        return name, "1/s", "higher"
    return name, "1", "lower"


def _environment(context: Node) -> dict[str, Any]:
    info = context.obj()
    return {
        "importer": FORMAT,
        "tool_version": info.get("library_version"),
        "build_type": info.get("library_build_type"),
        "cores": info.get("num_cpus"),
        "mhz_per_cpu": info.get("mhz_per_cpu"),
        "cpu_scaling_enabled": info.get("cpu_scaling_enabled"),
        "aslr_enabled": info.get("aslr_enabled"),
        "caches": [
            f"L{c.get('level')} {c.get('type')} {c.get('size')}"
            for c in info.get("caches") or []
            if isinstance(c, dict)
        ],
        "hostname": info.get("host_name"),
    }
