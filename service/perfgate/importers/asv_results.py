"""asv's results file (`results/MACHINE/COMMIT-ENV.json`, api version 2) for one machine and one
commit, read with the suite's `results/benchmarks.json` when it is there (types, units, parameter
names): samples when asv recorded them (`--record-samples`), else the result it keeps
(docs/importers.md)."""

from __future__ import annotations

import ast
import itertools
from typing import Any

from perfgate.importers.common import (
    SUMMARY_METHOD,
    ImportedBenchmark,
    ImportedFile,
    ImportedMetric,
    Node,
    from_epoch_ms,
    load_json,
)
from perfgate.results import ParamValue

FORMAT = "asv"
API_VERSION = 2

# asv's benchmark types by the prefix of the function name (asv's own rule).
_PREFIXES = (
    ("timeraw_", "time"),
    ("time_", "time"),
    ("peakmem_", "peakmemory"),
    ("mem_", "memory"),
    ("track_", "track"),
)


def import_asv(
    raw: bytes,
    *,
    source: str,
    benchmarks_json: bytes | None = None,
    benchmarks_source: str = "benchmarks.json",
) -> ImportedFile:
    """Read one asv results file; `benchmarks_json` is the suite's benchmarks.json, if known."""
    root = load_json(raw, source=source)
    version = root.get("version")
    if version.value != API_VERSION:
        raise version.error(
            f"asv results version {version.value!r}: this importer reads version {API_VERSION} "
            "(asv 0.5 and later; `asv update` upgrades older results)"
        )
    suite = _suite(benchmarks_json, benchmarks_source)
    columns = [c.text() for c in root.get("result_columns").list()]
    benchmarks: list[ImportedBenchmark] = []
    starts: list[float] = []
    ends: list[float] = []
    for name, row in root.get("results").items():
        fields = dict(zip(columns, row.list(), strict=False))
        benchmarks.extend(_instances(name, fields, suite.get(name, {}), row))
        start = fields.get("started_at")
        if start is not None and start.value is not None:
            starts.append(start.number())
            duration = fields.get("duration")
            took = duration.number() if duration is not None and duration.value is not None else 0
            ends.append(starts[-1] + took * 1000.0)
    commit = root.opt("commit_hash")
    return ImportedFile(
        source=source,
        benchmarks=benchmarks,
        environment=_environment(root),
        commit=commit.text() if commit is not None else None,
        started_at=from_epoch_ms(min(starts)) if starts else None,
        finished_at=from_epoch_ms(max(ends)) if ends else None,
    )


def _suite(raw: bytes | None, source: str) -> dict[str, dict[str, Any]]:
    if raw is None:
        return {}
    root = load_json(raw, source=source)
    return {name: node.obj() for name, node in root.items() if name != "version"}


def benchmark_type(name: str, info: dict[str, Any]) -> str | None:
    declared = info.get("type")
    if isinstance(declared, str):
        return declared
    function = name.rsplit(".", 1)[-1]
    return next((kind for prefix, kind in _PREFIXES if function.startswith(prefix)), None)


def _instances(
    name: str, fields: dict[str, Node], info: dict[str, Any], row: Node
) -> list[ImportedBenchmark]:
    kind = benchmark_type(name, info)
    if kind is None:
        raise row.error(f"cannot tell the type of benchmark {name!r} (no benchmarks.json entry)")
    result = fields.get("result")
    if result is None:
        raise row.error("missing column 'result'")
    values = result.list()
    param_lists = [p.list() for p in fields["params"].list()] if "params" in fields else []
    names = info.get("param_names") or [f"param{i + 1}" for i in range(len(param_lists))]
    combos = list(itertools.product(*param_lists))
    if len(combos) != len(values):
        raise result.error(
            f"{len(values)} results for {len(combos)} parameter combinations of {name!r}"
        )
    samples = fields.get("samples")
    sample_lists = samples.list() if samples is not None and samples.value is not None else None
    out = []
    for index, (combo, value) in enumerate(zip(combos, values, strict=True)):
        params = {str(n): _param(p.text()) for n, p in zip(names, combo, strict=False)}
        where = f"{row.path}.result[{index}]"
        sampled = sample_lists[index] if sample_lists is not None else None
        if value.value is None:
            out.append(
                ImportedBenchmark(
                    name=name,
                    params=params,
                    metrics={},
                    where=where,
                    error="asv recorded no result (the benchmark failed or was skipped)",
                )
            )
            continue
        metric_name, metric = _metric(kind, info, value, sampled)
        out.append(ImportedBenchmark(name, params, {metric_name: metric}, where))
    return out


def _metric(
    kind: str, info: dict[str, Any], value: Node, sampled: Node | None
) -> tuple[str, ImportedMetric]:
    if kind == "time":
        if sampled is not None and sampled.value is not None:
            samples = tuple(s.sample() for s in sampled.list())
            if not samples:
                raise sampled.error("empty sample list")
            return "time", ImportedMetric(
                "s", "lower", samples=samples, rounds=_rounds(info, len(samples))
            )
        return "time", ImportedMetric(
            "s",
            "lower",
            samples=(value.sample(),),
            method=SUMMARY_METHOD,
            note=(
                "asv kept no samples: its result (the median) is one sample "
                "(run asv with --record-samples to keep them)"
            ),
        )
    if kind == "memory":
        return "memory", ImportedMetric("B", "lower", value=value.sample(), exact=True)
    if kind == "peakmemory":
        return "peak_memory", ImportedMetric(
            "B", "lower", value=value.sample(), method="asv_peakmem"
        )
    if kind == "track":
        unit = str(info.get("unit") or "unit")[:32]
        return "track", ImportedMetric(unit, "lower", value=value.sample(), method="asv_track")
    raise value.error(f"unknown asv benchmark type {kind!r}")


def _rounds(info: dict[str, Any], count: int) -> tuple[int, ...] | None:
    """Samples per asv round, when benchmarks.json makes the split certain.

    asv appends each round's samples without marking where a round ends; with a fixed `repeat`
    every round holds `repeat` samples, otherwise the boundaries are unknown (one round).
    """
    rounds, repeat = info.get("rounds"), info.get("repeat")
    if (
        isinstance(rounds, int)
        and isinstance(repeat, int)
        and rounds > 1
        and repeat > 0
        and rounds * repeat == count
    ):
        return (repeat,) * rounds
    return None


def _param(text: str) -> ParamValue:
    """asv stores parameter values as their repr: `'a'` -> "a", `10` -> 10, others verbatim."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if value is None or isinstance(value, str | bool | int | float):
        return value
    return text


def _environment(root: Node) -> dict[str, Any]:
    params = root.opt("params")
    machine = params.obj() if params is not None else {}
    env_name = root.opt("env_name")
    return {
        "importer": FORMAT,
        "asv_env": env_name.value if env_name is not None else None,
        "cpu": machine.get("cpu"),
        "machine": machine.get("arch"),
        "cores": machine.get("num_cpu"),
        "os": machine.get("os"),
        "ram": machine.get("ram"),
        "hostname": machine.get("machine"),
    }
