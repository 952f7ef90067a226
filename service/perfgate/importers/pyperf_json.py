"""pyperf's JSON (`-o FILE`, `pyperf dump`'s input): each worker process's run is a round of its
values, warm-ups and calibration runs dropped, so the comparator sees the process-to-process noise
pyperf measured (docs/importers.md)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from perfgate.importers.common import (
    ImportedBenchmark,
    ImportedFile,
    ImportedMetric,
    Node,
    load_json,
)
from perfgate.results import Direction

FORMAT = "pyperf"

# pyperf's units: what the metric is called, its unit, and which way is better.
UNITS: dict[str, tuple[str, str, Direction]] = {
    "second": ("time", "s", "lower"),
    "byte": ("peak_memory", "B", "lower"),
    "integer": ("count", "1", "lower"),
}
# Machine fields of pyperf's metadata that describe the machine rather than one moment of it.
_MACHINE_FIELDS = (
    "cpu_model_name",
    "cpu_count",
    "cpu_affinity",
    "cpu_config",
    "aslr",
    "python_implementation",
    "python_version",
    "python_compiler",
    "platform",
    "timer",
)


def import_pyperf(raw: bytes, *, source: str) -> ImportedFile:
    """Read one pyperf JSON file (a single benchmark or a suite)."""
    root = load_json(raw, source=source)
    common = root.opt("metadata")
    shared = common.obj() if common is not None else {}
    nodes = root.get("benchmarks").list()
    benchmarks = [_benchmark(node, shared) for node in nodes]
    # Machine fields sit in the shared metadata of a suite, in the benchmark's own otherwise.
    own = nodes[0].opt("metadata") if nodes else None
    meta = {**(own.obj() if own is not None else {}), **shared}
    start, end = _span(nodes)
    return ImportedFile(
        source=source,
        benchmarks=benchmarks,
        environment=_environment(meta),
        started_at=start,
        finished_at=end,
    )


def _span(nodes: list[Node]) -> tuple[datetime | None, datetime | None]:
    """When the first run started and the last ended. pyperf writes local time without a zone,
    taken here as the importing machine's (the machine that ran pyperf, in CI)."""
    starts, ends = [], []
    for node in nodes:
        for run in node.get("runs").list():
            meta = run.opt("metadata")
            date = meta.opt("date") if meta is not None else None
            if date is None or not isinstance(date.value, str):
                continue
            try:
                when = datetime.fromisoformat(date.value).astimezone(timezone.utc)
            except ValueError:
                raise date.error("not a date") from None
            duration = meta.opt("duration") if meta is not None else None
            starts.append(when)
            ends.append(when + timedelta(seconds=duration.number() if duration else 0.0))
    return (min(starts), max(ends)) if starts else (None, None)


def _benchmark(node: Node, shared: dict[str, Any]) -> ImportedBenchmark:
    meta_node = node.opt("metadata")
    meta = {**shared, **(meta_node.obj() if meta_node is not None else {})}
    if "name" not in meta:
        raise (meta_node or node).error("missing field: metadata.name (the benchmark's name)")
    name = meta["name"]
    if not isinstance(name, str) or not name.strip():
        raise (meta_node or node).error("metadata.name must be a non-empty string")
    unit = meta.get("unit", "second")
    if unit not in UNITS:
        where = meta_node if meta_node is not None and "unit" in meta_node.obj() else node
        raise where.error(f"unknown unit {unit!r} (pyperf's are second, byte and integer)")
    metric, perfgate_unit, direction = UNITS[unit]
    samples: list[float] = []
    rounds: list[int] = []
    for run in node.get("runs").list():
        values = run.opt("values")
        # A run without values is pyperf's calibration of the loop count, or warm-ups only.
        if values is None or not values.list():
            continue
        samples.extend(v.sample() for v in values.list())
        rounds.append(len(values.list()))
    if not samples:
        return ImportedBenchmark(
            name=name,
            params={},
            metrics={},
            where=node.path,
            error="pyperf recorded no values for this benchmark (calibration or warm-ups only)",
        )
    return ImportedBenchmark(
        name=name,
        params={},
        metrics={
            metric: ImportedMetric(
                perfgate_unit, direction, samples=tuple(samples), rounds=tuple(rounds)
            )
        },
        where=node.path,
    )


def _environment(meta: dict[str, Any]) -> dict[str, Any]:
    env: dict[str, Any] = {"importer": FORMAT, "tool_version": meta.get("perf_version")}
    env.update({k: meta.get(k) for k in _MACHINE_FIELDS})
    env["hostname"] = meta.get("hostname")
    return env
