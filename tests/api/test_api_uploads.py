"""POST /api/v1/runs over a real socket: every status of docs/architecture.md §8, and bodies that
must never answer 500."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
from apihelpers import OTHER, PROJECT, TEST_LIMIT, Api, document

from perfgate.results import parse_document
from perfgate.store.connect import open_store
from perfgate.store.row_writes import count_rows
from perfgate.store.tokens import list_tokens, revoke_token


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"], body
    return str(body["error"]["message"])


def _runs(api: Api) -> int:
    with open_store(api.db_url) as store, store.sessions() as session:
        return count_rows(session)["runs"]


def test_created_then_same_then_conflict(api: Api) -> None:
    doc = document()
    first = api.post_run(doc)
    assert first.status_code == 201, first.text
    assert first.json() == {"id": doc["run"]["id"]}
    again = api.post_run(doc)
    assert again.status_code == 200, again.text
    assert again.json() == {"id": doc["run"]["id"]}
    doc["benchmarks"][0]["metrics"]["time"]["samples"][0] *= 2
    _error(api.post_run(doc), 409, "conflict")
    assert _runs(api) == 1


def test_stored_document_reads_back_identical(api: Api) -> None:
    doc = document()
    assert api.post_run(doc).status_code == 201
    back = api.get(f"/api/v1/runs/{doc['run']['id']}/document")
    assert back.status_code == 200, back.text
    assert parse_document(back.json()).content_hash() == parse_document(doc).content_hash()


def test_invalid_document_names_the_field(api: Api) -> None:
    doc = document()
    doc["benchmarks"][1]["metrics"]["time"]["samples"][3] = -1.0
    message = _error(api.post_run(doc), 422, "invalid_document")
    assert "benchmarks[1].metrics.time.samples[3]" in message
    doc = document()
    del doc["run"]["commit"]
    assert "run.commit" in _error(api.post_run(doc), 422, "invalid_document")
    assert _runs(api) == 0


def test_missing_bad_and_revoked_tokens_are_401(api: Api) -> None:
    doc = document()
    response = api.client.post("/api/v1/runs", json=doc)
    _error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    _error(api.post_run(doc, token="pg_not-a-token"), 401, "unauthorized")
    bad_scheme = api.client.post("/api/v1/runs", json=doc, headers={"Authorization": "Basic x"})
    _error(bad_scheme, 401, "unauthorized")
    with open_store(api.db_url) as store:
        (upload,) = [t for t in list_tokens(store.sessions, project=PROJECT) if t.scope == "upload"]
        revoke_token(store.sessions, token_id=upload.id)
    _error(api.post_run(doc), 401, "unauthorized")
    assert _runs(api) == 0


def test_wrong_scope_or_project_is_403(api: Api) -> None:
    doc = document()
    _error(api.post_run(doc, token=api.read), 403, "forbidden")
    message = _error(api.post_run(doc, token=api.other_upload), 403, "forbidden")
    assert OTHER in message and PROJECT in message
    assert _runs(api) == 0
    # The token of the other project uploads to its own project.
    assert api.post_run(document(project=OTHER), token=api.other_upload).status_code == 201


def test_too_large_with_content_length_is_413(api: Api) -> None:
    doc = document(benchmarks=40, samples=400)
    body = json.dumps(doc).encode()
    assert len(body) > TEST_LIMIT
    response = api.client.post(
        "/api/v1/runs",
        content=body,
        headers={**api.auth(api.upload), "Content-Type": "application/json"},
    )
    _error(response, 413, "too_large")
    # The connection is still good for the next request.
    assert api.client.get("/healthz").status_code == 200
    assert _runs(api) == 0


def test_too_large_chunked_is_413_while_streaming(api: Api) -> None:
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        yield b'{"schema": "perfgate/results@1", "run": {"id": "'
        # Far more than the limit could be sent; the server stops reading at the limit (plus
        # what it drains so this client can read the answer).
        for _ in range(4 * TEST_LIMIT // 4096):
            sent += 4096
            yield b"x" * 4096

    response = api.client.post(
        "/api/v1/runs",
        content=chunks(),
        headers={**api.auth(api.upload), "Content-Type": "application/json"},
    )
    _error(response, 413, "too_large")
    assert _runs(api) == 0


def test_expect_continue_gets_413_before_sending(api: Api) -> None:
    host, port = api.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            (
                "POST /api/v1/runs HTTP/1.1\r\n"
                f"Host: {host}:{port}\r\nAuthorization: Bearer {api.upload}\r\n"
                "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                f"Content-Length: {100 * TEST_LIMIT}\r\n\r\n"
            ).encode()
        )
        received = b""
        while chunk := sock.recv(65536):  # the server closes after its answer
            received += chunk
        answer = received.decode()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert '"too_large"' in answer


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b'{"schema": "perfgate/results@1", "run": {"id": ',
        b"\xff\xfe not utf-8",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' * 20_000 + b"1" + b"}" * 20_000,
        b"null",
        b"[]",
        b'"a string"',
        b'{"schema": "perfgate/results@1", "run": 1e99999, "environment": {}, "benchmarks": []}',
        b"NaN",
        b'{"schema": "perfgate/results@1", "schema": "perfgate/results@2"}',
    ],
    ids=[
        "empty",
        "open-brace",
        "truncated",
        "not-utf8",
        "deep-array",
        "deep-object",
        "null",
        "array",
        "string",
        "infinite-number",
        "nan",
        "dup-keys",
    ],
)
def test_malformed_bodies_are_422_never_500(api: Api, body: bytes) -> None:
    response = api.client.post(
        "/api/v1/runs",
        content=body,
        headers={**api.auth(api.upload), "Content-Type": "application/json"},
    )
    _error(response, 422, "invalid_document")


def test_truncated_valid_document_is_422(api: Api) -> None:
    body = json.dumps(document()).encode()
    for cut in (1, len(body) // 3, len(body) - 1):
        response = api.client.post(
            "/api/v1/runs",
            content=body[:cut],
            headers={**api.auth(api.upload), "Content-Type": "application/json"},
        )
        _error(response, 422, "invalid_document")
    assert _runs(api) == 0


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_values_postgres_cannot_hold_are_422_not_503(api: Api) -> None:
    doc = document()
    doc["benchmarks"][0]["error"] = "a NUL \u0000 byte"
    _error(api.post_run(doc), 422, "invalid_document")
    doc = document(pr=2**40)
    _error(api.post_run(doc), 422, "invalid_document")
    assert _runs(api) == 0
    assert api.client.get("/readyz").status_code == 200
