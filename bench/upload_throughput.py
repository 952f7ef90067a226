"""Upload throughput of the store: a 200-benchmark document into SQLite and PostgreSQL.

Prints benchmarks x samples per second for each backend, and checks that uploading the same
document twice stores it once. Usage:

    python bench/upload_throughput.py [--pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from perfgate.results import parse_document
from perfgate.store import repository
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

BENCHMARKS, SAMPLES, REPEATS = 200, 40, 7


def measure(url: str, label: str) -> None:
    documents = [
        parse_document(synthetic_document(benchmarks=BENCHMARKS, samples=SAMPLES, seed=s))
        for s in range(REPEATS + 1)
    ]
    with open_store(url) as store:
        store_document(store.sessions, documents[0])  # warm: project, environment, benchmarks
        seconds = []
        for document in documents[1:]:
            start = time.perf_counter()
            outcome = store_document(store.sessions, document)
            seconds.append(time.perf_counter() - start)
            assert outcome.created
        start = time.perf_counter()
        again = store_document(store.sessions, documents[1])
        repeat_s = time.perf_counter() - start
        with store.sessions() as session:
            runs = repository.count_rows(session)["runs"]
    assert not again.created and runs == REPEATS + 1, "a repeated upload stored something"
    median = statistics.median(seconds)
    print(
        f"{label:10s} upload of {BENCHMARKS} benchmarks x {SAMPLES} samples: "
        f"median {median * 1000:7.1f} ms, best {min(seconds) * 1000:7.1f} ms "
        f"-> {BENCHMARKS * SAMPLES / median:,.0f} samples/s "
        f"({BENCHMARKS / median:,.0f} benchmarks/s); same document again: "
        f"{repeat_s * 1000:.1f} ms, stored once"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pg",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="admin URL of a PostgreSQL server (a scratch database is made)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measure(f"sqlite:///{Path(tmp) / 'bench.db'}", "sqlite")
    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    name = f"perfgate_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        measure(make_url(args.pg).set(database=name).render_as_string(False), "postgresql")
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
