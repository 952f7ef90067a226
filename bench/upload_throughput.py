"""Upload throughput of the store: small documents, and one large document against raw COPY.

Default: a 200-benchmark document stored seven times into each backend (median), checking that
uploading the same document twice stores it once.

`--large`: one large document (by default 60,000 benchmarks x 5 samples, 1 profile row each,
37 MB of JSON) stored on a scratch PostgreSQL database by (a) raw COPY of exactly the rows the
store writes, prepared beforehand, (b) `store_document`, (c) `POST /api/v1/runs` to a
`perfgate serve` subprocess, and (d) `store_document` on SQLite, all in one run; prints samples/s,
the time of each against (a), the server's peak RSS, and the peak memory of each step of an
in-process upload (parse, content hash, store). bench/service_scale.py runs the same comparison.

    python bench/upload_throughput.py [--pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres]
    python bench/upload_throughput.py --large [--benchmarks 60000 --samples 5 --ops 1]
    python bench/upload_throughput.py --large --http-only   # two uploads over HTTP only
    python bench/upload_throughput.py --large --paths 3     # streamed against whole, alternating
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from perfgate.results import ResultsDocument, parse_document, parse_document_bytes
from perfgate.store import documents, row_writes
from perfgate.store.change_points import refresh_changes
from perfgate.store.connect import Store, open_store
from perfgate.store.tokens import create_token
from perfgate.store.uploads import store_document, store_document_bytes
from synthetic import synthetic_document

BENCHMARKS, SAMPLES, REPEATS = 200, 40, 7
PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
LARGE_PROJECT = "scale/ingest"


def measure(url: str, label: str) -> None:
    documents_ = [
        parse_document(synthetic_document(benchmarks=BENCHMARKS, samples=SAMPLES, seed=s))
        for s in range(REPEATS + 1)
    ]
    with open_store(url) as store:
        store_document(store.sessions, documents_[0])  # warm: project, environment, benchmarks
        seconds = []
        for document in documents_[1:]:
            start = time.perf_counter()
            outcome = store_document(store.sessions, document)
            seconds.append(time.perf_counter() - start)
            assert outcome.created
        start = time.perf_counter()
        again = store_document(store.sessions, documents_[1])
        repeat_s = time.perf_counter() - start
        with store.sessions() as session:
            runs = row_writes.count_rows(session)["runs"]
    assert not again.created and runs == REPEATS + 1, "a repeated upload stored something"
    median = statistics.median(seconds)
    print(
        f"{label:10s} upload of {BENCHMARKS} benchmarks x {SAMPLES} samples: "
        f"median {median * 1000:7.1f} ms, best {min(seconds) * 1000:7.1f} ms "
        f"-> {BENCHMARKS * SAMPLES / median:,.0f} samples/s "
        f"({BENCHMARKS / median:,.0f} benchmarks/s); same document again: "
        f"{repeat_s * 1000:.1f} ms, stored once"
    )


@contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database on the server of `admin_url`, dropped afterwards."""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"perfgate_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# --- the large document: raw COPY, store_document, HTTP, SQLite ---------------------------------


@dataclass(frozen=True)
class Large:
    benchmarks: int
    samples: int
    ops: int

    def data(self, seed: int) -> dict[str, Any]:
        """The document with a fresh run id; every seed gives the same benchmarks."""
        data = synthetic_document(
            benchmarks=self.benchmarks,
            samples=self.samples,
            ops_per_benchmark=self.ops,
            seed=seed,
            project=LARGE_PROJECT,
        )
        data["run"]["id"] = str(uuid.uuid4())
        return data

    @property
    def total_samples(self) -> int:
        return self.benchmarks * self.samples


