"""Storing results documents, on SQLite and on the real PostgreSQL server."""

from __future__ import annotations

import copy
import gc
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from perfgate.errors import ConflictError, DocumentError
from perfgate.results import ResultsDocument, parse_document, parse_document_bytes
from perfgate.store import bulk, models, row_writes, uploads
from perfgate.store.connect import Store
from perfgate.store.documents import rebuild_document
from perfgate.store.uploads import store_document, store_document_bytes
from synthetic import synthetic_document


def _counts(store: Store) -> dict[str, int]:
    with store.sessions() as session:
        return row_writes.count_rows(session)


def test_store_and_rebuild_exactly(store: Store) -> None:
    data = synthetic_document(benchmarks=20, samples=40, seed=3)
    data["benchmarks"][0]["metrics"]["time"]["rounds"] = [10, 30]
    data["benchmarks"][1].update(metrics={}, error="RuntimeError: setup failed", profile=None)
    data["benchmarks"][2]["tags"] = ["model", "slow"]
    doc = parse_document(data)
    outcome = store_document(store.sessions, doc)
    assert outcome.created
    assert (outcome.benchmarks, outcome.samples) == (20, 19 * 40)

    with store.sessions() as session:
        rebuilt = rebuild_document(session, run_id=doc.run.id)
    assert rebuilt is not None
    assert rebuilt.to_json_dict() == doc.to_json_dict()
    assert rebuilt.content_hash() == doc.content_hash()


def test_summary_columns(store: Store) -> None:
    data = synthetic_document(benchmarks=1, samples=4, seed=1)
    data["benchmarks"][0]["metrics"]["time"]["samples"] = [1.0, 2.0, 3.0, 10.0]
    store_document(store.sessions, parse_document(data))
    with store.sessions() as session:
        row = session.scalars(
            select(models.Measurement).where(models.Measurement.metric == "time")
        ).one()
        flops = session.scalars(
            select(models.Measurement).where(models.Measurement.metric == "flops")
        ).one()
    assert (row.n, row.median, row.min, row.max) == (4, 2.5, 1.0, 10.0)
    assert row.iqr == pytest.approx(4.75 - 1.75)
    assert row.branch == "main" and row.started_at.tzinfo is not None
    assert (flops.exact, flops.value, flops.samples) == (True, 2 * 64**3, None)


def test_same_document_twice_is_stored_once(store: Store) -> None:
    doc = parse_document(synthetic_document(benchmarks=200, samples=40, seed=5))
    assert store_document(store.sessions, doc).created
    before = _counts(store)
    again = store_document(store.sessions, doc)
    assert not again.created
    assert _counts(store) == before
    assert before["runs"] == 1 and before["measurements"] == 600


def test_same_id_different_content_conflicts(store: Store) -> None:
    data = synthetic_document(benchmarks=5, samples=10, seed=5)
    store_document(store.sessions, parse_document(data))
    before = _counts(store)
    changed = copy.deepcopy(data)
    changed["benchmarks"][0]["metrics"]["time"]["samples"][0] += 1e-6
    with pytest.raises(ConflictError, match="already stored with different content"):
        store_document(store.sessions, parse_document(changed))
    assert _counts(store) == before


def test_environment_and_benchmarks_are_shared(store: Store) -> None:
    first = synthetic_document(benchmarks=10, samples=5, seed=1)
    second = synthetic_document(benchmarks=12, samples=5, seed=2)  # other host, same fingerprint
    assert first["environment"]["hostname"] != second["environment"]["hostname"]
    for data in (first, second):
        store_document(store.sessions, parse_document(data))
    counts = _counts(store)
    assert counts["environments"] == 1
    assert counts["benchmarks"] == 12
    assert counts["runs"] == 2
    with store.sessions() as session:
        rebuilt = rebuild_document(session, run_id=second["run"]["id"])
    assert rebuilt is not None
    assert rebuilt.environment.as_dict()["hostname"] == second["environment"]["hostname"]

    other_project = synthetic_document(benchmarks=10, samples=5, seed=3, project="acme/other")
    store_document(store.sessions, parse_document(other_project))
    assert _counts(store)["benchmarks"] == 22


def test_environment_fields_missing_from_a_later_run_stay_missing(store: Store) -> None:
    first = synthetic_document(benchmarks=1, samples=3, seed=1)
    second = synthetic_document(benchmarks=1, samples=3, seed=2)
    del second["environment"]["torch"]
    for data in (first, second):
        store_document(store.sessions, parse_document(data))
    with store.sessions() as session:
        rebuilt = rebuild_document(session, run_id=second["run"]["id"])
    assert rebuilt is not None and "torch" not in rebuilt.environment.as_dict()


def test_failure_midway_stores_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store_document(store.sessions, parse_document(synthetic_document(benchmarks=3, seed=1)))
    before = _counts(store)
    real_write_rows = bulk.write_rows

    def failing_write_rows(session: Any, *, table: Any, columns: Any, rows: Any) -> int:
        if table.name == "ops":  # instances and measurements are already sent by now
            raise RuntimeError("simulated crash")
        return real_write_rows(session, table=table, columns=columns, rows=rows)

    monkeypatch.setattr(bulk, "write_rows", failing_write_rows)
    data = synthetic_document(benchmarks=30, seed=9, project="acme/new")
    with pytest.raises(RuntimeError, match="simulated crash"):
        store_document(store.sessions, parse_document(data))
    assert _counts(store) == before


