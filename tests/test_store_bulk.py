"""Bulk storage of large documents: COPY on PostgreSQL, batched executemany on SQLite.

Each test runs on a real SQLite file and on the real PostgreSQL server (the `store` fixture).
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Column, Integer, MetaData, Numeric, Table, text
from sqlalchemy.exc import DataError, IntegrityError

from perfgate.results import ResultsDocument, parse_document
from perfgate.stats.summary import stored_median_ci, summarize
from perfgate.store import bulk, documents, models, row_writes, run_inserts
from perfgate.store.connect import Store
from perfgate.store.documents import rebuild_document
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

# Thousands of samples, and several chunks of sample summaries (SUMMARY_CHUNK).
BENCHMARKS, SAMPLES = 2500, 8


def _counts(store: Store) -> dict[str, int]:
    with store.sessions() as session:
        return row_writes.count_rows(session)


def _large(seed: int = 11, **kwargs: Any) -> dict[str, Any]:
    data = synthetic_document(benchmarks=BENCHMARKS, samples=SAMPLES, seed=seed, **kwargs)
    rng = np.random.default_rng(seed)
    benches = data["benchmarks"]
    # Every shape a row can take: rounds, tags, errors without metrics, no profile, a trace,
    # sample counts below and above the CI's minimum of 6, and tied samples.
    benches[0]["metrics"]["time"]["rounds"] = [3, 5]
    benches[1].update(metrics={}, error="RuntimeError: setup failed", profile=None)
    benches[2]["tags"] = ["model", "slow"]
    benches[3]["profile"]["trace"] = "traces/3.json"
    benches[4]["metrics"]["time"]["note"] = "warm cache"
    for i in range(5, BENCHMARKS, 7):
        n = int(rng.integers(1, 40))
        benches[i]["metrics"]["time"]["samples"] = np.round(rng.lognormal(0, 0.1, n), 2).tolist()
    return data


def test_large_document_round_trips(store: Store) -> None:
    doc = parse_document(_large())
    outcome = store_document(store.sessions, doc)
    assert outcome.created
    counts = _counts(store)
    assert counts["instances"] == BENCHMARKS
    assert counts["measurements"] == outcome.measurements == 3 * BENCHMARKS - 3
    assert counts["ops"] == outcome.ops == 5 * (BENCHMARKS - 1)
    with store.sessions() as session:
        rebuilt = rebuild_document(session, run_id=doc.run.id)
    assert rebuilt is not None
    assert rebuilt.to_json_dict() == doc.to_json_dict()
    assert rebuilt.content_hash() == doc.content_hash()


def _insert_through_sqlalchemy(store: Store, document: ResultsDocument) -> None:
    """Store `document` as store_document does, but with SQLAlchemy's own INSERT statements."""
    with store.sessions() as session, session.begin():
        project_id = run_inserts.insert_run(session, document, document.content_hash())
        ids = row_writes.ensure_benchmarks(
            session,
            project_id=project_id,
            specs=[
                row_writes.BenchmarkSpec(key=b.key, name=b.name, params=b.params)
                for b in document.benchmarks
            ],
        )
        for model, columns, rows in (
            (models.Instance, documents.INSTANCE_COLUMNS, documents.instance_rows),
            (models.Measurement, documents.MEASUREMENT_COLUMNS, documents.measurement_rows),
            (models.Op, documents.OP_COLUMNS, documents.op_rows),
        ):
            session.execute(
                row_writes.table_of(model).insert(),
                [dict(zip(columns, row, strict=True)) for row in rows(document, benchmark_ids=ids)],
            )


def _stored(store: Store, table: str, run_id: str) -> list[tuple[Any, ...]]:
    """Every column but the ids, exactly as the database holds it, in insertion order: the text
    PostgreSQL prints for each value; SQLite's value and its storage class."""
    columns = [
        c.name for c in models.Base.metadata.tables[table].c if c.name not in ("id", "run_id")
    ]
    if store.engine.dialect.name == "postgresql":
        select = ", ".join(f'CAST("{c}" AS TEXT)' for c in columns)
    else:
        select = ", ".join(f'"{c}", typeof("{c}")' for c in columns)
    order = "position" if table == "instances" else "id"
    with store.sessions() as session:
        rows = session.execute(
            text(f"SELECT {select} FROM {table} WHERE run_id = :r ORDER BY {order}"),
            {"r": run_id},
        )
        return [tuple(row) for row in rows]


