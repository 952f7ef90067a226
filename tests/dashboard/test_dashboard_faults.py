"""The dashboard with its database down: its own HTML error page, 503; the API keeps its JSON."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from dashhelpers import PROJECT, SHIFTED_KEY, LiveServer, main_document
from fastapi import APIRouter
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from perfgate.api.auth import TOKEN_COOKIE
from perfgate.api.dashboard.render import SECURITY_HEADERS, PageRoute
from perfgate.config import Settings
from perfgate.results import parse_document
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document

# Nothing listens on the discard port: connecting is refused at once.
UNREACHABLE = "postgresql+psycopg://postgres@127.0.0.1:9/perfgate"
UNAVAILABLE = "perfgate's database is unavailable"


def _pages(run_id: str = "no-run") -> list[str]:
    project = f"/p/{quote(PROJECT, safe='/')}"
    return [
        "/",
        project,
        f"{project}/trend?key={quote(SHIFTED_KEY)}",
        f"{project}/runs/{run_id}",
        f"{project}/compare?base=main&head=main",
    ]


def assert_unavailable_page(response: httpx.Response) -> None:
    where = f"{response.request.method} {response.request.url.path}"
    assert response.status_code == 503, (where, response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("text/html"), (where, response.text[:300])
    assert "<h1>Database unavailable</h1>" in response.text, where
    assert UNAVAILABLE in html.unescape(response.text), where
    # The driver's message (host, port, user) stays in the server's log.
    assert "127.0.0.1" not in response.text and "psycopg" not in response.text, where
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value, (where, name)


def assert_api_json(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == "database_unavailable"


@pytest.fixture
def unreachable_servers() -> Iterator[tuple[str, str]]:
    """A public-read and a private server whose database is a closed port."""
    public = LiveServer(Settings(db_url=UNREACHABLE, public_read=True)).start()
    private = LiveServer(Settings(db_url=UNREACHABLE, public_read=False)).start()
    yield public.url, private.url
    public.stop()
    private.stop()


def test_pages_answer_the_html_error_page_when_the_database_is_unreachable(
    unreachable_servers: tuple[str, str],
) -> None:
    public, private = unreachable_servers
    with httpx.Client(base_url=public, timeout=60) as client:
        for path in _pages():
            assert_unavailable_page(client.get(path))
        assert_api_json(client.get("/api/v1/projects"))
        assert_api_json(client.get("/api/v1/benchmarks", params={"project": PROJECT}))
    # A logged-in visitor of a private server: checking the cookie's token needs the database.
    with httpx.Client(base_url=private, timeout=60, cookies={TOKEN_COOKIE: "pg_x"}) as client:
        for path in _pages():
            assert_unavailable_page(client.get(path))
        assert_unavailable_page(client.post("/login", data={"token": "pg_x", "next": "/"}))
        api = client.get("/api/v1/projects", headers={"Authorization": "Bearer pg_x"})
        assert_api_json(api)


@pytest.fixture
def vanishing_database(pg_databases: Any) -> Iterator[tuple[str, Any, str]]:
    """A seeded PostgreSQL database, the admin engine that can lock it out, and a run id."""
    url: str = pg_databases.create()
    document = main_document(0)
    with open_store(url) as store:
        store_document(store.sessions, parse_document(document))
    admin = create_engine(pg_databases.admin.url, isolation_level="AUTOCOMMIT")
    yield url, admin, document["run"]["id"]
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{make_url(url).database}" ALLOW_CONNECTIONS true'))
    admin.dispose()


def _lock_out(admin: Any, database: str, *, allow: bool) -> None:
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allow).lower()}'))
        if not allow:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": database},
            )


def test_pages_fail_and_recover_with_a_database_that_goes_away(
    vanishing_database: tuple[str, Any, str],
) -> None:
    url, admin, run_id = vanishing_database
    database = str(make_url(url).database)
    server = LiveServer(Settings(db_url=url, public_read=True)).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.get("/").status_code == 200
            assert client.get(_pages(run_id)[3]).status_code == 200
            _lock_out(admin, database, allow=False)
            for path in _pages(run_id):
                assert_unavailable_page(client.get(path))
            assert_api_json(client.get("/api/v1/projects"))
            _lock_out(admin, database, allow=True)
            home = client.get("/")
            assert home.status_code == 200 and PROJECT in home.text
    finally:
        server.stop()


def test_an_unexpected_page_failure_is_the_html_error_page() -> None:
    router = APIRouter(route_class=PageRoute)

    @router.get("/broken")
    def broken() -> None:
        raise RuntimeError("a bug with a secret in it")

    server = LiveServer(Settings(db_url=UNREACHABLE, public_read=True))
    server.server.config.app.include_router(router)
    server.start()
    try:
        response = httpx.get(f"{server.url}/broken", timeout=30)
    finally:
        server.stop()
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("text/html")
    assert "<h1>Server error</h1>" in response.text
    assert "secret" not in response.text
