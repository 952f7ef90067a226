"""Where an upload of one large document spends its CPU, in process: per step, and in the collector.

Builds the document of `bench/upload_throughput.py --large` (60,000 benchmarks x 5 samples, one
profile row each) and prints the CPU seconds (best of `--repeats`) of each step of parsing it:
decoding with the JSON rules' hooks, the JSON rules, pydantic validation, the cross-field checks,
and the content hash. Then, on a scratch PostgreSQL database that already has the benchmarks, the
CPU of one upload as the HTTP route makes it, with a few thousand allocations around it as a
server makes, and how much of that CPU the cyclic collector took.

It imports perfgate from `PYTHONPATH`, so it also measures an older checkout
(`PYTHONPATH=<its export>/service:bench`); one without `store_document_bytes` is uploaded as its
route did, parse then `store_document`.

    python bench/ingest_steps.py [--benchmarks 60000] [--repeats 3] [--pg <admin URL>]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Callable
from typing import Any

from perfgate import document_json, results
from perfgate.gc_pause import gc_paused
from perfgate.store import uploads
from perfgate.store.connect import open_store
from upload_throughput import PG_ADMIN, Large, scratch_database


def best_cpu(step: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The least CPU time of `repeats` calls of `step`, and its last answer."""
    best, answer = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        answer = step()
        best = min(best, time.process_time() - start)
    return best, answer


def parse_steps(raw: bytes, repeats: int) -> list[tuple[str, float]]:
    with gc_paused():  # as in parse_document_bytes; the step's objects are freed inside it
        return _timed_steps(raw.decode("utf-8"), repeats)


def _timed_steps(text: str, repeats: int) -> list[tuple[str, float]]:
    decode_s, decoded = best_cpu(lambda: document_json.decode_checked(text), repeats)
    data, flagged = decoded
    rules_s, _ = best_cpu(
        lambda: document_json.first_problem(data, free_form_only=not flagged), repeats
    )
    validate_s, document = best_cpu(lambda: results.ResultsDocument.model_validate(data), repeats)
    checks_s, _ = best_cpu(lambda: results._check_consistency(document, ""), repeats)
    hash_s, _ = best_cpu(document.content_hash, repeats)
    return [
        ("decode (json.loads and the JSON rules' hooks)", decode_s),
        ("JSON rules (document_json.first_problem)", rules_s),
        ("pydantic validation", validate_s),
        ("cross-field checks", checks_s),
        ("content hash", hash_s),
    ]


def _server_allocations() -> list[list[dict[str, Any]]]:
    """Allocations as a server makes around an upload: enough for the collector to run."""
    return [[{} for _ in range(1000)] for _ in range(30)]


def upload_with_collector(admin_url: str, large: Large) -> str:
    spent = [0.0, 0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            spent[1] = time.process_time()
        else:
            spent[0] += time.process_time() - spent[1]

    with scratch_database(admin_url) as url, open_store(url) as store:
        uploads.store_document(store.sessions, results.parse_document(large.data(seed=1)))
        raw = json.dumps(large.data(seed=2)).encode()
        gc.collect()
        gc.callbacks.append(timed)
        start = time.process_time()
        try:
            if hasattr(uploads, "store_document_bytes"):
                uploads.store_document_bytes(store.sessions, raw)
                _server_allocations()
            else:  # the route before store_document_bytes: parse, then store
                document = results.parse_document_bytes(raw)
                _server_allocations()
                uploads.store_document(store.sessions, document)
                _server_allocations()
                del document
            _server_allocations()
            cpu = time.process_time() - start
        finally:
            gc.callbacks.remove(timed)
    return f"one upload as the route makes it: CPU {cpu:.2f} s, in the collector {spent[0]:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pg", default=PG_ADMIN, help="admin URL of a PostgreSQL server")
    args = parser.parse_args()
    large = Large(args.benchmarks, 5, 1)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.benchmarks} benchmarks")
    raw = json.dumps(large.data(seed=1)).encode()
    for name, seconds in parse_steps(raw, args.repeats):
        print(f"{name:48s} {seconds:5.2f} s CPU")
    del raw
    print(upload_with_collector(args.pg, large))


if __name__ == "__main__":
    main()
