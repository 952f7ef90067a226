"""Dashboard fixtures: a store with a planted shift, live servers, headless Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashhelpers import CHROMEDRIVER, CHROMIUM, REPO, LiveServer, Seeded, seed_store

from perfgate.config import Settings
from perfgate.store import migrate
from perfgate.store.engine import make_engine


@pytest.fixture(scope="session")
def seeded_sqlite(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Seeded:
    path = tmp_path_factory.mktemp("dashboard") / "perfgate.db"
    shutil.copy(sqlite_template, path)
    return seed_store(f"sqlite:///{path}")


@pytest.fixture(scope="session")
def seeded_postgres(pg_databases: Any) -> Seeded:
    url: str = pg_databases.create()
    engine = make_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    return seed_store(url)


@pytest.fixture(scope="session")
def public_server(seeded_sqlite: Seeded) -> Iterator[LiveServer]:
    server = LiveServer(Settings(db_url=seeded_sqlite.url, public_read=True)).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def private_server(seeded_sqlite: Seeded) -> Iterator[LiveServer]:
    server = LiveServer(Settings(db_url=seeded_sqlite.url, public_read=False)).start()
    yield server
    server.stop()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def backend_server(request: pytest.FixtureRequest) -> Iterator[tuple[LiveServer, Seeded]]:
    """A public-read server on each backend, for the HTTP page checks."""
    seeded: Seeded = request.getfixturevalue(f"seeded_{request.param}")
    server = LiveServer(Settings(db_url=seeded.url, public_read=True)).start()
    yield server, seeded
    server.stop()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where screenshots go: $PERFGATE_TEST_ARTIFACTS, else .perfgate/test-artifacts/."""
    path = Path(os.environ.get("PERFGATE_TEST_ARTIFACTS") or REPO / ".perfgate" / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by chromedriver (Debian's packages); CI must have them."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        message = f"headless Chromium tests need {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests run as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
