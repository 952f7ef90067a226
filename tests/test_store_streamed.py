"""The upload stored while it is validated, a slice of benchmarks at a time (store_document_bytes):
the same rows, hash and answers as the whole-document path, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import select

from perfgate import document_slices
from perfgate.errors import ConflictError, DocumentError, PermissionDeniedError
from perfgate.results import (
    ContentHasher,
    ResultsDocument,
    parse_document,
    parse_document_bytes,
)
from perfgate.store import models, row_writes, run_inserts, uploads
from perfgate.store.connect import Store
from perfgate.store.documents import rebuild_document
from perfgate.store.uploads import store_document_bytes
from synthetic import synthetic_document

# Small slices, so that a document of a dozen benchmarks is written in four of them.
SLICE = 3


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document_slices, "SLICE", SLICE)


def _counts(store: Store) -> dict[str, int]:
    with store.sessions() as session:
        return row_writes.count_rows(session)


def _varied(benchmarks: int = 11, seed: int = 5, project: str = "acme/models") -> dict[str, Any]:
    data = synthetic_document(benchmarks=benchmarks, samples=6, seed=seed, project=project)
    data["benchmarks"][1]["metrics"]["time"]["rounds"] = [2, 4]
    data["benchmarks"][4].update(metrics={}, error="RuntimeError: setup failed", profile=None)
    data["benchmarks"][7]["tags"] = ["model", "größe"]
    data["run"]["ci"] = {"job": "gpu", "nested": {"a": [1, 2.5, None]}}
    return data


def _no_whole_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def whole(*args: Any) -> Any:
        raise AssertionError("the whole-document path was taken")

    monkeypatch.setattr(uploads, "_parse_and_store", whole)


def _writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("perfgate-store")]


def test_streamed_upload_stores_what_the_whole_path_stores(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _varied()
    doc = parse_document(data)
    _no_whole_path(monkeypatch)
    outcome = store_document_bytes(store.sessions, json.dumps(data).encode())
    assert outcome == run_inserts.outcome(doc, run_inserts.Counts.of(doc.benchmarks), created=True)
    with store.sessions() as session:
        rebuilt = rebuild_document(session, run_id=doc.run.id)
        run = row_writes.get_run(session, run_id=doc.run.id)
        positions = session.scalars(
            select(models.Instance.position).order_by(models.Instance.position)
        ).all()
    assert rebuilt is not None and rebuilt.to_json_dict() == doc.to_json_dict()
    assert run is not None and run.content_hash == doc.content_hash()
    assert positions == list(range(11))
    assert not _writer_threads()


@pytest.mark.parametrize("benchmarks", [0, 1, 3, 4, 7])
@pytest.mark.parametrize("step", [1, 2, 3, 1024])
def test_content_hasher_fed_in_slices_is_the_content_hash(benchmarks: int, step: int) -> None:
    doc = parse_document(synthetic_document(benchmarks=benchmarks, samples=2, seed=benchmarks))
    hasher = ContentHasher()
    for start in range(0, benchmarks, step):
        hasher.add_benchmarks(doc.benchmarks[start : start + step])
    assert hasher.hexdigest(doc) == doc.content_hash()


def _bad_sample(data: dict[str, Any]) -> None:
    data["benchmarks"][10]["metrics"]["time"]["samples"][0] = "fast"


def _duplicate_across_slices(data: dict[str, Any]) -> None:
    data["benchmarks"][9] = copy.deepcopy(data["benchmarks"][2])


def _wrong_key(data: dict[str, Any]) -> None:
    data["benchmarks"][6]["key"] += "x"


def _two_problems(data: dict[str, Any]) -> None:
    # The duplicate comes first in the document, but pydantic's error is named first.
    _duplicate_across_slices(data)
    _bad_sample(data)


def _bad_run(data: dict[str, Any]) -> None:
    data["run"]["commit"] = "not a commit"


def _benchmarks_not_a_list(data: dict[str, Any]) -> None:
    data["benchmarks"] = {"a": 1}


@pytest.mark.parametrize(
    "mutate",
    [_bad_sample, _duplicate_across_slices, _wrong_key, _two_problems, _bad_run],
)
def test_a_refused_document_gets_the_whole_paths_error(
    store: Store, mutate: Callable[[dict[str, Any]], None]
) -> None:
    data = _varied()
    mutate(data)
    raw = json.dumps(data).encode()
    with pytest.raises(DocumentError) as expected:
        parse_document_bytes(raw)
    before = _counts(store)
    with pytest.raises(DocumentError) as got:
        store_document_bytes(store.sessions, raw)
    assert (got.value.path, str(got.value)) == (expected.value.path, str(expected.value))
    assert _counts(store) == before
    assert not _writer_threads()


@pytest.mark.parametrize(
    "raw",
    [
        # Outside the common case, decided by the whole path from the start.
        lambda data: json.dumps(data).replace('"unit"', '"unit": "x", "unit"', 1).encode(),
        lambda data: (_benchmarks_not_a_list(data), json.dumps(data).encode())[1],
    ],
    ids=["duplicate JSON key", "benchmarks not a list"],
)
def test_outside_the_common_case_the_whole_path_answers(
    store: Store, raw: Callable[[dict[str, Any]], bytes]
) -> None:
    body = raw(_varied())
    with pytest.raises(DocumentError) as expected:
        parse_document_bytes(body)
    with pytest.raises(DocumentError) as got:
        store_document_bytes(store.sessions, body)
    assert str(got.value) == str(expected.value)


def _refuse_project(document: ResultsDocument) -> None:
    if document.run.project != "acme/mine":
        raise PermissionDeniedError(f"not {document.run.project}")


def test_accept_is_given_the_head_and_an_invalid_document_is_named_first(store: Store) -> None:
    seen: list[int] = []

    def accept(document: ResultsDocument) -> None:
        seen.append(len(document.benchmarks))
        _refuse_project(document)

    data = _varied(project="acme/mine")
    assert store_document_bytes(store.sessions, json.dumps(data).encode(), accept=accept).created
    assert seen == [0]  # the run and environment, before any benchmark was validated
    other = _varied(seed=6, project="acme/theirs")
    with pytest.raises(PermissionDeniedError):
        store_document_bytes(store.sessions, json.dumps(other).encode(), accept=accept)
    # Invalid as well as refused: the document's error comes first, as in the whole path.
    _bad_sample(other)
    with pytest.raises(DocumentError, match=r"benchmarks\[10\]"):
        store_document_bytes(store.sessions, json.dumps(other).encode(), accept=accept)
    assert _counts(store)["runs"] == 1


def test_a_stored_run_is_judged_by_the_whole_path(store: Store) -> None:
    data = _varied()
    raw = json.dumps(data).encode()
    assert store_document_bytes(store.sessions, raw).created
    again = store_document_bytes(store.sessions, raw)
    assert not again.created and again.benchmarks == 11
    data["benchmarks"][10]["metrics"]["time"]["samples"][0] *= 2
    with pytest.raises(ConflictError):
        store_document_bytes(store.sessions, json.dumps(data).encode())


def test_a_writer_failure_mid_stream_stores_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_document_bytes(store.sessions, json.dumps(_varied(seed=1)).encode())
    before = _counts(store)
    real_op_rows = run_inserts.op_rows
    slices_written: list[int] = []

    def failing_op_rows(document: ResultsDocument, **kwargs: Any) -> Iterator[tuple[Any, ...]]:
        slices_written.append(len(document.benchmarks))
        if len(slices_written) == 3:
            raise RuntimeError("simulated crash")
        return real_op_rows(document, **kwargs)

    monkeypatch.setattr(run_inserts, "op_rows", failing_op_rows)
    raw = json.dumps(_varied(seed=2, project="acme/new")).encode()
    with pytest.raises(RuntimeError, match="simulated crash"):
        store_document_bytes(store.sessions, raw)
    assert _counts(store) == before and slices_written == [SLICE] * 3
    assert not _writer_threads()
    monkeypatch.undo()
    monkeypatch.setattr(document_slices, "SLICE", SLICE)
    assert store_document_bytes(store.sessions, raw).created


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_concurrent_uploads_of_shared_new_benchmarks_in_other_orders(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slices insert new benchmarks in slice order, not key order: without the project's lock on
    inserting new benchmarks, uploads sharing them in other orders deadlock (PostgreSQL aborts
    one: 5 of these 6 did)."""
    base = synthetic_document(benchmarks=300, samples=3, seed=3, project="acme/race")
    # The project and environment exist (a new project's row alone would serialize the uploads).
    warm = copy.deepcopy(base)
    warm["run"]["id"] = "00000000-0000-4000-8000-100000000000"
    warm["benchmarks"] = [{**base["benchmarks"][0], "name": "warmup", "key": "warmup"}]
    warm["benchmarks"][0]["params"] = {}
    store_document_bytes(store.sessions, json.dumps(warm).encode())
    bodies = []
    for i in range(6):
        data = copy.deepcopy(base)
        data["run"]["id"] = f"00000000-0000-4000-8000-{i:012d}"
        if i % 2:
            data["benchmarks"].reverse()
        bodies.append(json.dumps(data).encode())
    whole_path: list[str] = []
    monkeypatch.setattr(uploads, "_parse_and_store", lambda *args: whole_path.append("x"))
    barrier = threading.Barrier(len(bodies))

    def upload(body: bytes) -> bool:
        barrier.wait()
        return store_document_bytes(store.sessions, body).created

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        assert all(pool.map(upload, bodies))
    assert not whole_path
    counts = _counts(store)
    assert (counts["runs"], counts["benchmarks"], counts["instances"]) == (7, 301, 1801)