def test_bulk_rows_equal_sqlalchemy_inserts(store: Store) -> None:
    """COPY (PostgreSQL) and the driver's executemany (SQLite) store what SQLAlchemy would."""
    data = _large()
    bulk_written = parse_document(data)
    store_document(store.sessions, bulk_written)
    reference = copy.deepcopy(data)
    reference["run"]["id"] = str(uuid.uuid4())
    inserted = parse_document(reference)
    _insert_through_sqlalchemy(store, inserted)
    for table in ("instances", "measurements", "ops"):
        ours = _stored(store, table, bulk_written.run.id)
        theirs = _stored(store, table, inserted.run.id)
        assert len(ours) > 0 and ours == theirs, table


@pytest.fixture
def refuse_boom_op(store: Store) -> Iterator[None]:
    """A real constraint of the database that refuses any profile row named 'boom'."""
    backend = store.engine.dialect.name
    with store.engine.begin() as conn:
        if backend == "postgresql":
            conn.execute(text("ALTER TABLE ops ADD CONSTRAINT test_no_boom CHECK (op <> 'boom')"))
        else:
            conn.execute(
                text(
                    "CREATE TRIGGER test_no_boom BEFORE INSERT ON ops WHEN NEW.op = 'boom' "
                    "BEGIN SELECT RAISE(ABORT, 'no boom'); END"
                )
            )
    yield
    with store.engine.begin() as conn:
        if backend == "postgresql":
            conn.execute(text("ALTER TABLE ops DROP CONSTRAINT test_no_boom"))
        else:
            conn.execute(text("DROP TRIGGER test_no_boom"))


def test_a_row_refused_mid_copy_stores_nothing(store: Store, refuse_boom_op: None) -> None:
    store_document(store.sessions, parse_document(synthetic_document(benchmarks=3, seed=1)))
    before = _counts(store)
    data = _large(project="acme/new")
    # The very last row of the last table: thousands of rows are already sent when it fails.
    data["benchmarks"][-1]["profile"]["ops"][-1]["op"] = "boom"
    with pytest.raises(IntegrityError):
        store_document(store.sessions, parse_document(data))
    assert _counts(store) == before
    with store.sessions() as session:
        assert row_writes.get_run(session, run_id=data["run"]["id"]) is None


def test_a_failing_row_generator_stores_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_document(store.sessions, parse_document(synthetic_document(benchmarks=3, seed=1)))
    before = _counts(store)
    real_op_rows = documents.op_rows

    def failing_op_rows(document: ResultsDocument, **kwargs: Any) -> Iterator[tuple[Any, ...]]:
        for i, row in enumerate(real_op_rows(document, **kwargs)):
            if i == 7000:
                raise RuntimeError("simulated crash")
            yield row

    monkeypatch.setattr(run_inserts, "op_rows", failing_op_rows)
    doc = parse_document(_large(project="acme/new"))
    with pytest.raises(RuntimeError, match="simulated crash"):
        store_document(store.sessions, doc)
    assert _counts(store) == before
    # The connection the failed upload used is healthy: the same document now stores whole.
    monkeypatch.undo()
    assert store_document(store.sessions, doc).created
    assert _counts(store)["ops"] == before["ops"] + 5 * (BENCHMARKS - 1)


def test_concurrent_uploads_store_each_run_once(store: Store) -> None:
    # Four runs of one new project, each sent three times at once: the runs share every (new)
    # benchmark, and each run id is stored by exactly one of its uploads.
    distinct = [
        parse_document(synthetic_document(benchmarks=600, samples=6, seed=s, project="acme/race"))
        for s in range(4)
    ]
    uploads_ = [doc for doc in distinct for _ in range(3)]
    barrier = threading.Barrier(len(uploads_))

    def upload(doc: ResultsDocument) -> tuple[str, bool]:
        barrier.wait()
        return doc.run.id, store_document(store.sessions, doc).created

    with ThreadPoolExecutor(max_workers=len(uploads_)) as pool:
        outcomes = list(pool.map(upload, uploads_))
    created = sorted(run_id for run_id, was_created in outcomes if was_created)
    assert created == sorted(doc.run.id for doc in distinct)
    counts = _counts(store)
    assert (counts["runs"], counts["benchmarks"]) == (4, 600)
    assert counts["measurements"] == 4 * 600 * 3 and counts["ops"] == 4 * 600 * 5


def test_sample_summaries_equal_the_one_list_functions() -> None:
    rng = np.random.default_rng(5)
    lists: list[list[float]] = []
    for _ in range(400):
        n = int(rng.integers(1, 50))
        values = rng.lognormal(0, 0.5, n)
        # Ties and repeated values, as coarse timers give.
        lists.append((np.round(values, 1) if rng.random() < 0.3 else values).tolist())
    for (summary, ci, blob), samples in zip(documents.sample_summaries(lists), lists, strict=True):
        assert summary == summarize(samples)
        assert ci == stored_median_ci(samples)
        assert blob == row_writes.pack_samples(samples)


