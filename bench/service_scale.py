"""The service at scale: series, changes and compare latency over HTTP on a big PostgreSQL store.

Loads a scratch database with a realistic history (by default 2,000 runs x 200 benchmarks, 40
timing samples each: 16M samples, plus exact metrics and profile rows) and a wide project (70,000
benchmarks x 12 runs) using COPY, computes their change points as migration 0004 does for an
existing store (`backfill_changes`), starts `perfgate serve` on it, and prints:

- series p50/p95 for one benchmark over its whole history (GET /api/v1/series; target p95 < 50 ms),
  on an idle machine and with one CPU-burning process per core
- changes p50/p95 for the wide project (GET /api/v1/changes; target p95 < 200 ms), idle and busy
- compare p95 (GET /api/v1/compare, a feature-branch run against main, history noise model on)
- upload throughput with 4 parallel clients (POST /api/v1/runs, 200-benchmark documents)
- ingest of one large document (60,000 benchmarks by default) on its own scratch database:
  samples/s of (a) raw COPY of the same rows, (b) store_document on PostgreSQL, (c) the HTTP
  upload, (d) store_document on SQLite, each against (a), and the server's peak RSS
  (bench/upload_throughput.py --large measures the same; `--ingest-only` runs only this part)

The scratch database is dropped at the end. Usage:

    python bench/service_scale.py [--pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres]
                                  [--runs 2000] [--benchmarks 200] [--samples 40] [--workers 2]
                                  [--wide-benchmarks 70000] [--wide-runs 12]
                                  [--ingest-benchmarks 60000] [--ingest-only]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import numpy as np
import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from perfgate.stats.summary import median_ci
from perfgate.store import migrate
from perfgate.store.change_points import backfill_changes
from perfgate.store.connect import open_store
from perfgate.store.engine import make_engine
from perfgate.store.tokens import create_token
from synthetic import synthetic_document
from upload_throughput import (
    Large,
    large_comparison,
    refresh_seconds,
    serve,
)  # bench/, the script's folder

PROJECT = "scale/demo"
# The /changes case: a project with very many benchmarks (and so very many series).
WIDE_PROJECT = "scale/wide"
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
OPS = ("aten::mm", "aten::add", "aten::copy_", "aten::relu", "aten::sum")
# Benchmarks whose time steps up 15% from this run on: the change points the series shows.
SHIFT_AT, SHIFTED = 1200, 10


def _key(i: int) -> str:
    return f"kernel[n={64 * (1 + i % 8)},variant={i // 8}]"


def _commit(i: int) -> str:
    return f"{i:08x}" + "c0ffee" * 5 + "00"


@contextmanager
def deferred_indexes(cur: psycopg.Cursor[Any], tables: tuple[str, ...]) -> Iterator[None]:
    """Drop the secondary indexes and unique constraints of `tables`, rebuild them afterwards:
    one sort per index at the end is much faster than maintaining it row by row."""
    names = list(tables)
    constraints = cur.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE contype = 'u' AND conrelid::regclass::text = ANY(%s)",
        (names,),
    ).fetchall()
    indexes = cur.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))",
        (names,),
    ).fetchall()
    for table, name, _ in constraints:
        cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cur.execute(f'DROP INDEX "{name}"')
    yield
    cur.execute("SET maintenance_work_mem = '512MB'")
    for table, name, definition in constraints:
        cur.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for _, definition in indexes:
        cur.execute(definition)


def load(pg_url: str, *, runs: int, benchmarks: int, samples: int) -> dict[str, int]:
    """Fill an empty, migrated database with COPY; returns row counts."""
    url = make_url(pg_url).set(drivername="postgresql")
    conninfo = url.render_as_string(hide_password=False)
    counts = {"runs": 0, "measurements": 0, "samples": 0, "ops": 0}
    with psycopg.connect(conninfo) as conn:
        cur = conn.cursor()
        # A bulk load of known-good rows: skip the per-row foreign-key triggers (superuser only;
        # the scratch database is thrown away) and do not wait for each WAL flush.
        cur.execute("SET session_replication_role = replica")
        cur.execute("SET synchronous_commit = off")
        cur.execute(
            "INSERT INTO projects (id, name, created_at) VALUES (1, %s, %s)", (PROJECT, START)
        )
        cur.execute(
            "INSERT INTO environments (id, fingerprint, data, created_at) VALUES (1, %s, %s, %s)",
            ("scale-cpu", json.dumps({"fingerprint": "scale-cpu", "python": "3.11"}), START),
        )
        with cur.copy(
            "COPY benchmarks (id, project_id, key, name, params, created_at) FROM STDIN"
        ) as copy:
            for i in range(benchmarks):
                params = {"n": 64 * (1 + i % 8), "variant": i // 8}
                copy.write_row((i + 1, 1, _key(i), "kernel", json.dumps(params), START))
        run_ids = [str(uuid.UUID(int=(7 << 64) | r, version=4)) for r in range(runs)]
        started = [START + timedelta(hours=4 * r) for r in range(runs)]
        with cur.copy(
            "COPY runs (id, project_id, commit, branch, started_at, finished_at, environment_id,"
            " environment_overrides, ci, content_hash, uploaded_at) FROM STDIN"
        ) as copy:
            for r in range(runs):
                copy.write_row(
                    (
                        run_ids[r],
                        1,
                        _commit(r),
                        "main",
                        started[r],
                        started[r] + timedelta(minutes=20),
                        1,
                        '{"set": {}, "unset": []}',
                        "{}",
                        f"{r:064x}",
                        started[r] + timedelta(minutes=21),
                    )
                )
        with deferred_indexes(cur, ("instances", "measurements", "ops")):
            _copy_children(
                cur,
                run_ids=run_ids,
                started=started,
                benchmarks=benchmarks,
                samples=samples,
                counts=counts,
            )
        counts["runs"] = runs
        # Sequences start past the ids given explicitly.
        for table in ("projects", "environments", "benchmarks"):
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT max(id) FROM {table}))"
            )
        conn.commit()
        conn.autocommit = True
        cur.execute("ANALYZE")
    return counts


def _copy_children(
    cur: psycopg.Cursor[Any],
    *,
    run_ids: list[str],
    started: list[datetime],
    benchmarks: int,
    samples: int,
    counts: dict[str, int],
) -> None:
    """COPY instances, measurements (40 samples each) and profile rows of every run."""
    runs = len(run_ids)
    rng = np.random.default_rng(42)
    # The stored CI of the median: the same order statistics perfgate keeps at upload.
    ci_low, ci_high = (int(v) for v in median_ci(list(range(samples)), presorted=True))
    base_times = 1e-4 * (1 + np.arange(benchmarks) % 17)
    with cur.copy(
        "COPY instances (run_id, benchmark_id, position, device, tags, has_profile) FROM STDIN"
    ) as copy:
        for r in range(runs):
            for b in range(benchmarks):
                copy.write_row((run_ids[r], b + 1, b, "cpu", "[]", True))
    with cur.copy(
        "COPY measurements (run_id, benchmark_id, metric, unit, direction, exact, n, median,"
        " iqr, min, max, ci_low, ci_high, samples, value, method, branch, started_at) FROM STDIN"
    ) as copy:
        for r in range(runs):
            # A slow drift shared by the whole run, plus a step for a few benchmarks.
            level = base_times * (1 + 0.02 * np.sin(r / 50))
            level[:SHIFTED] *= 1.15 if r >= SHIFT_AT else 1.0
            times = level[:, None] * rng.lognormal(0.0, 0.03, (benchmarks, samples))
            medians = np.median(times, axis=1)
            q1, q3 = np.percentile(times, [25, 75], axis=1)
            ordered = np.sort(times, axis=1)
            for b in range(benchmarks):
                row = times[b]
                copy.write_row(
                    (
                        run_ids[r],
                        b + 1,
                        "time",
                        "s",
                        "lower",
                        False,
                        samples,
                        float(medians[b]),
                        float(q3[b] - q1[b]),
                        float(row.min()),
                        float(row.max()),
                        float(ordered[b, ci_low]),
                        float(ordered[b, ci_high]),
                        row.astype("<f8").tobytes(),
                        None,
                        None,
                        "main",
                        started[r],
                    )
                )
                flops = float(2 * (64 * (1 + b % 8)) ** 3)
                copy.write_row(
                    (
                        run_ids[r],
                        b + 1,
                        "flops",
                        "flop",
                        "lower",
                        True,
                        1,
                        flops,
                        0.0,
                        flops,
                        flops,
                        None,
                        None,
                        None,
                        flops,
                        None,
                        "main",
                        started[r],
                    )
                )
            counts["measurements"] += 2 * benchmarks
            counts["samples"] += benchmarks * samples
    with cur.copy(
        "COPY ops (run_id, benchmark_id, op, count, self_cpu_us, self_device_us, flops) FROM STDIN"
    ) as copy:
        for r in range(runs):
            for b in range(benchmarks):
                for j, op in enumerate(OPS):
                    copy.write_row(
                        (
                            run_ids[r],
                            b + 1,
                            op,
                            1 + j % 3,
                            float(base_times[b] * 1e6 / (j + 2)),
                            0.0,
                            0.0,
                        )
                    )
            counts["ops"] += benchmarks * len(OPS)


def load_wide(pg_url: str, *, benchmarks: int, runs: int) -> int:
    """A second project of `benchmarks` benchmarks x `runs` runs (medians only), 1% of them
    15% slower from the middle run on; returns the number of measurements."""
    url = make_url(pg_url).set(drivername="postgresql")
    rng = np.random.default_rng(7)
    with psycopg.connect(url.render_as_string(hide_password=False)) as conn:
        cur = conn.cursor()
        cur.execute("SET session_replication_role = replica")
        cur.execute("SET synchronous_commit = off")
        inserted = cur.execute(
            "INSERT INTO projects (name, created_at) VALUES (%s, %s) RETURNING id",
            (WIDE_PROJECT, START),
        ).fetchone()
        next_id = cur.execute("SELECT coalesce(max(id), 0) + 1 FROM benchmarks").fetchone()
        assert inserted is not None and next_id is not None
        project_id, first = inserted[0], next_id[0]
        with cur.copy(
            "COPY benchmarks (id, project_id, key, name, params, created_at) FROM STDIN"
        ) as copy:
            for i in range(benchmarks):
                params = json.dumps({"i": i})
                copy.write_row((first + i, project_id, f"wide[i={i}]", "wide", params, START))
        run_ids = [str(uuid.UUID(int=(9 << 64) | r, version=4)) for r in range(runs)]
        started = [START + timedelta(days=r) for r in range(runs)]
        with cur.copy(
            "COPY runs (id, project_id, commit, branch, started_at, finished_at, environment_id,"
            " environment_overrides, ci, content_hash, uploaded_at) FROM STDIN"
        ) as copy:
            for r in range(runs):
                copy.write_row(
                    (
                        run_ids[r],
                        project_id,
                        f"{r:08x}" + "beef" * 8,
                        "main",
                        started[r],
                        started[r],
                        1,
                        '{"set": {}, "unset": []}',
                        "{}",
                        f"{r + 10**6:064x}",
                        started[r],
                    )
                )
        base = 1e-4 * (1 + np.arange(benchmarks) % 17)
        with cur.copy(
            "COPY measurements (run_id, benchmark_id, metric, unit, direction, exact, n, median,"
            " iqr, min, max, branch, started_at) FROM STDIN"
        ) as copy:
            for r in range(runs):
                level = base * rng.lognormal(0.0, 0.01, benchmarks)
                level[: benchmarks // 100] *= 1.15 if r >= runs // 2 else 1.0
                for b in range(benchmarks):
                    value = float(level[b])
                    copy.write_row(
                        (
                            run_ids[r],
                            first + b,
                            "time",
                            "s",
                            "lower",
                            False,
                            40,
                            value,
                            0.0,
                            value,
                            value,
                            "main",
                            started[r],
                        )
                    )
        conn.commit()
        conn.autocommit = True
        cur.execute("ANALYZE")
    return benchmarks * runs


@contextmanager
def busy_cpus() -> Iterator[int]:
    """One CPU-burning process per core, for as long as the block runs."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        time.sleep(1)
        yield len(burners)
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


