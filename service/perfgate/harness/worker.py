"""One round in a fresh process: `python -m perfgate.harness.worker REQUEST.json`.

The request names the files, keys and options; each finished instance is appended to the results
file as one JSON line (so a crash keeps what finished), and progress events go to stdout as JSON
lines. Anything the benchmarks themselves print is sent to stderr, which the parent keeps apart.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from perfgate.harness.allocator import pin_malloc_thresholds
from perfgate.harness.api import BenchmarkInstance
from perfgate.harness.device_errors import DeviceContextLostError
from perfgate.harness.discovery import import_benchmark_file
from perfgate.harness.measure import InstanceResult, MeasureSettings, prepare_torch, run_instances
from perfgate.harness.progress import InstanceProgress

#: Exit status of a worker that stopped because the CUDA context was lost.
LOST_CONTEXT = 3


class EventWriter:
    """A RunReporter that writes each event as one JSON line for the parent to replay."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _emit(self, event: dict[str, Any]) -> None:
        self._stream.write(json.dumps(event) + "\n")
        self._stream.flush()

    def run_started(self, *, instances: int, rounds: int) -> None:
        return None

    def instance_started(self, key: str, *, round_index: int) -> None:
        self._emit({"event": "started", "key": key, "round_index": round_index})

    def instance_progress(self, progress: InstanceProgress) -> None:
        self._emit({"event": "progress", "progress": asdict(progress)})

    def instance_finished(self, progress: InstanceProgress) -> None:
        self._emit({"event": "finished", "progress": asdict(progress)})

    def instance_error(self, key: str, message: str, *, round_index: int) -> None:
        self._emit({"event": "error", "key": key, "message": message, "round_index": round_index})

    def warning(self, message: str) -> None:
        self._emit({"event": "warning", "message": message})

    def run_finished(self) -> None:
        return None


def _select(files: list[str], keys: list[str]) -> list[BenchmarkInstance]:
    wanted = set(keys)
    found: dict[str, BenchmarkInstance] = {}
    for file in files:
        # A file that fails here imported fine in the parent; its keys come back missing and the
        # parent reports them, so one flaky import cannot take the other files down.
        try:
            instances = import_benchmark_file(Path(file))
        except Exception as exc:
            print(f"perfgate worker: importing {file} failed: {exc}", file=sys.stderr)
            continue
        for instance in instances:
            if instance.key in wanted:
                found[instance.key] = instance
    return [found[key] for key in keys if key in found]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m perfgate.harness.worker REQUEST.json", file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    # stdout carries events only: keep a private copy of it, then point fd 1 (and Python's
    # sys.stdout) at stderr so prints from benchmarks or native libraries cannot corrupt it.
    sys.stdout.flush()
    events = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    code = run_request(request, events)
    events.close()
    return code


def run_request(request: dict[str, Any], events: TextIO) -> int:
    """Measure what the request names; 0 when done, LOST_CONTEXT when a benchmark left the CUDA
    context unusable (the parent starts a fresh worker for the instances after it)."""
    if request.get("pin_malloc", True):
        pin_malloc_thresholds()
    device = prepare_torch(request["device"], request["threads"])
    trace_dir = request.get("trace_dir")
    settings = MeasureSettings(
        max_time=request.get("max_time"),
        interleave=bool(request.get("interleave", False)),
        device_timing=str(request.get("device_timing", "events")),
        cold_cache=bool(request.get("cold_cache", False)),
        profile=bool(request["profile"]),
        trace_dir=Path(trace_dir) if trace_dir else None,
    )
    results_path = Path(request["results"])

    def save(instance: BenchmarkInstance, result: InstanceResult) -> None:
        with results_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(result.entry) + "\n")

    try:
        run_instances(
            _select(request["files"], request["keys"]),
            device=device,
            settings=settings,
            reporter=EventWriter(events),
            round_index=int(request["round_index"]),
            on_result=save,
        )
    except DeviceContextLostError as lost:
        print(f"perfgate worker: {lost}", file=sys.stderr)
        return LOST_CONTEXT
    return 0


if __name__ == "__main__":
    sys.exit(main())