def _vm(field: str, pid: int | str = "self") -> int:
    """VmRSS or VmHWM of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raw_copy_seconds(url: str, document: ResultsDocument) -> tuple[float, int]:
    """COPY of the rows `store_document` writes for `document`, built before the clock starts:
    the database's own speed for them (same tables, indexes, constraints). Returns seconds and
    the number of rows."""
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        project_id, environment_id = conn.execute(
            "SELECT p.id, e.id FROM projects p, environments e WHERE p.name = %s "
            "AND e.fingerprint = %s",
            (LARGE_PROJECT, document.environment.fingerprint),
        ).fetchone() or (None, None)
        ids = dict(
            conn.execute(
                "SELECT key, id FROM benchmarks WHERE project_id = %s", (project_id,)
            ).fetchall()
        )
        tables = []
        for table, columns, rows in (
            ("instances", documents.INSTANCE_COLUMNS, documents.instance_rows),
            ("measurements", documents.MEASUREMENT_COLUMNS, documents.measurement_rows),
            ("ops", documents.OP_COLUMNS, documents.op_rows),
        ):
            json_at = [i for i, c in enumerate(columns) if c in ("tags", "rounds")]
            prepared = []
            for row in rows(document, benchmark_ids=ids):
                values = list(row)
                for i in json_at:
                    values[i] = json.dumps(values[i])
                prepared.append(values)
            tables.append((f"COPY {table} ({', '.join(columns)}) FROM STDIN", prepared))
        run = document.run
        start = time.perf_counter()
        conn.execute(
            "INSERT INTO runs (id, project_id, commit, branch, started_at, environment_id, "
            "environment_overrides, ci, content_hash, uploaded_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, '{}', '{}', 'raw-copy', now())",
            (run.id, project_id, run.commit, run.branch, run.started_at, environment_id),
        )
        with conn.cursor() as cursor:
            for statement, prepared in tables:
                with cursor.copy(statement) as copy:
                    for values in prepared:
                        copy.write_row(values)
        conn.commit()
        return time.perf_counter() - start, sum(len(p) for _, p in tables)


@contextmanager
def serve(db_url: str, *, workers: int = 1) -> Iterator[tuple[str, int]]:
    """`perfgate serve --workers N` on `db_url` in a subprocess: its URL and process id."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "perfgate", "serve", "--db", db_url, "--port", str(port)),
            *("--workers", str(workers), "--log-level", "warning"),
        ],
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("perfgate serve did not start")
            time.sleep(0.2)
        yield url, process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def refresh_seconds(store: Store, run_id: str) -> float:
    """Wall time of the change-point refresh of a stored run, done again and rolled back (the
    same reads and detection the upload did; the writes find nothing left to change)."""
    with store.sessions() as session:
        transaction = session.begin()
        try:
            start = time.perf_counter()
            refresh_changes(session, run_id=run_id)
            return time.perf_counter() - start
        finally:
            transaction.rollback()


def _phases_child(path: str, url: str, queue: Any) -> None:
    """In a fresh process: the peak memory of each step of an upload, above where it started.

    Writing 5 to /proc/self/clear_refs resets VmHWM to the current RSS (Linux), so each step's
    peak is its own.
    """
    raw = Path(path).read_bytes()
    out: dict[str, int] = {"start": _vm("VmRSS")}

    def step(name: str) -> None:
        out[name] = _vm("VmHWM") - before
        out[name + " kept"] = _vm("VmRSS") - before
        out[name + " cpu ms"] = round((time.process_time() - cpu) * 1000)

    Path("/proc/self/clear_refs").write_text("5")
    before, cpu = _vm("VmRSS"), time.process_time()
    document = parse_document_bytes(raw)
    step("parse")
    Path("/proc/self/clear_refs").write_text("5")
    before, cpu = _vm("VmRSS"), time.process_time()
    document.content_hash()
    step("hash")
    with open_store(url) as store:
        Path("/proc/self/clear_refs").write_text("5")
        before, cpu = _vm("VmRSS"), time.process_time()
        assert store_document(store.sessions, document).created
        step("store")
    queue.put(out)


def _streamed_child(path: str, url: str, queue: Any) -> None:
    """In a fresh process: the peak memory of `store_document_bytes` (what the server runs: the
    document stored while it is validated), above the body read."""
    raw = Path(path).read_bytes()
    with open_store(url) as store:
        Path("/proc/self/clear_refs").write_text("5")
        before, cpu = _vm("VmRSS"), time.process_time()
        assert store_document_bytes(store.sessions, raw).created
        queue.put(
            {
                "streamed": _vm("VmHWM") - before,
                "streamed kept": _vm("VmRSS") - before,
                "streamed cpu ms": round((time.process_time() - cpu) * 1000),
            }
        )


def upload_phases(body: bytes, url: str, *, streamed: bool = False) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "document.json"
        path.write_bytes(body)
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        target = _streamed_child if streamed else _phases_child
        child = context.Process(target=target, args=(str(path), url, queue))
        child.start()
        result: dict[str, int] = queue.get(timeout=1800)
        child.join()
    return result


