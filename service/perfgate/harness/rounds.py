"""Rounds: each in fresh worker processes, then pooled into one entry per instance."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from perfgate.harness.api import BenchmarkInstance
from perfgate.harness.measure import MeasureSettings
from perfgate.harness.progress import RunReporter
from perfgate.harness.worker_protocol import WorkerRequest, replay
from perfgate.results import Benchmark, Metric, parse_benchmark


def merge_rounds(
    per_round: Sequence[Mapping[str, Benchmark]], keys: Sequence[str]
) -> tuple[dict[str, Benchmark], list[str]]:
    """Merge entries by key across rounds (in round order); returns entries and warnings.

    Sampled metrics keep every round's samples one after another with `rounds` giving each
    round's count. Value metrics take the first round that has them; exact counters that differ
    between rounds become a warning (they should never change). An error in any round makes the
    entry an error naming the round, while the rounds that worked keep their samples. The
    profile comes from the last round, the only one that profiles.
    """
    total = len(per_round)
    merged: dict[str, Benchmark] = {}
    warnings: list[str] = []
    for key in keys:
        entries = [(i + 1, r[key]) for i, r in enumerate(per_round) if key in r]
        if not entries:
            continue
        error: str | None = None
        device: str | None = None
        metrics: dict[str, Metric] = {}
        for round_index, entry in entries:
            if entry.error and error is None:
                error = f"round {round_index}/{total}: {entry.error}"
            if device is None:
                device = entry.device
            for name, metric in entry.metrics.items():
                _merge_metric(
                    metrics, name, metric, key=key, round_index=round_index, warnings=warnings
                )
        last = per_round[-1].get(key)
        profile = None
        if last is not None and last.profile is not None:
            profile = last.profile.model_copy(deep=True)
        first = entries[0][1]
        merged[key] = first.model_copy(
            update={
                "params": dict(first.params),
                "tags": list(first.tags),
                "error": error,
                "device": device,
                "metrics": metrics,
                "profile": profile,
            }
        )
    return merged, warnings


def _merge_metric(
    metrics: dict[str, Metric],
    name: str,
    metric: Metric,
    *,
    key: str,
    round_index: int,
    warnings: list[str],
) -> None:
    if metric.samples is not None:
        if not metric.samples:
            return
        pooled = metrics.get(name)
        if pooled is None or pooled.samples is None or pooled.rounds is None:
            samples: list[float] = []
            rounds: list[int] = []
            metrics[name] = metric.model_copy(update={"samples": samples, "rounds": rounds})
        else:
            samples, rounds = pooled.samples, pooled.rounds
        samples.extend(metric.samples)
        rounds.append(len(metric.samples))
        return
    if name not in metrics:
        metrics[name] = metric.model_copy(deep=True)
        return
    first = metrics[name]
    if metric.exact and metric.value != first.value:
        warnings.append(
            f"{key}: exact metric {name} differs between rounds "
            f"({_number(first.value)} in the first, {_number(metric.value)} in round "
            f"{round_index}); keeping the first"
        )
    elif name == "kernel_launches" and metric.method != first.method:
        # Same count, other kernels: autotuning or cudnn.benchmark chose differently.
        ours, theirs = _kernel_set(first), _kernel_set(metric)
        warnings.append(
            f"{key}: round {round_index} ran other kernels than the first: "
            f"only in round {round_index}: {', '.join(sorted(theirs - ours)) or '-'}; "
            f"only in the first: {', '.join(sorted(ours - theirs)) or '-'}"
        )


def _number(value: float | None) -> str:
    """A counter as the worker wrote it: 10, not the 10.0 the model holds."""
    if value is not None and value.is_integer():
        return str(int(value))
    return str(value)


def _kernel_set(metric: Metric) -> set[str]:
    """Kernel names from a kernel_launches note ('  <per call> x <name>' lines)."""
    lines = (metric.note or "").splitlines()[1:]
    return {line.strip().partition(" x ")[2] for line in lines if " x " in line}


def run_round(
    instances: list[BenchmarkInstance],
    *,
    round_index: int,
    device: str,
    threads: int,
    settings: MeasureSettings,
    profile: bool,
    reporter: RunReporter,
    cwd: Path,
    pin_malloc: bool = True,
) -> dict[str, Benchmark]:
    """One round: every instance once, in order, in worker processes; returns entries by key.

    A worker that dies takes only the instance it was running with it: that instance becomes an
    error entry and a new worker carries on with the rest. (An interleaved worker has all its
    instances running at once: after a crash the unfinished ones are measured again sequentially,
    which tells the culprit from the rest.)
    """
    remaining = list(instances)
    entries: dict[str, Benchmark] = {}
    while remaining:
        done, started, failure = _spawn_worker(
            remaining,
            round_index=round_index,
            device=device,
            threads=threads,
            settings=settings,
            profile=profile,
            reporter=reporter,
            cwd=cwd,
            pin_malloc=pin_malloc,
        )
        entries.update(done)
        crashed = [i for i in remaining if i.key in started and i.key not in done]
        untouched = [i for i in remaining if i.key not in started and i.key not in done]
        if failure is None:
            for instance in untouched:
                _error(
                    entries,
                    instance,
                    "the worker did not find this benchmark when it re-imported its file",
                    round_index=round_index,
                    reporter=reporter,
                )
            for instance in crashed:
                _error(
                    entries,
                    instance,
                    "the worker stopped without a result",
                    round_index=round_index,
                    reporter=reporter,
                )
            break
        if settings.interleave and len(crashed) > 1:
            # An interleaved worker had every instance started: which one crashed it is
            # unknown, so the rest of the round runs again one instance at a time, where a
            # crash names its culprit.
            settings = replace(settings, interleave=False)
            remaining = [i for i in remaining if i.key not in done]
            reporter.warning(
                f"round {round_index}: the worker crashed ({failure}); measuring the "
                f"{len(remaining)} unfinished instances again, one after another"
            )
            continue
        for instance in crashed:
            _error(
                entries,
                instance,
                f"worker crashed while running it ({failure})",
                round_index=round_index,
                reporter=reporter,
            )
        if not crashed and done:
            # The worker stopped after an instance (a lost CUDA context): the rest get a fresh
            # one.
            reporter.warning(
                f"round {round_index}: the worker stopped ({failure}); measuring the "
                f"{len(untouched)} remaining instances in a fresh worker"
            )
            remaining = untouched
            continue
        if not crashed:
            # Nothing ran at all: a second worker would fail the same way.
            for instance in untouched:
                _error(
                    entries,
                    instance,
                    f"worker failed before running it ({failure})",
                    round_index=round_index,
                    reporter=reporter,
                )
            break
        remaining = untouched
    return entries


def _error(
    entries: dict[str, Benchmark],
    instance: BenchmarkInstance,
    message: str,
    *,
    round_index: int,
    reporter: RunReporter,
) -> None:
    # Checked like a measured entry: the name and tags come from the benchmark's own code.
    entries[instance.key] = parse_benchmark(
        {
            "name": instance.spec.name,
            "key": instance.key,
            "params": dict(instance.params),
            "tags": list(instance.spec.tags),
            "error": message,
        },
        source="perfgate run",
        path=instance.key,
    )
    reporter.instance_error(instance.key, message, round_index=round_index)


def _spawn_worker(
    instances: list[BenchmarkInstance],
    *,
    round_index: int,
    device: str,
    threads: int,
    settings: MeasureSettings,
    profile: bool,
    reporter: RunReporter,
    cwd: Path,
    pin_malloc: bool,
) -> tuple[dict[str, Benchmark], set[str], str | None]:
    """Run one worker; returns (entries by key, keys it started, failure or None)."""
    with tempfile.TemporaryDirectory(prefix="perfgate-round-") as tmp:
        folder = Path(tmp)
        results_path = folder / "results.jsonl"
        request = WorkerRequest(
            files=tuple(sorted({str(i.spec.source) for i in instances})),
            keys=tuple(i.key for i in instances),
            device=device,
            threads=threads,
            round_index=round_index,
            profile=profile,
            results=str(results_path),
            max_time=settings.max_time,
            interleave=settings.interleave,
            device_timing=settings.device_timing,
            cold_cache=settings.cold_cache,
            trace_dir=str(settings.trace_dir) if settings.trace_dir else None,
            pin_malloc=pin_malloc,
        )
        request_path = folder / "request.json"
        request_path.write_text(request.to_json(), encoding="utf-8")
        log_path = folder / "stderr.log"
        started: set[str] = set()
        with (
            log_path.open("w", encoding="utf-8") as log,
            subprocess.Popen(
                [sys.executable, "-m", "perfgate.harness.worker", str(request_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=cwd,
                text=True,
            ) as proc,
        ):
            assert proc.stdout is not None
            for line in proc.stdout:
                replay(line, reporter, started)
            code = proc.wait()
        entries = read_results(results_path)
        failure = None if code == 0 else _describe_exit(code, log_path)
    return entries, started, failure


def read_results(path: Path) -> dict[str, Benchmark]:
    """Entries a worker wrote, one JSON line per finished instance (a torn last line is skipped).

    Each entry is checked as a results@1 benchmark on its own; a DocumentError names the worker's
    entry and the field (the rules that span the document are checked when it is assembled).
    """
    entries: dict[str, Benchmark] = {}
    if not path.exists():
        return entries
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            entries[entry["key"]] = parse_benchmark(
                entry, source="worker results", path=entry["key"]
            )
    return entries


def _describe_exit(code: int, log_path: Path) -> str:
    if code < 0:
        try:
            what = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            what = f"killed by signal {-code}"
    else:
        what = f"exit code {code}"
    lines = [
        line.strip()
        for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        if line.strip()
    ]
    return f"{what}: {lines[-1][:300]}" if lines else what
