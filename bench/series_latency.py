"""GET /api/v1/series with and without the server's answer cache, interleaved on one server.

Loads a scratch PostgreSQL database with `service_scale.load` (by default 2,000 runs x 2
benchmarks on `main`, 40 samples each), computes its change points as migration 0004 does,
vacuums `measurements`, starts `perfgate serve`, and times the same series (one benchmark's
whole history) alternately as a repeat request (answered from the cache, api/series_cache.py)
and with a new `until` past the last run each time (same points, a cache miss: read and
serialised as before the cache). Prints p50/p95 of each; drops the database.

    python bench/series_latency.py [--pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres]
                                   [--runs 2000] [--benchmarks 2] [--requests 60] [--workers 1]
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from perfgate.store import migrate
from perfgate.store.change_points import backfill_changes
from perfgate.store.connect import open_store
from perfgate.store.engine import make_engine
from perfgate.store.tokens import create_token
from service_scale import PROJECT, _key, load  # bench/, the script's folder
from upload_throughput import serve


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--benchmarks", type=int, default=2)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    name = f"perfgate_series_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    db_url = make_url(args.pg).set(database=name).render_as_string(hide_password=False)
    try:
        engine = make_engine(db_url)
        migrate.upgrade(engine)
        engine.dispose()
        load(db_url, runs=args.runs, benchmarks=args.benchmarks, samples=args.samples)
        with open_store(db_url) as store:
            with store.sessions() as session, session.begin():
                backfill_changes(session)
            token = create_token(store.sessions, project=PROJECT, scope="read").token
        conninfo = make_url(db_url).set(drivername="postgresql")
        with psycopg.connect(conninfo.render_as_string(hide_password=False)) as pg:
            pg.autocommit = True
            pg.execute("VACUUM (ANALYZE) measurements")
        asked = {"project": PROJECT, "key": _key(0), "metric": "time", "branch": "main"}
        past_the_end = datetime(2100, 1, 1, tzinfo=timezone.utc)
        cached: list[float] = []
        uncached: list[float] = []
        headers = {"Authorization": f"Bearer {token}"}
        with (
            serve(db_url, workers=args.workers) as (url, _),
            httpx.Client(base_url=url, headers=headers, timeout=60) as client,
        ):
            for _ in range(5):
                client.get("/api/v1/series", params=asked).raise_for_status()
            for i in range(args.requests):
                start = time.perf_counter()
                hit = client.get("/api/v1/series", params=asked)
                cached.append(time.perf_counter() - start)
                until = (past_the_end + timedelta(seconds=i)).isoformat()
                start = time.perf_counter()
                miss = client.get("/api/v1/series", params={**asked, "until": until})
                uncached.append(time.perf_counter() - start)
                assert hit.content == miss.content, "the cached answer differs"
        points = len(hit.json()["points"])
        print(
            f"series of {asked['key']}: {points} points, {len(hit.content):,} bytes, "
            f"{args.requests} requests each, perfgate serve --workers {args.workers}"
        )
        print(
            f"  cached:   p50 {percentile(cached, 50):.1f} ms, p95 {percentile(cached, 95):.1f} ms"
        )
        print(
            f"  uncached: p50 {percentile(uncached, 50):.1f} ms, "
            f"p95 {percentile(uncached, 95):.1f} ms"
        )
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
