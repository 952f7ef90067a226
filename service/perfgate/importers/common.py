"""What every importer shares: a JSON reader that names the bad field, the typed records an
importer returns, and the one function that turns them into a `perfgate/results@1` document.

An importer is pure: bytes (or decoded objects) in, an `ImportedFile` out; `build_document`
merges the files of one import (each file one round of the benchmarks it holds) and validates the
result with the same `parse_document` that serves `upload` and the API.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from perfgate.errors import DocumentError
from perfgate.results import (
    SCHEMA,
    Direction,
    ParamValue,
    ResultsDocument,
    decode_json,
    make_key,
    parse_document,
)

# Set on a metric that holds one summary statistic per file instead of the tool's samples.
SUMMARY_METHOD = "summary_median"
# Fields of an environment that differ between identical machines: not in the fingerprint.
VOLATILE_FIELDS = frozenset({"fingerprint", "hostname"})

_METRIC_BAD_CHARS = re.compile(r"[^a-z0-9_]+")


class Node:
    """One value of a decoded JSON file with its path, so that every complaint names the field."""

    def __init__(self, value: object, path: str, source: str) -> None:
        self.value = value
        self.path = path
        self.source = source

    def error(self, message: str) -> DocumentError:
        return DocumentError(message, path=self.path or "(file)", source=self.source)

    def _child_path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def obj(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.error(f"expected an object, got {_kind(self.value)}")
        return self.value

    def get(self, key: str) -> Node:
        data = self.obj()
        if key not in data:
            raise Node(None, self._child_path(key), self.source).error("missing field")
        return Node(data[key], self._child_path(key), self.source)

    def opt(self, key: str) -> Node | None:
        """The field, or None when it is absent or null."""
        data = self.obj()
        if data.get(key) is None:
            return None
        return Node(data[key], self._child_path(key), self.source)

    def items(self) -> Iterator[tuple[str, Node]]:
        for key, value in self.obj().items():
            yield key, Node(value, self._child_path(key), self.source)

    def list(self) -> list[Node]:
        if not isinstance(self.value, list):
            raise self.error(f"expected a list, got {_kind(self.value)}")
        return [Node(v, self._child_path(i), self.source) for i, v in enumerate(self.value)]

    def number(self) -> float:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"expected a number, got {_kind(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise self.error(f"{number} is not a finite number")
        return number

    def sample(self) -> float:
        """A finite, non-negative number (a time, a size, a count)."""
        number = self.number()
        if number < 0:
            raise self.error(f"negative value {number} is not a valid sample")
        return number

    def count(self) -> int:
        number = self.number()
        if number < 0 or not number.is_integer():
            raise self.error(f"expected a non-negative integer, got {self.value!r}")
        return int(number)

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self.error(f"expected a string, got {_kind(self.value)}")
        return self.value

    def name(self) -> str:
        text = self.text()
        if not text.strip():
            raise self.error("expected a non-empty name")
        return text


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return f"{type(value).__name__} {value!r}"[:60]


def load_json(raw: bytes, *, source: str) -> Node:
    """Decode a tool's JSON file; a DocumentError names the line and column of bad JSON."""
    data = decode_json(raw, source=source)
    return Node(data, "", source)


@dataclass(frozen=True)
class ImportedMetric:
    """One metric of one benchmark in one file: the samples of one round, or one value."""

    unit: str
    direction: Direction
    samples: tuple[float, ...] | None = None
    # Samples per round inside this file (a pyperf file holds several processes); None: one.
    rounds: tuple[int, ...] | None = None
    value: float | None = None
    exact: bool = False
    method: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class ImportedBenchmark:
    """One benchmark instance as a tool recorded it; `where` is its path in the source file."""

    name: str
    params: Mapping[str, ParamValue]
    metrics: Mapping[str, ImportedMetric]
    where: str
    error: str | None = None

    @property
    def key(self) -> str:
        return make_key(self.name, self.params)


@dataclass(frozen=True)
class ImportedFile:
    """What one file of a tool says: its benchmarks, its machine, and what it knows of the run."""

    source: str
    benchmarks: Sequence[ImportedBenchmark]
    environment: Mapping[str, Any]
    commit: str | None = None
    branch: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class RunFields:
    """The `run` section of the document an import writes (resolved by the caller)."""

    project: str
    commit: str
    branch: str | None = None
    pr: int | None = None
    base_commit: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    ci: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


def param_value(value: object) -> ParamValue:
    """A tool's parameter as a results-document param: scalars kept, the rest as stable JSON."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def metric_name(raw: str) -> str:
    """A tool's counter name as a metric name (lower-case letters, digits and _)."""
    name = _METRIC_BAD_CHARS.sub("_", raw.strip().lower()).strip("_")
    if not name or not name[0].isalpha():
        name = f"m_{name}"
    return name[:64]


