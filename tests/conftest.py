"""Shared fixtures: a store URL for each backend (SQLite file, real PostgreSQL), documents."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from perfgate.store import migrate
from perfgate.store.connect import Store, open_store
from perfgate.store.engine import make_engine
from perfgate.store.models import Base
from suite_order import file_rank
from synthetic import synthetic_document

# The admin connection used to create throwaway databases; CI's server is trust-auth on loopback.
PG_ADMIN_URL = os.environ.get(
    "PERFGATE_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def _pg_available() -> str | None:
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # any failure means "not here"
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that reaches PostgreSQL `postgres`, so `-m "not postgres"` means it; put
    the longest files first (suite_order.py), each file's tests in their order.

    A test reaches it through a fixture that needs the server, or through a backend parameter
    (`db_url`, `empty_db_url`: "postgres"), which fetches the server only when it runs.
    """
    # A stable sort: every xdist worker collects the same order, as xdist requires.
    items.sort(key=lambda item: file_rank(item.nodeid))
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = list(callspec.params.values()) if callspec is not None else []
        needs_server = "pg_server" in getattr(item, "fixturenames", ())
        if needs_server or any(isinstance(p, str) and p == "postgres" for p in params):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The admin URL of a reachable PostgreSQL; in CI an unreachable server fails the tests."""
    problem = _pg_available()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {problem}")
        pytest.skip(f"PostgreSQL not reachable: {problem}")
    return PG_ADMIN_URL


class PgDatabases:
    """Creates and drops throwaway databases on the test server.

    Dropping a database makes PostgreSQL 15 checkpoint (1 to 2.5 s each, measured on the 2-core
    development machine), and each worker's drops all came at its session's end, the suite's
    tail. Databases that only need to be empty are therefore reused: given back after a test,
    one is emptied (its sessions ended, its public schema dropped and made anew, milliseconds)
    and handed to the next test that asks for an empty one.
    """

    def __init__(self, admin_url: str) -> None:
        self.admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self.created: list[str] = []
        self.spare: list[str] = []

    def create(self) -> str:
        name = f"perfgate_test_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return self.url(name)

    @staticmethod
    def url(name: str) -> str:
        return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)

    def empty(self) -> str:
        """A database with nothing in it: an emptied spare one, else a new one."""
        return self.url(self.spare.pop()) if self.spare else self.create()

    def give_back(self, url: str) -> None:
        """Empty the database at `url` for the next `empty()`; one that cannot be emptied is
        left to be dropped at the session's end."""
        name = make_url(url).database
        assert name in self.created, url
        with self.admin.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text("DROP SCHEMA public CASCADE"))
                conn.execute(text("CREATE SCHEMA public"))
                left = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_class c JOIN pg_namespace n"
                        " ON n.oid = c.relnamespace WHERE n.nspname NOT IN"
                        " ('pg_catalog', 'information_schema', 'pg_toast')"
                    )
                ).scalar_one()
        except SQLAlchemyError:
            return  # not reusable: the session's end drops it
        finally:
            engine.dispose()
        if left == 0:
            self.spare.append(name)

    def drop_all(self) -> None:
        with self.admin.connect() as conn:
            for name in self.created:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def pg_databases(pg_server: str) -> Iterator[PgDatabases]:
    dbs = PgDatabases(pg_server)
    yield dbs
    dbs.drop_all()


@pytest.fixture(scope="session")
def pg_migrated_url(pg_databases: PgDatabases) -> str:
    """One fresh, migrated database per test session; tests empty it before they run."""
    url = pg_databases.create()
    engine = make_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "perfgate.db"
    engine = make_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    engine.dispose()
    return path


def _truncate_pg(url: str) -> None:
    engine = create_engine(url)
    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> str:
    """A migrated, empty store on each backend (isolated per test)."""
    if request.param == "sqlite":
        path = tmp_path / "perfgate.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("pg_migrated_url")
    _truncate_pg(url)
    return url


@pytest.fixture
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no schema) on the backend named by the test's `backend` param."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    dbs: PgDatabases = request.getfixturevalue("pg_databases")
    url = dbs.empty()
    yield url
    dbs.give_back(url)


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    with open_store(db_url) as opened:
        yield opened


@pytest.fixture
def doc_data() -> dict[str, Any]:
    """A small valid results document as plain JSON data."""
    return copy.deepcopy(synthetic_document(benchmarks=3, samples=5, seed=7))


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """perfgate's wheel, built once per session for the packaging tests."""
    out = tmp_path_factory.mktemp("dist")
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(root),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = out.glob("perfgate-*.whl")
    return wheel