def large_comparison(admin_url: str, large: Large) -> list[str]:
    """Lines reporting (a) raw COPY, (b) store_document, (c) HTTP and (d) SQLite for `large`."""
    warm = parse_document(large.data(seed=1))
    copy_doc = parse_document(large.data(seed=2))
    store_doc = parse_document(large.data(seed=3))
    body = json.dumps(large.data(seed=4)).encode()
    lite_doc = parse_document(large.data(seed=5))
    phases_body = json.dumps(large.data(seed=6)).encode()
    streamed_body = json.dumps(large.data(seed=8)).encode()
    lines = [
        f"large document: {large.benchmarks:,} benchmarks x {large.samples} samples, "
        f"{large.ops} profile row(s) each: {large.total_samples:,} samples, "
        f"{len(body) / 2**20:.1f} MiB of JSON",
    ]
    seconds: dict[str, float] = {}
    # CPU time of the process doing the upload (the server's for (c)): on a busy machine the
    # wall time also counts waiting for a CPU.
    cpu: dict[str, float] = {}
    with scratch_database(admin_url) as url:
        with open_store(url) as store:
            # Warm: project, environment and every benchmark exist, for all four.
            store_document(store.sessions, warm)
            seconds["a"], rows = raw_copy_seconds(url, copy_doc)
            start = time.perf_counter()
            store_doc.content_hash()
            hash_s = time.perf_counter() - start
            start, cpu_start = time.perf_counter(), time.process_time()
            assert store_document(store.sessions, store_doc).created
            seconds["b"] = time.perf_counter() - start
            cpu["b"] = time.process_time() - cpu_start
            refresh_s = refresh_seconds(store, store_doc.run.id)
            token = create_token(store.sessions, project=LARGE_PROJECT, scope="upload").token
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        with serve(url) as (server, pid), httpx.Client(base_url=server, timeout=1800) as client:
            # Warm: imports, connection pool, statement caches of the server.
            small = synthetic_document(benchmarks=2, seed=7, project=LARGE_PROJECT)
            client.post("/api/v1/runs", json=small, headers=headers).raise_for_status()
            rss_before = _vm("VmRSS", pid)
            start, cpu_start = time.perf_counter(), _cpu_seconds(pid)
            response = client.post("/api/v1/runs", content=body, headers=headers)
            seconds["c"] = time.perf_counter() - start
            cpu["c"] = _cpu_seconds(pid) - cpu_start
            assert response.status_code == 201, response.text
            hwm, rss_after = _vm("VmHWM", pid), _vm("VmRSS", pid)
        phases = upload_phases(phases_body, url)
        phases.update(upload_phases(streamed_body, url, streamed=True))
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{tmp}/ingest.db") as lite:
        store_document(lite.sessions, warm)
        start, cpu_start = time.perf_counter(), time.process_time()
        assert store_document(lite.sessions, lite_doc).created
        seconds["d"] = time.perf_counter() - start
        cpu["d"] = time.process_time() - cpu_start
    labels = {
        "a": "(a) raw COPY of the same rows, PostgreSQL",
        "b": "(b) store_document, PostgreSQL",
        "c": "(c) POST /api/v1/runs, PostgreSQL",
        "d": "(d) store_document, SQLite",
    }
    for key, label in labels.items():
        s = seconds[key]
        lines.append(
            f"{label:43s} {s:7.2f} s  {large.total_samples / s:>10,.0f} samples/s  "
            f"{s / seconds['a']:5.2f}x (a)" + (f"  (CPU {cpu[key]:.1f} s)" if key in cpu else "")
        )
    lines.append(
        f"    (a) is {rows:,} rows (text COPY); (b) includes the content hash ({hash_s:.2f} s of "
        "CPU, in a thread beside the COPYs) and "
        f"the change-point refresh, {refresh_s:.2f} s (timed again on (b)'s run, rolled back); "
        "(c) includes reading the body, parsing and validating it"
    )
    mb = 2**20
    lines.append(
        f"server (perfgate serve --workers 1): RSS {rss_before / mb:.0f} MiB before the upload, "
        f"peak {hwm / mb:.0f} MiB, {rss_after / mb:.0f} MiB after"
    )
    lines.append(
        "in-process whole-document upload, peak above the step's start (kept after it, the "
        "step's CPU): "
        + ", ".join(
            f"{name} {phases[name] / mb:.0f} MiB ({phases[name + ' kept'] / mb:.0f}, "
            f"CPU {phases[name + ' cpu ms'] / 1000:.1f} s)"
            for name in ("parse", "hash", "store")
        )
        + f"; process at {phases['start'] / mb:.0f} MiB with the body read"
    )
    lines.append(
        "in-process store_document_bytes (the server's way: stored while validated), peak above "
        f"its start {phases['streamed'] / mb:.0f} MiB (kept {phases['streamed kept'] / mb:.0f}, "
        f"CPU {phases['streamed cpu ms'] / 1000:.1f} s)"
    )
    return lines