def test_stored_hash_is_the_documents(store: Store) -> None:
    """The hash is computed beside the insert and set before the commit: never the placeholder."""
    doc = parse_document(synthetic_document(benchmarks=30, samples=5, seed=21))
    store_document(store.sessions, doc)
    with store.sessions() as session:
        run = row_writes.get_run(session, run_id=doc.run.id)
    assert run is not None and run.content_hash == doc.content_hash() != uploads.PENDING_HASH
    assert not [t for t in threading.enumerate() if t.name.startswith("perfgate-hash")]


def test_failing_hash_stores_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store_document(store.sessions, parse_document(synthetic_document(benchmarks=3, seed=1)))
    before = _counts(store)

    def failing_hash(self: ResultsDocument) -> str:
        raise RuntimeError("simulated hash failure")

    monkeypatch.setattr(ResultsDocument, "content_hash", failing_hash)
    data = synthetic_document(benchmarks=30, seed=9, project="acme/new")
    with pytest.raises(RuntimeError, match="simulated hash failure"):
        store_document(store.sessions, parse_document(data))
    assert _counts(store) == before


def test_concurrent_duplicate_insert_is_recognised(store: Store) -> None:
    """A run that appears between the existence check and the insert is judged, not crashed on."""
    data = synthetic_document(benchmarks=2, samples=3, seed=4)
    doc = parse_document(data)
    store_document(store.sessions, doc)

    original = uploads.row_writes.get_run
    calls = {"n": 0}

    def stale_get_run(session: Any, *, run_id: str) -> Any:
        calls["n"] += 1
        return None if calls["n"] == 1 else original(session, run_id=run_id)

    uploads.row_writes.get_run = stale_get_run  # type: ignore[assignment]
    try:
        outcome = store_document(store.sessions, doc)
    finally:
        uploads.row_writes.get_run = original  # type: ignore[assignment]
    assert not outcome.created and calls["n"] == 2


# --- bytes to store in one call (the HTTP upload), the collector paused throughout ---------------


def test_bytes_are_parsed_then_stored(store: Store) -> None:
    data = synthetic_document(benchmarks=5, samples=4, seed=11)
    raw = json.dumps(data).encode()
    refused = PermissionError("not this project")
    seen: list[str] = []

    def refuse(document: ResultsDocument) -> None:
        seen.append(document.run.project)
        raise refused

    with pytest.raises(PermissionError) as caught:
        store_document_bytes(store.sessions, raw, accept=refuse)
    assert caught.value is refused and seen == [data["run"]["project"]]
    assert _counts(store)["runs"] == 0
    outcome = store_document_bytes(store.sessions, raw, accept=lambda document: None)
    assert outcome.created and (outcome.benchmarks, outcome.samples) == (5, 20)
    with store.sessions() as session:
        stored = row_writes.get_run(session, run_id=data["run"]["id"])
    assert stored is not None
    assert stored.content_hash == parse_document(data).content_hash()
    assert not store_document_bytes(store.sessions, raw).created
    with pytest.raises(DocumentError, match=r"^benchmarks\[0\]\.key"):
        store_document_bytes(store.sessions, raw.replace(b'"key": "', b'"key": "x', 1))


def _alive_when_collection_resumes(
    monkeypatch: pytest.MonkeyPatch, wanted: Callable[[object], bool]
) -> list[int]:
    """Patches `gc.enable` (what gc_pause calls at the end of the last pause) to count the live
    objects that `wanted` picks at that moment; returns the list the counts go to."""
    counts: list[int] = []
    enable = gc.enable

    def counting_enable() -> None:
        # Collection resumes whatever the count finds: a failure here must not leave the
        # collector off for every later test in the worker.
        try:
            counts.append(sum(1 for o in gc.get_objects() if wanted(o)))
        finally:
            enable()

    monkeypatch.setattr(gc, "enable", counting_enable)
    return counts


def test_decoded_data_is_freed_inside_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects alive when the collector resumes are walked by it, several times over for a large
    document (gc_pause): the decoded JSON, which only validation needs, must be gone by then."""
    data = synthetic_document(benchmarks=3, samples=2, seed=2)
    raw = json.dumps(data).encode()
    counts = _alive_when_collection_resumes(
        monkeypatch, lambda o: type(o) is dict and o is not data and o.get("run") == data["run"]
    )
    assert gc.isenabled()
    document = parse_document_bytes(raw)
    assert counts == [0] and document.run.id == data["run"]["id"]


def test_uploaded_document_is_freed_inside_the_pause(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = synthetic_document(benchmarks=3, samples=2, seed=3)
    counts = _alive_when_collection_resumes(
        # `type`, not `isinstance`: the walk meets weak proxies whose referent has died (torch's
        # among them, once a test in the worker imported it), and isinstance dereferences them.
        monkeypatch,
        lambda o: type(o) is ResultsDocument and o.run.id == data["run"]["id"],
    )
    assert gc.isenabled()
    assert store_document_bytes(store.sessions, json.dumps(data).encode()).created
    assert counts == [0]
