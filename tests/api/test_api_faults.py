"""Concurrency and failure: parallel uploads, a database connection killed mid-upload, readiness."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from apihelpers import Api, document
from sqlalchemy import create_engine, text

from perfgate.errors import InputError
from perfgate.store import migrate
from perfgate.store.connect import open_store
from perfgate.store.engine import make_engine
from perfgate.store.row_writes import count_rows

postgres_only = pytest.mark.parametrize("db_url", ["postgres"], indirect=True)


def _counts(api: Api) -> dict[str, int]:
    with open_store(api.db_url) as store, store.sessions() as session:
        return count_rows(session)


@postgres_only
def test_32_concurrent_uploads_lose_and_double_nothing(api: Api) -> None:
    distinct = [document(seed=i, benchmarks=4, samples=30) for i in range(24)]
    # Eight of the documents are sent twice at the same moment: one 201, one 200 each.
    bodies = distinct + distinct[:8]
    barrier = threading.Barrier(len(bodies))

    def send(doc: dict[str, Any]) -> tuple[str, int]:
        with httpx.Client(base_url=api.url, timeout=120) as client:
            barrier.wait()
            response = client.post(
                "/api/v1/runs", json=doc, headers={"Authorization": f"Bearer {api.upload}"}
            )
        return doc["run"]["id"], response.status_code

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        answers = list(pool.map(send, bodies))
    assert {status for _, status in answers} <= {200, 201}, answers
    created = Counter(run_id for run_id, status in answers if status == 201)
    assert set(created) == {d["run"]["id"] for d in distinct}
    assert set(created.values()) == {1}
    counts = _counts(api)
    assert counts["runs"] == 24
    assert counts["instances"] == 24 * 4
    metrics_per_run = sum(len(b["metrics"]) for b in distinct[0]["benchmarks"])
    assert counts["measurements"] == 24 * metrics_per_run
    assert counts["benchmarks"] == 4
    assert counts["projects"] == 2  # the two projects the tokens were made for


@postgres_only
def test_killed_connection_mid_upload_stores_nothing(api: Api) -> None:
    assert api.post_run(document(seed=1)).status_code == 201
    before = _counts(api)
    doc = document(seed=2, benchmarks=6)
    admin = create_engine(api.db_url, isolation_level="AUTOCOMMIT")
    locker = create_engine(api.db_url)
    result: dict[str, httpx.Response] = {}
    try:
        with locker.connect() as lock_conn:
            lock_conn.execute(text("LOCK TABLE measurements IN ACCESS EXCLUSIVE MODE"))
            uploader = threading.Thread(
                target=lambda: result.setdefault("response", api.post_run(doc))
            )
            uploader.start()
            # The upload has inserted its run row and blocks on the measurements insert.
            pid = _wait_for_blocked_backend(admin, "measurements")
            with admin.connect() as conn:
                assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
            lock_conn.rollback()
            uploader.join(timeout=60)
    finally:
        admin.dispose()
        locker.dispose()
    response = result["response"]
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "database_unavailable"
    assert _counts(api) == before
    # The server recovers: it is ready, and the same document now stores whole.
    assert api.client.get("/readyz").status_code == 200
    again = api.post_run(doc)
    assert again.status_code == 201, again.text
    assert _counts(api)["runs"] == before["runs"] + 1


def _wait_for_blocked_backend(admin: Any, table: str) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with admin.connect() as conn:
            pid = conn.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database() "
                    "AND (query ILIKE :insert OR query ILIKE :copy)"
                ),
                # Child rows go by COPY on PostgreSQL (store/bulk.py).
                {"insert": f"%INSERT INTO {table}%", "copy": f"COPY {table} %"},
            ).scalar()
        if pid is not None:
            return int(pid)
        time.sleep(0.05)
    raise AssertionError("the upload never blocked on the lock")


def test_unreachable_database_is_503_and_not_ready(
    start_api: Callable[..., Api], db_url: str
) -> None:
    api = start_api(db_url)
    # Point a second server at a port where no database listens.
    from apihelpers import LiveServer

    from perfgate.api.app import create_app
    from perfgate.config import Settings

    server = LiveServer(
        create_app(Settings(db_url="postgresql+psycopg://postgres@127.0.0.1:9/none"))
    ).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.get("/healthz").status_code == 200
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["error"]["code"] == "not_ready"
            projects = client.get("/api/v1/projects", headers=api.auth(api.read))
            assert projects.status_code == 503
            assert projects.json()["error"]["code"] == "database_unavailable"
    finally:
        server.stop()


@pytest.mark.parametrize("empty_db_url", ["sqlite", "postgres"], indirect=True)
def test_readyz_says_what_to_upgrade(empty_db_url: str) -> None:
    from apihelpers import LiveServer

    from perfgate.api.app import create_app
    from perfgate.config import Settings

    server = LiveServer(create_app(Settings(db_url=empty_db_url))).start()
    try:
        behind = _not_ready(server.url)
        assert behind.endswith(": run `perfgate db upgrade`"), behind
        assert "upgrade perfgate" not in behind
        # A schema from a newer perfgate: upgrading the database cannot help; upgrading this can.
        engine = make_engine(empty_db_url)
        try:
            migrate.upgrade(engine)
            with engine.begin() as conn:
                conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff'")
            with pytest.raises(InputError) as refused:
                migrate.ensure_schema(engine)
        finally:
            engine.dispose()
        ahead = _not_ready(server.url)
        assert ahead.endswith("ffff, which this perfgate does not know: upgrade perfgate"), ahead
        assert "db upgrade" not in ahead
        # The CLI refuses the same database in the same words.
        assert str(refused.value).endswith(ahead.split(" is at ", 1)[1])
    finally:
        server.stop()


def _not_ready(url: str) -> str:
    ready = httpx.get(f"{url}/readyz", timeout=30)
    assert ready.status_code == 503, ready.text
    assert ready.json()["error"]["code"] == "not_ready"
    message: str = ready.json()["error"]["message"]
    return message