@contextmanager
def server(db_url: str, workers: int) -> Iterator[str]:
    with serve(db_url, workers=workers) as (url, _pid):
        yield url


def latencies(call: Callable[[], httpx.Response], repeats: int) -> list[float]:
    call()  # warm: connection, caches, plans
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = call()
        out.append(time.perf_counter() - start)
        response.raise_for_status()
    return out


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def upload_throughput(
    url: str, token: str, *, clients: int, documents: int, benchmarks: int, samples: int
) -> str:
    bodies = []
    for i in range(documents):
        doc = synthetic_document(
            benchmarks=benchmarks,
            samples=samples,
            seed=10_000 + i,
            project=PROJECT,
            branch="load",
            started_at=START + timedelta(days=900, minutes=i),
        )
        doc["run"]["id"] = str(uuid.uuid4())
        bodies.append(json.dumps(doc).encode())
    queue = list(range(documents))
    lock = threading.Lock()
    statuses: list[int] = []

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=300) as client:
            while True:
                with lock:
                    if not queue:
                        return
                    i = queue.pop()
                response = client.post(
                    "/api/v1/runs",
                    content=bodies[i],
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                    },
                )
                with lock:
                    statuses.append(response.status_code)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    assert statuses.count(201) == documents, statuses
    size = sum(len(b) for b in bodies) / documents / 1e6
    return (
        f"upload, {clients} parallel clients, {documents} documents of {benchmarks} benchmarks x "
        f"{samples} samples ({size:.1f} MB each): {documents / seconds:.1f} documents/s, "
        f"{documents * benchmarks * samples / seconds:,.0f} samples/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--benchmarks", type=int, default=200)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2, help="perfgate serve --workers")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--wide-benchmarks", type=int, default=70_000)
    parser.add_argument("--wide-runs", type=int, default=12)
    parser.add_argument("--ingest-benchmarks", type=int, default=60_000)
    parser.add_argument("--ingest-samples", type=int, default=5)
    parser.add_argument("--ingest-ops", type=int, default=1, help="profile rows per benchmark")
    parser.add_argument("--ingest-only", action="store_true", help="only the large-document part")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    large = Large(args.ingest_benchmarks, args.ingest_samples, args.ingest_ops)
    if args.ingest_only:
        print("\n".join(large_comparison(args.pg, large)))
        return

    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    name = f"perfgate_scale_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    db_url = make_url(args.pg).set(database=name).render_as_string(hide_password=False)
    try:
        engine = make_engine(db_url)
        migrate.upgrade(engine)
        engine.dispose()
        start = time.perf_counter()
        counts = load(db_url, runs=args.runs, benchmarks=args.benchmarks, samples=args.samples)
        load_s = time.perf_counter() - start
        with admin.connect() as conn:
            size = conn.execute(
                text("SELECT pg_size_pretty(pg_database_size(:n))"), {"n": name}
            ).scalar()
        print(
            f"loaded {counts['runs']:,} runs x {args.benchmarks} benchmarks: "
            f"{counts['measurements']:,} measurements, {counts['samples']:,} samples, "
            f"{counts['ops']:,} profile rows in {load_s:.1f} s (COPY); database {size}"
        )
        start = time.perf_counter()
        wide = load_wide(db_url, benchmarks=args.wide_benchmarks, runs=args.wide_runs)
        print(
            f"loaded {WIDE_PROJECT}: {args.wide_benchmarks:,} benchmarks x {args.wide_runs} runs "
            f"({wide:,} measurements) in {time.perf_counter() - start:.1f} s (COPY)"
        )
        with open_store(db_url) as store:
            start = time.perf_counter()
            with store.sessions() as session, session.begin():
                series_count = backfill_changes(session)
            print(
                f"change points of {series_count:,} series computed as migration 0004 does in "
                f"{time.perf_counter() - start:.1f} s"
            )
            token = create_token(store.sessions, project=PROJECT, scope="upload").token
            wide_token = create_token(store.sessions, project=WIDE_PROJECT, scope="read").token
            # One feature-branch run to compare against main.
            head = synthetic_document(
                benchmarks=args.benchmarks,
                samples=args.samples,
                seed=1,
                project=PROJECT,
                branch="feature",
                commit="feed" + "0" * 36,
                started_at=START + timedelta(hours=4 * args.runs),
            )
        with psycopg.connect(
            make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False),
            autocommit=True,
        ) as pg:
            # What autovacuum does to an insert-only table soon after a bulk load: sets the
            # visibility map, which the series' index-only scan relies on.
            pg.execute("VACUUM (ANALYZE) measurements")
        headers = {"Authorization": f"Bearer {token}"}
        with (
            server(db_url, args.workers) as url,
            httpx.Client(base_url=url, headers=headers, timeout=120) as client,
        ):
            client.post("/api/v1/runs", json=head).raise_for_status()
            key = _key(0)
            params = {"project": PROJECT, "key": key, "metric": "time", "branch": "main"}
            start = time.perf_counter()
            series = client.get("/api/v1/series", params=params).json()
            first_s = time.perf_counter() - start
            wide_params = {"project": WIDE_PROJECT, "branch": "main", "metric": "time"}
            wide_headers = {"Authorization": f"Bearer {wide_token}"}

            def get_changes() -> httpx.Response:
                return client.get("/api/v1/changes", params=wide_params, headers=wide_headers)

            changes = get_changes().json()["change_points"]
            for machine in ("idle", "busy"):
                with busy_cpus() if machine == "busy" else nullcontext(0) as burners:
                    seconds = latencies(
                        lambda: client.get("/api/v1/series", params=params), args.repeats
                    )
                    print(
                        f"series of {key} over its whole history ({len(series['points'])} "
                        f"points, {len(series['change_points'])} change points), {machine} "
                        f"({burners} CPU burners): p50 {p(seconds, 50):.1f} ms, "
                        f"p95 {p(seconds, 95):.1f} ms (target p95 < 50 ms)"
                        + (f"; first request {first_s * 1000:.0f} ms" if machine == "idle" else "")
                    )
                    seconds = latencies(get_changes, args.repeats)
                    print(
                        f"changes of {WIDE_PROJECT} ({args.wide_benchmarks:,} benchmarks, "
                        f"{len(changes)} change points), {machine}: p50 {p(seconds, 50):.1f} ms, "
                        f"p95 {p(seconds, 95):.1f} ms (target p95 < 200 ms)"
                    )
            # Detection moved from reads to uploads: one more run on main re-detects the
            # change points of every series it touches (the last 300 runs of each).
            onto_main = synthetic_document(
                benchmarks=args.benchmarks,
                samples=args.samples,
                seed=2,
                project=PROJECT,
                branch="main",
                commit="cafe" + "0" * 36,
                started_at=START + timedelta(hours=4 * args.runs + 1),
            )
            start = time.perf_counter()
            client.post("/api/v1/runs", json=onto_main).raise_for_status()
            upload_s = time.perf_counter() - start
            with open_store(db_url) as store:
                refresh_s = refresh_seconds(store, onto_main["run"]["id"])
            print(
                f"upload of one run of {args.benchmarks} benchmarks onto main's {args.runs}-run "
                f"history, change points of its series refreshed: {upload_s * 1000:.0f} ms; "
                f"the refresh alone, again in process and rolled back: {refresh_s * 1000:.0f} ms"
            )
            base = _commit(args.runs - 1)
            cmp_params = {"project": PROJECT, "base": base, "head": "feed"}
            comparison = client.get("/api/v1/compare", params=cmp_params).json()
            seconds = latencies(
                lambda: client.get("/api/v1/compare", params=cmp_params), max(10, args.repeats // 3)
            )
            print(
                f"compare {len(comparison['results'])} results (feature vs main, noise model from "
                f"history): p50 {p(seconds, 50):.0f} ms, p95 {p(seconds, 95):.0f} ms"
            )
            print(
                upload_throughput(
                    url,
                    token,
                    clients=4,
                    documents=40,
                    benchmarks=args.benchmarks,
                    samples=args.samples,
                )
            )
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
        print(f"dropped {name}")
    print("\n".join(large_comparison(args.pg, large)))


if __name__ == "__main__":
    main()
