"""Fixtures for the API tests: live servers on 127.0.0.1 (ephemeral ports) over real databases."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from apihelpers import TEST_LIMIT, Api, LiveServer, make_tokens
from fastapi import FastAPI

from perfgate.api.app import create_app
from perfgate.config import Settings


@pytest.fixture
def start_api() -> Iterator[Callable[..., Api]]:
    """Start a server on `db_url` with settings overrides; everything is stopped afterwards."""
    running: list[tuple[LiveServer, httpx.Client]] = []

    def start(
        db_url: str, *, app_hook: Callable[[FastAPI], None] | None = None, **overrides: Any
    ) -> Api:
        tokens = make_tokens(db_url)
        settings = Settings(db_url=db_url, **{"max_document_bytes": TEST_LIMIT, **overrides})
        app = create_app(settings)
        if app_hook is not None:
            app_hook(app)
        server = LiveServer(app).start()
        client = httpx.Client(base_url=server.url, timeout=60)
        running.append((server, client))
        return Api(url=server.url, db_url=db_url, client=client, settings=settings, **tokens)

    yield start
    for server, client in running:
        client.close()
        server.stop()


@pytest.fixture
def api(db_url: str, start_api: Callable[..., Api]) -> Api:
    """A private server (reads need a token) on each backend."""
    return start_api(db_url)
