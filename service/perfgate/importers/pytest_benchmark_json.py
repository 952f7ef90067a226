"""pytest-benchmark's JSON (`--benchmark-json`, or a `--benchmark-save`d file): every round's time
as a sample when the file has them (`--benchmark-json` always keeps them, a saved file only with
`--benchmark-save-data`), else the median alone, marked as a summary (docs/importers.md)."""

from __future__ import annotations

from typing import Any

from perfgate.importers.common import (
    SUMMARY_METHOD,
    ImportedBenchmark,
    ImportedFile,
    ImportedMetric,
    Node,
    load_json,
    param_value,
    parse_time,
)

FORMAT = "pytest-benchmark"


def import_pytest_benchmark(raw: bytes, *, source: str) -> ImportedFile:
    """Read one pytest-benchmark JSON file."""
    root = load_json(raw, source=source)
    root.obj()
    benchmarks = [_benchmark(node) for node in root.get("benchmarks").list()]
    commit_info = root.opt("commit_info")
    commit = branch = None
    if commit_info is not None:
        commit = _text_or_none(commit_info, "id")
        branch = _text_or_none(commit_info, "branch")
    if branch == "(unknown)":
        branch = None
    when = root.opt("datetime")
    return ImportedFile(
        source=source,
        benchmarks=benchmarks,
        environment=_environment(root),
        commit=commit,
        branch=branch,
        started_at=parse_time(when.text()) if when is not None else None,
    )


def _benchmark(node: Node) -> ImportedBenchmark:
    fullname = node.get("fullname").name()
    params_node = node.opt("params")
    params = {k: param_value(v) for k, v in (params_node.obj() if params_node else {}).items()}
    name = fullname
    param_id = node.opt("param")
    # `test_x[10]` with params {"n": 10}: the key spells the params out, `test_x[n=10]`.
    if params and param_id is not None and fullname.endswith(f"[{param_id.value}]"):
        name = fullname[: -len(f"[{param_id.value}]")]
    stats = node.get("stats")
    data = stats.opt("data")
    if data is not None:
        samples = tuple(item.sample() for item in data.list())
        if not samples:
            raise data.error("empty sample list")
        time = ImportedMetric(unit="s", direction="lower", samples=samples)
    else:
        median = stats.get("median").sample()
        rounds = stats.get("rounds").count()
        time = ImportedMetric(
            unit="s",
            direction="lower",
            samples=(median,),
            method=SUMMARY_METHOD,
            note=(
                f"pytest-benchmark kept summary statistics only: the median of {rounds} rounds "
                "is one sample (--benchmark-json, or --benchmark-save-data, keeps every round)"
            ),
        )
    return ImportedBenchmark(name=name, params=params, metrics={"time": time}, where=node.path)


def _text_or_none(node: Node, key: str) -> str | None:
    found = node.opt(key)
    if found is None or not isinstance(found.value, str) or not found.value.strip():
        return None
    return found.value


def _environment(root: Node) -> dict[str, Any]:
    machine = root.opt("machine_info")
    info = machine.obj() if machine is not None else {}
    found = info.get("cpu")
    cpu: dict[str, Any] = found if isinstance(found, dict) else {}
    release = " ".join(str(info[k]) for k in ("system", "release") if info.get(k))
    version = root.opt("version")
    return {
        "importer": FORMAT,
        "tool_version": version.value if version is not None else None,
        "python": info.get("python_version"),
        "python_implementation": info.get("python_implementation"),
        "machine": info.get("machine"),
        "os": release or None,
        "cpu": cpu.get("brand_raw") or info.get("processor") or None,
        "cores": cpu.get("count"),
        "hostname": info.get("node"),
    }
