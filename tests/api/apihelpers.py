"""Helpers for the API tests: a live uvicorn server on 127.0.0.1, tokens, documents."""

from __future__ import annotations

import copy
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from perfgate.config import Settings
from perfgate.store.connect import open_store
from perfgate.store.tokens import create_token
from synthetic import synthetic_document

PROJECT = "acme/widgets"
OTHER = "other/project"
TEST_LIMIT = 256 * 1024


class LiveServer:
    """A uvicorn server in a background thread, on a socket this object bound itself."""

    def __init__(self, app: FastAPI) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=30)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()


@dataclass
class Api:
    """A running server plus the tokens made for it and a client."""

    url: str
    db_url: str
    upload: str
    read: str
    other_upload: str
    client: httpx.Client
    settings: Settings
    extra: dict[str, Any] = field(default_factory=dict)

    def auth(self, token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def post_run(self, document: Any, token: str | None = None, **kwargs: Any) -> httpx.Response:
        return self.client.post(
            "/api/v1/runs", json=document, headers=self.auth(token or self.upload), **kwargs
        )

    def get(self, path: str, token: str | None = None, **params: Any) -> httpx.Response:
        return self.client.get(path, params=params, headers=self.auth(token or self.read))


def make_tokens(db_url: str) -> dict[str, str]:
    with open_store(db_url) as store:
        return {
            "upload": create_token(store.sessions, project=PROJECT, scope="upload").token,
            "read": create_token(store.sessions, project=PROJECT, scope="read").token,
            "other_upload": create_token(store.sessions, project=OTHER, scope="upload").token,
        }


def document(
    *, project: str = PROJECT, seed: int = 7, benchmarks: int = 3, samples: int = 12, **run: Any
) -> dict[str, Any]:
    """A valid results document for `project` with a fresh run id."""
    doc = copy.deepcopy(synthetic_document(benchmarks=benchmarks, samples=samples, seed=seed))
    doc["run"]["project"] = project
    doc["run"]["id"] = str(uuid.uuid4())
    doc["run"].update(run)
    return doc
