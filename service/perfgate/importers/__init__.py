"""Importers: other benchmark tools' result files as `perfgate/results@1` documents.

Each format has one module with one pure function, bytes in and an `ImportedFile` out;
`common.build_document` merges the files of one import into a validated document. The use case
that adds the run's git metadata and the CLI live in `perfgate.imports` and `perfgate.cli`.
"""

from __future__ import annotations

from collections.abc import Callable

from perfgate.importers.common import ImportedFile

Importer = Callable[[bytes, str], ImportedFile]


def _pytest_benchmark(raw: bytes, source: str) -> ImportedFile:
    from perfgate.importers.pytest_benchmark_json import import_pytest_benchmark

    return import_pytest_benchmark(raw, source=source)


def _googlebench(raw: bytes, source: str) -> ImportedFile:
    from perfgate.importers.googlebench_json import import_googlebench

    return import_googlebench(raw, source=source)


def _pyperf(raw: bytes, source: str) -> ImportedFile:
    from perfgate.importers.pyperf_json import import_pyperf

    return import_pyperf(raw, source=source)


def _torch_pickle(raw: bytes, source: str) -> ImportedFile:
    from perfgate.importers.torch_measurements import import_measurements, load_measurement_pickle

    return import_measurements(load_measurement_pickle(raw, source=source), source=source)


# asv is not here: it reads a second file (benchmarks.json), so the use case calls it directly.
SIMPLE_FORMATS: dict[str, Importer] = {
    "pytest-benchmark": _pytest_benchmark,
    "googlebench": _googlebench,
    "pyperf": _pyperf,
    "torch-pickle": _torch_pickle,
}
FORMATS = ("pytest-benchmark", "googlebench", "pyperf", "asv", "torch-pickle")