def http_uploads(admin_url: str, large: Large) -> list[str]:
    """Two uploads of `large` (new benchmarks, then known ones) to `perfgate serve --workers 1`:
    wall time, the server's CPU time and its peak RSS. Only the client and the server, so it also
    measures an older perfgate (PYTHONPATH=<its checkout>/service)."""
    lines = []
    with scratch_database(admin_url) as url:
        with open_store(url) as store:
            token = create_token(store.sessions, project=LARGE_PROJECT, scope="upload").token
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        with serve(url) as (server, pid), httpx.Client(base_url=server, timeout=3600) as client:
            for label, seed in (("first upload (new benchmarks)", 1), ("second upload", 2)):
                body = json.dumps(large.data(seed=seed)).encode()
                start, cpu_start = time.perf_counter(), _cpu_seconds(pid)
                response = client.post("/api/v1/runs", content=body, headers=headers)
                seconds = time.perf_counter() - start
                assert response.status_code == 201, response.text
                lines.append(
                    f"{label}: {seconds:.1f} s, server CPU {_cpu_seconds(pid) - cpu_start:.1f} s, "
                    f"{large.total_samples / seconds:,.0f} samples/s; "
                    f"server peak RSS {_vm('VmHWM', pid) / 2**20:.0f} MiB"
                )
    return lines


def path_comparison(admin_url: str, large: Large, repeats: int) -> list[str]:
    """The two ways `store_document_bytes` can store a document, alternating in one process:
    streamed (stored while validated, the way of a new valid run) against the whole-document
    way it falls back to (`parse_document_bytes`, then `store_document`), for a 200-benchmark
    document (`repeats` x 10 uploads each) and for `large` (`repeats` each), on PostgreSQL and
    on SQLite, onto known benchmarks."""
    small = Large(BENCHMARKS, SAMPLES, 5)
    lines = []
    with tempfile.TemporaryDirectory() as tmp, scratch_database(admin_url) as url:
        for backend, db_url in (("PostgreSQL", url), ("SQLite", f"sqlite:///{tmp}/paths.db")):
            with open_store(db_url) as store:
                for doc, times in ((small, repeats * 10), (large, repeats)):
                    store_document(store.sessions, parse_document(doc.data(seed=1)))
                    seconds: dict[str, list[float]] = {"streamed": [], "whole": []}
                    for i in range(times):
                        for way, taken in seconds.items():
                            body = json.dumps(doc.data(seed=2 + i)).encode()
                            start = time.perf_counter()
                            if way == "streamed":
                                outcome = store_document_bytes(store.sessions, body)
                            else:
                                document = parse_document_bytes(body)
                                outcome = store_document(store.sessions, document)
                                del document
                            taken.append(time.perf_counter() - start)
                            assert outcome.created
                    lines.append(
                        f"{backend}, {doc.benchmarks:,} benchmarks, {times} uploads each: "
                        + ", ".join(
                            f"{way} median {statistics.median(v):.3f} s "
                            f"(min {min(v):.3f}, max {max(v):.3f})"
                            for way, v in seconds.items()
                        )
                    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pg",
        default=PG_ADMIN,
        help="admin URL of a PostgreSQL server (a scratch database is made)",
    )
    parser.add_argument("--large", action="store_true", help="the large-document comparison")
    parser.add_argument(
        "--http-only", action="store_true", help="with --large: only two uploads over HTTP"
    )
    parser.add_argument(
        "--paths",
        type=int,
        metavar="N",
        help="with --large: instead, the streamed and the whole-document way of "
        "store_document_bytes alternating, N uploads of the large document each (10 N small)",
    )
    parser.add_argument("--benchmarks", type=int, default=60_000, help="with --large")
    parser.add_argument("--samples", type=int, default=5, help="with --large")
    parser.add_argument("--ops", type=int, default=1, help="with --large: profile rows each")
    args = parser.parse_args()
    if args.large:
        large = Large(args.benchmarks, args.samples, args.ops)
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
        if args.paths:
            print("\n".join(path_comparison(args.pg, large, args.paths)))
            return
        report = http_uploads if args.http_only else large_comparison
        print("\n".join(report(args.pg, large)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        measure(f"sqlite:///{Path(tmp) / 'bench.db'}", "sqlite")
    with scratch_database(args.pg) as url:
        measure(url, "postgresql")


if __name__ == "__main__":
    main()