def fingerprint(environment: Mapping[str, Any]) -> str:
    """sha256 of the environment's fields that describe the machine (not its hostname)."""
    relevant = {k: v for k, v in environment.items() if k not in VOLATILE_FIELDS}
    canonical = json.dumps(relevant, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def from_epoch_ms(value: float) -> datetime:
    return datetime.fromtimestamp(value / 1000.0, tz=timezone.utc)


def parse_time(text: str) -> datetime | None:
    """An ISO-8601 (or `YYYY-MM-DD HH:MM:SS`) time as UTC; None when it is not one."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


# --- merging the files of one import into one document -------------------------------------------


@dataclass
class _Merged:
    first: ImportedBenchmark
    source: str
    error: str | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    rounds: dict[str, list[int]] = field(default_factory=dict)
    values: dict[str, ImportedMetric] = field(default_factory=dict)
    heads: dict[str, ImportedMetric] = field(default_factory=dict)


def build_document(files: Sequence[ImportedFile], run: RunFields) -> ResultsDocument:
    """One results document from the files of one import.

    A benchmark found in several files gets one round per file (in the order given), as the
    files are separate runs of the suite; a file that itself holds several processes (pyperf)
    contributes its own rounds. Files measured on different machines, and a metric whose unit,
    direction or kind differs between files, are refused.
    """
    if not files:
        raise DocumentError("no files to import")
    environment = _one_environment(files)
    merged: dict[str, _Merged] = {}
    for file in files:
        seen: dict[str, str] = {}
        for bench in file.benchmarks:
            key = bench.key
            if key in seen:
                raise DocumentError(
                    f"benchmark {key!r} appears twice (also {seen[key]})",
                    path=bench.where,
                    source=file.source,
                )
            seen[key] = bench.where
            entry = merged.setdefault(key, _Merged(first=bench, source=file.source))
            _merge_one(entry, bench, file.source)
    benchmarks = [_benchmark_json(key, entry) for key, entry in merged.items()]
    started = run.started_at or _earliest(f.started_at for f in files) or datetime.now(timezone.utc)
    finished = run.finished_at or _latest(f.finished_at for f in files)
    document = {
        "schema": SCHEMA,
        "run": {
            "id": run.id,
            "project": run.project,
            "commit": run.commit,
            "branch": run.branch,
            "pr": run.pr,
            "base_commit": run.base_commit,
            "started_at": started.isoformat(),
            "finished_at": finished.isoformat() if finished else None,
            "ci": dict(run.ci),
        },
        "environment": environment,
        "benchmarks": benchmarks,
    }
    return parse_document(document, source="perfgate import")


def _merge_one(entry: _Merged, bench: ImportedBenchmark, source: str) -> None:
    if bench.error is not None:
        entry.error = entry.error or bench.error
    for name, metric in bench.metrics.items():
        head = entry.heads.setdefault(name, metric)
        where = f"{bench.where} ({bench.key!r}, metric {name!r})"
        if (head.unit, head.direction, head.samples is None) != (
            metric.unit,
            metric.direction,
            metric.samples is None,
        ):
            raise DocumentError(
                f"{where} is {_shape(metric)} here but {_shape(head)} in {entry.source}",
                source=source,
            )
        if (head.method == SUMMARY_METHOD) != (metric.method == SUMMARY_METHOD):
            raise DocumentError(
                f"{where} has summary statistics only in one file and samples in the other "
                f"({entry.source}): import them separately",
                source=source,
            )
        if metric.samples is not None:
            entry.samples.setdefault(name, []).extend(metric.samples)
            entry.rounds.setdefault(name, []).extend(metric.rounds or (len(metric.samples),))
        elif name in entry.values and entry.values[name].value != metric.value:
            raise DocumentError(
                f"{where} is a single value that differs from {entry.source}'s "
                f"({entry.values[name].value} vs {metric.value}): import them separately",
                source=source,
            )
        else:
            entry.values[name] = metric


def _shape(metric: ImportedMetric) -> str:
    kind = "samples" if metric.samples is not None else "a value"
    return f"{kind} in {metric.unit!r}, {metric.direction} is better"


def _benchmark_json(key: str, entry: _Merged) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for name, head in entry.heads.items():
        out: dict[str, Any] = {"unit": head.unit, "direction": head.direction}
        if name in entry.samples:
            out["samples"] = entry.samples[name]
            rounds = entry.rounds[name]
            if len(rounds) > 1:
                out["rounds"] = rounds
        else:
            value = entry.values[name]
            out["value"] = value.value
            out["exact"] = value.exact
        if head.method:
            out["method"] = head.method
        if head.note:
            out["note"] = head.note
        metrics[name] = out
    return {
        "name": entry.first.name,
        "params": dict(entry.first.params),
        "key": key,
        "device": None,
        "error": entry.error,
        "tags": [],
        "metrics": metrics,
    }


def _one_environment(files: Sequence[ImportedFile]) -> dict[str, Any]:
    first = dict(files[0].environment)
    first_print = fingerprint(first)
    for file in files[1:]:
        other = dict(file.environment)
        if fingerprint(other) != first_print:
            changed = sorted(
                k
                for k in first.keys() | other.keys()
                if k not in VOLATILE_FIELDS and first.get(k) != other.get(k)
            )
            raise DocumentError(
                f"measured on another machine or setup than {files[0].source} "
                f"({', '.join(changed)} differ): import them separately",
                source=file.source,
            )
    first["fingerprint"] = first_print
    return first


def _earliest(times: Iterable[datetime | None]) -> datetime | None:
    found = [t for t in times if t is not None]
    return min(found) if found else None


def _latest(times: Iterable[datetime | None]) -> datetime | None:
    found = [t for t in times if t is not None]
    return max(found) if found else None
