"""Find benchmark files, import them by path, expand params and apply the `-k` filter."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.errors import UsageError
from perfgate.harness.api import BenchmarkInstance, collect
from perfgate.harness.keyfilter import compile_filter

DEFAULT_PATH = "benchmarks"
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv"}


@dataclass(frozen=True)
class ImportFailure:
    """A benchmark file that could not be imported: reported as one error entry named after it."""

    path: Path
    name: str
    message: str

    @property
    def key(self) -> str:
        return self.name


Selected = BenchmarkInstance | ImportFailure


@dataclass(frozen=True)
class Selection:
    """What a run will do, in order: instances to measure and files that failed to import."""

    items: list[Selected]
    discovered: int

    @property
    def instances(self) -> list[BenchmarkInstance]:
        return [item for item in self.items if isinstance(item, BenchmarkInstance)]


def is_benchmark_file(path: Path) -> bool:
    return path.suffix == ".py" and (path.stem.startswith("bench_") or path.stem.endswith("_bench"))


def find_files(paths: Sequence[str | Path]) -> list[Path]:
    """Benchmark files under `paths`: files are taken as given, directories searched recursively."""
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            hint = (
                " (pass the files or directories holding your bench_*.py)"
                if str(raw) == (DEFAULT_PATH)
                else ""
            )
            raise UsageError(f"benchmark path {str(raw)!r} does not exist{hint}")
        if path.is_file():
            found[path.resolve()] = None
            continue
        for candidate in sorted(path.rglob("*.py")):
            relative = candidate.relative_to(path).parts[:-1]
            if any(part.startswith(".") or part in _SKIP_DIRS for part in relative):
                continue
            if is_benchmark_file(candidate):
                found[candidate.resolve()] = None
    return list(found)


def import_benchmark_file(path: Path) -> list[BenchmarkInstance]:
    """Import one file under a unique module name and return its instances (raises on failure)."""
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    module_name = f"perfgate_bench_{digest}_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    # Like pytest's default import mode: a benchmark file may import helpers next to it.
    parent = str(path.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    collect(module_name)  # a re-import must not double-register
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        collect(module_name)
        raise
    return [instance for bench in collect(module_name) for instance in bench.instances()]


def discover(paths: Sequence[str | Path], filter: str | None = None) -> Selection:
    """Import every benchmark file under `paths` and select the instances matching `filter`."""
    matches = compile_filter(filter)
    files = find_files(paths)
    items: list[Selected] = []
    owners: dict[str, Path] = {}
    discovered = 0
    for path in files:
        try:
            instances = import_benchmark_file(path)
        except (Exception, SystemExit) as exc:
            items.append(
                ImportFailure(
                    path=path,
                    name=_failure_name(path, owners),
                    message=f"import failed: {one_line(exc)}",
                )
            )
            owners[items[-1].key] = path
            continue
        for instance in instances:
            discovered += 1
            if instance.key in owners:
                raise UsageError(
                    f"benchmark {instance.key!r} is defined twice ({owners[instance.key]} and "
                    f"{path}); give one of them another name with @benchmark(name=...)"
                )
            owners[instance.key] = path
            if matches(instance.key):
                items.append(instance)
    return Selection(items=items, discovered=discovered)


def _failure_name(path: Path, taken: dict[str, Path]) -> str:
    if path.stem not in taken:
        return path.stem
    # Two broken files with one stem: keep both entries apart by their folder.
    return f"{path.parent.name}/{path.stem}"


def one_line(exc: BaseException) -> str:
    """`ExcType: first line of the message`, the form every error entry uses."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."
