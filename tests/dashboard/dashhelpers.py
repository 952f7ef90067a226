"""Dashboard test helpers: a history with a planted shift, tokens, a live server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import uvicorn

from perfgate.api.app import create_app
from perfgate.config import Settings
from perfgate.results import make_key, parse_document
from perfgate.store import tokens
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

PROJECT = "acme/models"
# Names a page must escape: markup in a project name and in a benchmark name.
HOSTILE_PROJECT = 'evil/<b>"x"</b>&co'
HOSTILE_NAME = "<script>alert('pwned')</script>"
MAIN_RUNS = 30
SHIFT_AT = 15
SLOWDOWN = 1.3
FEATURE_BRANCH = "feature/x"
FEATURE_RUNS = 8
SHIFTED_KEY = make_key("kernel", {"n": 64, "variant": 0})
# One pull request's run, based on main's last commit, that slows another benchmark down.
PR_NUMBER = 7
PR_BRANCH = "fix/speed"
PR_KEY = make_key("kernel", {"n": 128, "variant": 0})
PR_SLOWDOWN = 1.25
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def commit_of(seed: int) -> str:
    return hashlib.sha1(f"commit-{seed}".encode()).hexdigest()


def main_document(i: int) -> dict[str, Any]:
    doc = synthetic_document(
        benchmarks=3,
        samples=12,
        seed=i,
        commit=commit_of(i),
        started_at=T0 + timedelta(hours=i),
        slowdown={SHIFTED_KEY: SLOWDOWN} if i >= SHIFT_AT else None,
        ops_per_benchmark=3,
    )
    if i >= SHIFT_AT:
        # The slowdown comes with a new op, so the comparison has ops to attribute it to.
        for bench in doc["benchmarks"]:
            if bench["key"] == SHIFTED_KEY:
                bench["profile"]["ops"].append(
                    {
                        "op": "aten::copy_",
                        "count": 1,
                        "self_cpu_us": 30.0,
                        "self_device_us": 0.0,
                        "flops": 0.0,
                    }
                )
    return doc


def feature_document(i: int) -> dict[str, Any]:
    return synthetic_document(
        benchmarks=3,
        samples=12,
        seed=100 + i,
        commit=commit_of(100 + i),
        branch=FEATURE_BRANCH,
        started_at=T0 + timedelta(hours=MAIN_RUNS + 10 + i),
    )


def pr_document() -> dict[str, Any]:
    doc = synthetic_document(
        benchmarks=3,
        samples=12,
        seed=300,
        commit=commit_of(300),
        branch=PR_BRANCH,
        started_at=T0 + timedelta(hours=MAIN_RUNS + FEATURE_RUNS + 20),
        slowdown={SHIFTED_KEY: SLOWDOWN, PR_KEY: PR_SLOWDOWN},
        ops_per_benchmark=3,
    )
    doc["run"]["pr"] = PR_NUMBER
    doc["run"]["base_commit"] = commit_of(MAIN_RUNS - 1)
    return doc


def hostile_document() -> dict[str, Any]:
    doc = synthetic_document(
        benchmarks=1, samples=12, seed=200, commit=commit_of(200), project=HOSTILE_PROJECT
    )
    bench = doc["benchmarks"][0]
    bench["name"] = HOSTILE_NAME
    bench["key"] = make_key(HOSTILE_NAME, bench["params"])
    return doc


@dataclass(frozen=True)
class Seeded:
    """A store holding the dashboard's test history, and tokens for it."""

    url: str
    main: list[dict[str, Any]]
    feature: list[dict[str, Any]]
    pr: dict[str, Any]
    hostile: dict[str, Any]
    read_token: str
    upload_token: str
    hostile_token: str
    revoked_token: str

    @property
    def hostile_key(self) -> str:
        return str(self.hostile["benchmarks"][0]["key"])


def seed_store(url: str) -> Seeded:
    main = [main_document(i) for i in range(MAIN_RUNS)]
    feature = [feature_document(i) for i in range(FEATURE_RUNS)]
    pr = pr_document()
    hostile = hostile_document()
    with open_store(url) as store:
        for doc in [*main, *feature, pr, hostile]:
            store_document(store.sessions, parse_document(doc))
        read = tokens.create_token(store.sessions, project=PROJECT, scope="read")
        upload = tokens.create_token(store.sessions, project=PROJECT, scope="upload")
        other = tokens.create_token(store.sessions, project=HOSTILE_PROJECT, scope="read")
        revoked = tokens.create_token(store.sessions, project=PROJECT, scope="read")
        tokens.revoke_token(store.sessions, token_id=revoked.info.id)
    return Seeded(
        url=url,
        main=main,
        feature=feature,
        pr=pr,
        hostile=hostile,
        read_token=read.token,
        upload_token=upload.token,
        hostile_token=other.token,
        revoked_token=revoked.token,
    )


class LiveServer:
    """The real app under uvicorn on 127.0.0.1 and an ephemeral port, in a thread."""

    def __init__(self, settings: Settings) -> None:
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-server", daemon=True)
        self.url = ""

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the live server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "the live server did not stop"