def test_stored_benchmarks_that_may_differ(store: Store) -> None:
    """ensure_benchmark_rows hands back every stored row whose name or params differ as JSON from
    the spec's (some that are the same JSON may come too), and the same ids either way."""
    specs = [
        row_writes.BenchmarkSpec(key="k[n=1]", name="k", params={"n": 1}),
        row_writes.BenchmarkSpec(key="m[a=1,b=2]", name="m", params={"a": 1, "b": 2.5}),
        row_writes.BenchmarkSpec(key="plain", name="plain", params={}),
    ]
    with store.sessions() as session, session.begin():
        project_id = row_writes.ensure_project(session, name="acme/shared")
        ids, differing = bulk.ensure_benchmark_rows(session, project_id=project_id, specs=specs)
        if store.engine.dialect.name == "postgresql":
            assert differing == {}  # created by this call from these very specs
        again = [
            row_writes.BenchmarkSpec(key="k[n=1]", name="k", params={"n": "1"}),  # 1 is not "1"
            row_writes.BenchmarkSpec(key="m[a=1,b=2]", name="m", params={"b": 2.5, "a": 1}),
            row_writes.BenchmarkSpec(key="plain", name="plain", params={}),
            row_writes.BenchmarkSpec(key="new", name="new", params={"x": [1, 2]}),
        ]
        ids_again, differing = bulk.ensure_benchmark_rows(
            session, project_id=project_id, specs=again
        )
    assert {key: ids_again[key] for key in ids} == ids and len(ids_again) == 4
    assert differing["k[n=1]"].params == {"n": 1} and differing["k[n=1]"].name == "k"
    if store.engine.dialect.name == "postgresql":
        # Only rows whose stored text differs from the spec's are read back and decoded there.
        assert set(differing) == {"k[n=1]", "m[a=1,b=2]"}
    # The same JSON in another key order is no override.
    stored = differing["m[a=1,b=2]"]
    bench = parse_document(synthetic_document(benchmarks=1, samples=1, seed=1)).benchmarks[0]
    same = bench.model_copy(update={"name": "m", "params": {"b": 2.5, "a": 1}})
    assert documents.benchmark_override(same, (stored.name, stored.params)) is None


def test_an_int_out_of_its_columns_range_is_refused(store: Store) -> None:
    """What an int4 column cannot hold is refused, as a text COPY's server would: binary COPY
    would otherwise store 2**40 as 0 (psycopg packs it without a range check)."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("COPY is PostgreSQL's; SQLite's integers hold 64 bits")
    counts = Table("int_rows", MetaData(), Column("n", Integer))
    with store.sessions() as session, session.begin():
        session.execute(text("CREATE TABLE int_rows (n int4)"))
    try:
        for value in (2**40, -(2**31) - 1):
            with (
                pytest.raises(DataError, match="out of range"),
                store.sessions() as session,
                session.begin(),
            ):
                bulk.write_rows(session, table=counts, columns=("n",), rows=[(7,), (value,)])
        with store.sessions() as session, session.begin():
            assert bulk.write_rows(session, table=counts, columns=("n",), rows=[(2**31 - 1,)]) == 1
            stored = session.execute(text("SELECT n FROM int_rows")).scalars().all()
        assert stored == [2**31 - 1]
    finally:
        with store.sessions() as session, session.begin():
            session.execute(text("DROP TABLE int_rows"))


def test_upload_tables_copy_binary(store: Store) -> None:
    """The upload's three tables go by binary COPY; a column type without a binary form here
    makes the COPY textual, and its rows still store."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    with store.sessions() as session:
        cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
        for model, columns in (
            (models.Instance, documents.INSTANCE_COLUMNS),
            (models.Measurement, documents.MEASUREMENT_COLUMNS),
            (models.Op, documents.OP_COLUMNS),
        ):
            assert bulk._wire_types(cursor, model.__table__, columns) is not None, model
        session.execute(text("CREATE TEMP TABLE money_rows (n int4, amount numeric)"))
        odd = Table("money_rows", MetaData(), Column("n", Integer), Column("amount", Numeric))
        assert bulk._wire_types(cursor, odd, ("n", "amount")) is None
        assert bulk.write_rows(session, table=odd, columns=("n", "amount"), rows=[(1, 2.5)]) == 1
        assert session.execute(text("SELECT n, amount FROM money_rows")).one() == (1, 2.5)
