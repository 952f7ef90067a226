"""Rounds: each in fresh worker processes, then pooled into one entry per instance."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.harness.api import BenchmarkInstance
from perfgate.harness.measure import MeasureSettings, base_entry
from perfgate.harness.progress import InstanceProgress, RunReporter


def merge_rounds(
    per_round: Sequence[Mapping[str, Mapping[str, Any]]], keys: Sequence[str]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Merge entries by key across rounds (in round order); returns entries and warnings.

    Sampled metrics keep every round's samples one after another with `rounds` giving each
    round's count. Value metrics take the first round that has them; exact counters that differ
    between rounds become a warning (they should never change). An error in any round makes the
    entry an error naming the round, while the rounds that worked keep their samples. The
    profile comes from the last round, the only one that profiles.
    """
    total = len(per_round)
    merged: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for key in keys:
        entries = [(i + 1, r[key]) for i, r in enumerate(per_round) if key in r]
        if not entries:
            continue
        out = copy.deepcopy(dict(entries[0][1]))
        out["metrics"] = {}
        out["profile"] = None
        out["error"] = None
        for round_index, entry in entries:
            if entry.get("error") and out["error"] is None:
                out["error"] = f"round {round_index}/{total}: {entry['error']}"
            if out.get("device") is None and entry.get("device") is not None:
                out["device"] = entry["device"]
            for name, metric in (entry.get("metrics") or {}).items():
                _merge_metric(
                    out["metrics"],
                    name,
                    metric,
                    key=key,
                    round_index=round_index,
                    warnings=warnings,
                )
        last = per_round[-1].get(key)
        if last is not None:
            out["profile"] = copy.deepcopy(last.get("profile"))
        merged[key] = out
    return merged, warnings


def _merge_metric(
    metrics: dict[str, Any],
    name: str,
    metric: Mapping[str, Any],
    *,
    key: str,
    round_index: int,
    warnings: list[str],
) -> None:
    samples = metric.get("samples")
    if samples is not None:
        if not samples:
            return
        if name not in metrics:
            metrics[name] = {**copy.deepcopy(dict(metric)), "samples": [], "rounds": []}
        metrics[name]["samples"].extend(samples)
        metrics[name]["rounds"].append(len(samples))
        return
    if name not in metrics:
        metrics[name] = copy.deepcopy(dict(metric))
        return
    first = metrics[name]
    if metric.get("exact") and metric.get("value") != first.get("value"):
        warnings.append(
            f"{key}: exact metric {name} differs between rounds "
            f"({first.get('value')} in the first, {metric.get('value')} in round "
            f"{round_index}); keeping the first"
        )
    elif name == "kernel_launches" and metric.get("method") != first.get("method"):
        # Same count, other kernels: autotuning or cudnn.benchmark chose differently.
        ours, theirs = _kernel_set(first), _kernel_set(metric)
        warnings.append(
            f"{key}: round {round_index} ran other kernels than the first: "
            f"only in round {round_index}: {', '.join(sorted(theirs - ours)) or '-'}; "
            f"only in the first: {', '.join(sorted(ours - theirs)) or '-'}"
        )


def _kernel_set(metric: Mapping[str, Any]) -> set[str]:
    """Kernel names from a kernel_launches note ('  <per call> x <name>' lines)."""
    lines = str(metric.get("note") or "").splitlines()[1:]
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
) -> dict[str, dict[str, Any]]:
    """One round: every instance once, in order, in worker processes; returns entries by key.

    A worker that dies takes only the instance it was running with it: that instance becomes an
    error entry and a new worker carries on with the rest. (An interleaved worker has all its
    instances running at once: after a crash the unfinished ones are measured again sequentially,
    which tells the culprit from the rest.)
    """
    remaining = list(instances)
    entries: dict[str, dict[str, Any]] = {}
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
    entries: dict[str, dict[str, Any]],
    instance: BenchmarkInstance,
    message: str,
    *,
    round_index: int,
    reporter: RunReporter,
) -> None:
    entry = base_entry(
        instance.spec.name, instance.key, dict(instance.params), None, list(instance.spec.tags)
    )
    entry["error"] = message
    entries[instance.key] = entry
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
) -> tuple[dict[str, dict[str, Any]], set[str], str | None]:
    """Run one worker; returns (entries by key, keys it started, failure or None)."""
    with tempfile.TemporaryDirectory(prefix="perfgate-round-") as tmp:
        folder = Path(tmp)
        results_path = folder / "results.jsonl"
        request = {
            "files": sorted({str(i.spec.source) for i in instances}),
            "keys": [i.key for i in instances],
            "device": device,
            "threads": threads,
            "max_time": settings.max_time,
            "interleave": settings.interleave,
            "device_timing": settings.device_timing,
            "cold_cache": settings.cold_cache,
            "profile": profile,
            "trace_dir": str(settings.trace_dir) if settings.trace_dir else None,
            "round_index": round_index,
            "pin_malloc": pin_malloc,
            "results": str(results_path),
        }
        request_path = folder / "request.json"
        request_path.write_text(json.dumps(request), encoding="utf-8")
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


def replay(line: str, reporter: RunReporter, started: set[str]) -> None:
    """Forward one worker event line to the reporter (lines that are not events are ignored)."""
    try:
        event = json.loads(line)
    except ValueError:
        return
    if not isinstance(event, dict):
        return
    kind = event.get("event")
    if kind == "started":
        started.add(event["key"])
        reporter.instance_started(event["key"], round_index=event["round_index"])
    elif kind in ("progress", "finished"):
        progress = InstanceProgress(**event["progress"])
        if kind == "progress":
            reporter.instance_progress(progress)
        else:
            reporter.instance_finished(progress)
    elif kind == "error":
        reporter.instance_error(event["key"], event["message"], round_index=event["round_index"])
    elif kind == "warning":
        reporter.warning(event["message"])


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Entries a worker wrote, one JSON line per finished instance (a torn last line is skipped)."""
    entries: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return entries
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            entries[entry["key"]] = entry
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
