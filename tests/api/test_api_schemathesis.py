"""Property-based run of schemathesis over /openapi.json against a live server on PostgreSQL.

Every answer must be no 5xx, have a documented status and content type, and match its schema.
The number of examples per operation is bounded so the whole run stays well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
import schemathesis
from apihelpers import PROJECT, LiveServer, make_tokens
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from perfgate.api.app import create_app
from perfgate.config import Settings
from perfgate.store import migrate
from perfgate.store.engine import make_engine
from synthetic import synthetic_document

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Values that exist in the seeded store, so some generated requests reach the 200 paths.
KNOWN = {"project": PROJECT, "key": "kernel[n=128,variant=0]", "base": "main", "head": "main"}


@pytest.fixture(scope="module")
def live(pg_databases: Any) -> Iterator[tuple[str, str]]:
    db_url = pg_databases.create()
    engine = make_engine(db_url)
    migrate.upgrade(engine)
    engine.dispose()
    tokens = make_tokens(db_url)
    server = LiveServer(create_app(Settings(db_url=db_url, max_document_bytes=1024 * 1024)))
    server.start()
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        for i in range(8):
            doc = synthetic_document(
                benchmarks=3,
                samples=12,
                seed=500 + i,
                project=PROJECT,
                started_at=start + timedelta(days=i),
                slowdown={KNOWN["key"]: 1.4} if i >= 4 else None,
            )
            posted = client.post(
                "/api/v1/runs", json=doc, headers={"Authorization": f"Bearer {tokens['upload']}"}
            )
            assert posted.status_code == 201, posted.text
    yield server.url, tokens["upload"]
    server.stop()


def _exercise(operation: Any, mode: GenerationMode, url: str, token: str) -> set[int]:
    """Run one operation's generated cases in one generation mode; the statuses seen."""
    seen: set[int] = set()

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=20,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        # Half the queries name things that exist, so success answers are checked too.
        query = case.query if isinstance(case.query, dict) else None
        if query is not None and len(str(sorted(query.items()))) % 2 == 0:
            for name, value in KNOWN.items():
                if name in query:
                    query[name] = value
        response = case.call_and_validate(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS, timeout=60
        )
        seen.add(response.status_code)

    try:
        check()
    except Unsatisfiable:
        # No parameter or body to make invalid (e.g. /healthz): nothing negative to try.
        assert mode is GenerationMode.NEGATIVE, operation.label
    return seen


@pytest.mark.slow
def test_openapi_contract(live: tuple[str, str]) -> None:
    url, token = live
    api_schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 11
    statuses: dict[str, set[int]] = {}
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            statuses.setdefault(operation.label, set()).update(
                _exercise(operation, mode, url, token)
            )
    assert "POST /api/v1/runs" in statuses
    # The success paths were reached too, not only the refusals.
    for label in (
        "GET /api/v1/projects",
        "GET /api/v1/benchmarks",
        "GET /api/v1/runs",
        "GET /api/v1/series",
        "GET /api/v1/compare",
        "GET /api/v1/changes",
    ):
        assert 200 in statuses[label], (label, statuses[label])
