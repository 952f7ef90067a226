"""`torch.utils.benchmark` Measurements: each Measurement is a round of per-call times
(`raw_times` over `number_per_run`); several Measurements of one task are several rounds.

Nothing here imports torch: Measurements are read by their attributes, and a pickle of them is
read by an unpickler that maps torch's two classes to plain stand-ins and refuses every other
class, so loading a file runs no code from it (docs/importers.md).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Sequence
from typing import Any, Protocol

from perfgate.errors import DocumentError
from perfgate.importers.common import ImportedBenchmark, ImportedFile, ImportedMetric, Node
from perfgate.results import ParamValue

FORMAT = "torch-pickle"
_MODULE = "torch.utils.benchmark.utils.common"


class TaskSpecLike(Protocol):
    stmt: str
    label: str | None
    sub_label: str | None
    description: str | None
    env: str | None
    num_threads: int


class MeasurementLike(Protocol):
    """What perfgate reads of a `torch.utils.benchmark.Measurement`."""

    number_per_run: int
    raw_times: Sequence[float]
    task_spec: TaskSpecLike


class _PickledMeasurement:
    """Stands in for torch's Measurement while reading a pickle: attributes only, no code."""


class _PickledTaskSpec:
    """Stands in for torch's TaskSpec while reading a pickle."""


class _MeasurementUnpickler(pickle.Unpickler):
    _ALLOWED: dict[tuple[str, str], Any] = {  # noqa: RUF012 (a lookup table, never mutated)
        (_MODULE, "Measurement"): _PickledMeasurement,
        (_MODULE, "TaskSpec"): _PickledTaskSpec,
    }

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"the pickle holds a {module}.{name}; only torch.utils.benchmark Measurements "
                "are read"
            ) from None


def load_measurement_pickle(raw: bytes, *, source: str) -> list[Any]:
    """The Measurements in a pickle of one Measurement or a list (or tuple) of them."""
    try:
        loaded = _MeasurementUnpickler(io.BytesIO(raw)).load()
    except pickle.UnpicklingError as exc:
        raise DocumentError(f"not a pickle of Measurements: {exc}", source=source) from None
    except Exception as exc:  # any failure to decode the bytes: find_class lets no code run
        raise DocumentError(
            f"not a readable pickle ({type(exc).__name__})", source=source
        ) from None
    items = list(loaded) if isinstance(loaded, list | tuple) else [loaded]
    for index, item in enumerate(items):
        if not isinstance(item, _PickledMeasurement):
            raise DocumentError(
                f"expected a Measurement, got {type(item).__name__}",
                path=f"[{index}]",
                source=source,
            )
    return items


def import_measurements(
    measurements: Sequence[MeasurementLike], *, source: str = "measurements"
) -> ImportedFile:
    """The Measurements as one file's benchmarks; repeated tasks become rounds, in order."""
    grouped: dict[str, tuple[ImportedBenchmark, list[float], list[int]]] = {}
    for index, measurement in enumerate(measurements):
        node = Node(measurement, f"[{index}]", source)
        name, params = _identity(measurement, node)
        times = _per_call_times(measurement, node)
        probe = ImportedBenchmark(name, params, {}, where=node.path)
        entry = grouped.setdefault(probe.key, (probe, [], []))
        entry[1].extend(times)
        entry[2].append(len(times))
    benchmarks = [
        ImportedBenchmark(
            bench.name,
            bench.params,
            {"time": ImportedMetric("s", "lower", samples=tuple(samples), rounds=tuple(rounds))},
            where=bench.where,
        )
        for bench, samples, rounds in grouped.values()
    ]
    return ImportedFile(
        source=source, benchmarks=benchmarks, environment={"importer": "torch.utils.benchmark"}
    )


def _attr(item: object, name: str, node: Node) -> Any:
    if not hasattr(item, name):
        raise DocumentError("missing attribute", path=f"{node.path}.{name}", source=node.source)
    return getattr(item, name)


def _identity(measurement: MeasurementLike, node: Node) -> tuple[str, dict[str, ParamValue]]:
    spec = _attr(measurement, "task_spec", node)
    spec_node = Node(spec, f"{node.path}.task_spec", node.source)
    label = getattr(spec, "label", None)
    stmt = getattr(spec, "stmt", None)
    name = label if isinstance(label, str) and label.strip() else stmt
    if not isinstance(name, str) or not name.strip():
        raise spec_node.error("neither a label nor a stmt to name the benchmark by")
    name = " ".join(name.split())[:255]
    params: dict[str, ParamValue] = {}
    for field in ("sub_label", "description", "env"):
        value = getattr(spec, field, None)
        if value is not None:
            if not isinstance(value, str):
                raise Node(value, f"{spec_node.path}.{field}", node.source).error(
                    "expected a string"
                )
            params[field] = value
    threads = getattr(spec, "num_threads", None)
    if threads is not None:
        params["num_threads"] = Node(threads, f"{spec_node.path}.num_threads", node.source).count()
    return name, params


def _per_call_times(measurement: MeasurementLike, node: Node) -> list[float]:
    number = Node(
        _attr(measurement, "number_per_run", node), f"{node.path}.number_per_run", node.source
    ).count()
    if number == 0:
        raise DocumentError(
            "must be at least 1", path=f"{node.path}.number_per_run", source=node.source
        )
    raw = _attr(measurement, "raw_times", node)
    times_node = Node(
        list(raw) if isinstance(raw, list | tuple) else raw, f"{node.path}.raw_times", node.source
    )
    times = [item.sample() / number for item in times_node.list()]
    if not times:
        raise times_node.error("empty sample list")
    return times
