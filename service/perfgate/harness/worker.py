"""One round in a fresh process: `python -m perfgate.harness.worker REQUEST.json`.

The request names the files, keys and options; each finished instance is appended to the results
file as one JSON line (so a crash keeps what finished), and progress events go to stdout as JSON
lines. Anything the benchmarks themselves print is sent to stderr, which the parent keeps apart.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from perfgate.harness.allocator import pin_malloc_thresholds
from perfgate.harness.api import BenchmarkInstance
from perfgate.harness.device_errors import DeviceContextLostError
from perfgate.harness.discovery import import_benchmark_file
from perfgate.harness.entries import entry_json
from perfgate.harness.measure import InstanceResult, prepare_torch, run_instances
from perfgate.harness.worker_protocol import EventWriter, WorkerRequest, WorkerRequestError

#: Exit status of a worker that stopped because the CUDA context was lost.
LOST_CONTEXT = 3


def _select(files: Sequence[str], keys: Sequence[str]) -> list[BenchmarkInstance]:
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
    try:
        request = WorkerRequest.from_json(Path(args[0]).read_text(encoding="utf-8"), source=args[0])
    except (OSError, WorkerRequestError) as exc:
        print(f"perfgate worker: bad request: {exc}", file=sys.stderr)
        return 2
    # stdout carries events only: keep a private copy of it, then point fd 1 (and Python's
    # sys.stdout) at stderr so prints from benchmarks or native libraries cannot corrupt it.
    sys.stdout.flush()
    events = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    code = run_request(request, events)
    events.close()
    return code


def run_request(request: WorkerRequest, events: TextIO) -> int:
    """Measure what the request names; 0 when done, LOST_CONTEXT when a benchmark left the CUDA
    context unusable (the parent starts a fresh worker for the instances after it)."""
    if request.pin_malloc:
        pin_malloc_thresholds()
    device = prepare_torch(request.device, request.threads)
    results_path = Path(request.results)

    def save(instance: BenchmarkInstance, result: InstanceResult) -> None:
        with results_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry_json(result.entry)) + "\n")

    try:
        run_instances(
            _select(request.files, request.keys),
            device=device,
            settings=request.settings(),
            reporter=EventWriter(events),
            round_index=request.round_index,
            on_result=save,
        )
    except DeviceContextLostError as lost:
        print(f"perfgate worker: {lost}", file=sys.stderr)
        return LOST_CONTEXT
    return 0


if __name__ == "__main__":
    sys.exit(main())
