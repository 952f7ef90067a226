"""`run_benchmarks`: discover, measure (rounds in separate processes), build the document."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfgate.config import GitHubContext
from perfgate.errors import UsageError
from perfgate.harness.allocator import SYSTEM, pin_malloc_thresholds
from perfgate.harness.api import BenchmarkInstance
from perfgate.harness.device_errors import DeviceContextLostError
from perfgate.harness.devices import is_cuda
from perfgate.harness.discovery import DEFAULT_PATH, ImportFailure, Selection, discover
from perfgate.harness.entries import checked
from perfgate.harness.gitinfo import resolve_git
from perfgate.harness.measure import InstanceResult, MeasureSettings, prepare_torch, run_instances
from perfgate.harness.progress import NullReporter, RunReporter
from perfgate.harness.rounds import merge_rounds, run_round
from perfgate.harness.timing import DEVICE_TIMINGS
from perfgate.results import SCHEMA, Benchmark, ResultsDocument, parse_document


@dataclass(frozen=True)
class RunOptions:
    """What to run and how: one object shared by `perfgate run`, `demo` and `calibrate`.

    `rounds` > 1 runs the whole selection that many times, each round in a fresh `python -m
    perfgate.harness.worker` process, and pools the rounds (docs/architecture.md §4).
    `pin_malloc` fixes glibc's malloc thresholds in every measuring process (see
    `perfgate.harness.allocator`). `isolate` measures a single round in a worker process too, so
    that a process which ran other benchmarks before (the demo runs both sides) does not measure
    with warm caches and compiled kernels. `interleave` samples the instances of a round in
    slices, round-robin (`measure_interleaved`); None means on CPU only (on CUDA every setup alive
    at once could exhaust device memory). `device_timing` (CUDA) is "events" (time from an idle
    device: launching and running) or "queued" (the device's work alone, see
    `perfgate.harness.timing`); `cold_cache` (CUDA) flushes L2 before each call and times each
    call alone (the default is hot-cache timing, back-to-back calls). `commit`, `branch`,
    `project`, `pr` and `base_commit` override what git and the CI environment say.
    """

    paths: Sequence[str | Path] = (DEFAULT_PATH,)
    filter: str | None = None
    device: str = "auto"
    rounds: int = 1
    max_time: float | None = None
    profile: bool = True
    trace_dir: str | Path | None = None
    commit: str | None = None
    branch: str | None = None
    project: str | None = None
    pr: int | None = None
    base_commit: str | None = None
    threads: int | None = None
    pin_malloc: bool = True
    isolate: bool = False
    interleave: bool | None = None
    device_timing: str = "events"
    cold_cache: bool = False


def run_benchmarks(
    options: RunOptions,
    *,
    reporter: RunReporter | None = None,
    github: GitHubContext | None = None,
    cwd: Path | None = None,
) -> ResultsDocument:
    """Run the benchmarks `options` select and return the validated results document.

    `github` defaults to `GitHubContext.from_env()`; `cwd` (default: the current directory)
    anchors relative paths and the local git lookup. Raises UsageError for bad options, a missing
    commit or an empty selection.
    """
    paths, filter, device, rounds = options.paths, options.filter, options.device, options.rounds
    max_time, profile, trace_dir = options.max_time, options.profile, options.trace_dir
    threads, pin_malloc, isolate = options.threads, options.pin_malloc, options.isolate
    interleave, device_timing = options.interleave, options.device_timing
    cold_cache = options.cold_cache
    if rounds < 1:
        raise UsageError(f"--rounds must be at least 1, got {rounds}")
    if max_time is not None and not max_time > 0:
        raise UsageError(f"--max-time must be positive seconds, got {max_time}")
    if threads is not None and threads < 1:
        raise UsageError(f"threads must be at least 1, got {threads}")
    if device_timing not in DEVICE_TIMINGS:
        raise UsageError(
            f"device timing {device_timing!r}: expected one of {', '.join(DEVICE_TIMINGS)}"
        )
    reporter = reporter or NullReporter()
    base = cwd or Path.cwd()
    git = resolve_git(
        commit=options.commit,
        branch=options.branch,
        project=options.project,
        pr=options.pr,
        base_commit=options.base_commit,
        github=github if github is not None else GitHubContext.from_env(),
        cwd=base,
    )
    started_at = _now()
    device_name = resolve_device(device)
    if not is_cuda(device_name) and (cold_cache or device_timing != "events"):
        # CPU timing has no device queue or L2 flush to choose: refuse rather than ignore it.
        raise UsageError(
            f"--cold-cache and --device-timing {device_timing} time a CUDA device; "
            f"this run measures on {device_name}"
        )
    # Before torch allocates anything, so the measuring process starts in the pinned mode.
    malloc = pin_malloc_thresholds() if pin_malloc else SYSTEM
    torch_device = prepare_torch(device_name, threads)
    import torch

    threads = int(torch.get_num_threads())
    selection = discover([_anchor(p, base) for p in paths], filter)
    _refuse_empty(selection, paths, filter)
    from perfgate.harness.environment import collect_environment

    if interleave is None:
        interleave = torch_device.type == "cpu"
    environment = collect_environment(
        torch_device, malloc=malloc, sampling="interleaved" if interleave else "sequential"
    )
    settings = MeasureSettings(
        max_time=max_time,
        profile=profile,
        trace_dir=_anchor(trace_dir, base) if trace_dir else None,
        interleave=interleave,
        device_timing=device_timing,
        cold_cache=cold_cache,
    )
    reporter.run_started(instances=len(selection.instances), rounds=rounds)
    try:
        for failure in _failures(selection):
            # Round 0: found while collecting, before any round.
            reporter.instance_error(failure.key, failure.message, round_index=0)
        if rounds == 1 and not isolate:
            entries = _run_in_process(
                selection.instances,
                device=torch_device,
                device_name=device_name,
                threads=threads,
                pin_malloc=pin_malloc,
                settings=settings,
                reporter=reporter,
                cwd=base,
            )
        else:
            per_round = [
                run_round(
                    selection.instances,
                    round_index=r,
                    device=device_name,
                    threads=threads,
                    pin_malloc=pin_malloc,
                    settings=settings,
                    profile=profile and r == rounds,
                    reporter=reporter,
                    cwd=base,
                )
                for r in range(1, rounds + 1)
            ]
            entries, warnings = merge_rounds(per_round, [i.key for i in selection.instances])
            for warning in warnings:
                reporter.warning(warning)
    finally:
        reporter.run_finished()

    benchmarks = [
        Benchmark(name=item.name, key=item.key, error=item.message)
        if isinstance(item, ImportFailure)
        else entries[item.key]
        for item in selection.items
    ]
    document = {
        "schema": SCHEMA,
        "run": {
            "id": str(uuid.uuid4()),
            "project": git.project,
            "commit": git.commit,
            "branch": git.branch,
            "pr": git.pr,
            "base_commit": git.base_commit,
            "started_at": started_at,
            "finished_at": _now(),
            "ci": git.ci,
        },
        "environment": environment,
        "benchmarks": [b.model_dump(mode="json") for b in benchmarks],
    }
    # The one validator has the last word on the whole document (keys, metrics, JSON rules).
    return parse_document(document, source="perfgate run")


def _run_in_process(
    instances: list[BenchmarkInstance],
    *,
    device: Any,
    device_name: str,
    threads: int,
    pin_malloc: bool,
    settings: MeasureSettings,
    reporter: RunReporter,
    cwd: Path,
) -> dict[str, Benchmark]:
    """One round in this process; after a lost CUDA context, the rest in worker processes."""
    try:
        results = run_instances(instances, device=device, settings=settings, reporter=reporter)
    except DeviceContextLostError as lost:
        entries = _records(lost.done)
        rest = [i for i in instances if i.key not in entries]
        reporter.warning(f"{lost}; measuring the {len(rest)} remaining instances in a worker")
        entries.update(
            run_round(
                rest,
                round_index=1,
                device=device_name,
                threads=threads,
                pin_malloc=pin_malloc,
                settings=settings,
                profile=settings.profile,
                reporter=reporter,
                cwd=cwd,
            )
        )
        return entries
    return _records(results)


def _records(results: Mapping[str, InstanceResult]) -> dict[str, Benchmark]:
    """Measured entries as results@1 benchmarks (DocumentError names a bad field)."""
    return {
        key: checked(result.entry, source="perfgate run", path=key)
        for key, result in results.items()
    }


def resolve_device(device: str) -> str:
    """'auto' | 'cpu' | 'cuda' | 'cuda:N' -> a torch device string; UsageError when unusable."""
    try:
        import torch
    except ImportError:
        raise UsageError("perfgate run needs torch: pip install 'perfgate[torch]'") from None
    choice = device.strip().lower()
    if choice == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if choice == "cpu":
        return "cpu"
    if choice == "cuda" or choice.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise UsageError(
                f"--device {device}: CUDA is not available here "
                f"(torch {torch.__version__}); use --device cpu or auto"
            )
        index_text = choice.partition(":")[2] or str(torch.cuda.current_device())
        if not index_text.isdigit() or int(index_text) >= torch.cuda.device_count():
            raise UsageError(
                f"--device {device}: there are {torch.cuda.device_count()} CUDA "
                "devices (cuda:0 ...)"
            )
        return f"cuda:{int(index_text)}"
    raise UsageError(f"--device {device!r}: expected auto, cpu, cuda or cuda:N")


def _anchor(path: str | Path, base: Path) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else base / candidate


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _failures(selection: Selection) -> list[ImportFailure]:
    return [item for item in selection.items if isinstance(item, ImportFailure)]


def _refuse_empty(selection: Selection, paths: Sequence[str | Path], filter: str | None) -> None:
    if selection.items:
        return
    where = " ".join(str(p) for p in paths)
    if selection.discovered and filter:
        raise UsageError(
            f"-k {filter!r} matches none of the {selection.discovered} benchmarks in {where}"
        )
    raise UsageError(
        f"no benchmarks in {where}: expected files named bench_*.py or *_bench.py "
        "with @perfgate.benchmark functions"
    )


__all__ = ["RunOptions", "resolve_device", "run_benchmarks"]
