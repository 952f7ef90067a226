"""Reads over a real socket: they never write, filter by metric, refuse out-of-range times with
422, answer another project's ids as missing ones, and treat a commit prefix as text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from apihelpers import OTHER, PROJECT, Api, document
from fastapi import FastAPI
from sqlalchemy import Engine, event

from perfgate.api.deps import AppState

KEY = "kernel[n=128,variant=0]"
MEMORY_KEY = "kernel[n=192,variant=0]"
START = datetime(2026, 6, 1, tzinfo=timezone.utc)


def _history(api: Api, runs: int = 16, shift_at: int = 8) -> list[dict[str, Any]]:
    """KEY 30% slower and MEMORY_KEY's peak memory doubled from run `shift_at` on."""
    docs = []
    for i in range(runs):
        doc = document(
            seed=600 + i,
            samples=12,
            commit=f"{i:04x}" + "ab" * 18,
            branch="main",
            started_at=(START + timedelta(days=i)).isoformat(),
            finished_at=(START + timedelta(days=i, minutes=3)).isoformat(),
        )
        if i >= shift_at:
            for bench in doc["benchmarks"]:
                if bench["key"] == KEY:
                    bench["metrics"]["time"]["samples"] = [
                        1.3 * s for s in bench["metrics"]["time"]["samples"]
                    ]
                if bench["key"] == MEMORY_KEY:
                    bench["metrics"]["peak_memory"]["value"] *= 2
        assert api.post_run(doc).status_code == 201
        docs.append(doc)
    return docs


@contextmanager
def writes(engine: Engine) -> Iterator[list[str]]:
    """Every INSERT, UPDATE or DELETE the server sends to its database inside the block."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


@pytest.fixture
def served(db_url: str, start_api: Callable[..., Api]) -> tuple[Api, Engine]:
    """A server and the engine it stores through."""
    apps: list[FastAPI] = []
    api = start_api(db_url, app_hook=apps.append)
    state: AppState = apps[0].state.perfgate
    return api, state.engine


def test_change_points_exist_after_uploads_and_reads_write_nothing(
    served: tuple[Api, Engine],
) -> None:
    api, engine = served
    _history(api)
    # The token's last-use time is written on its first use (at most every 5 minutes after).
    assert api.get("/api/v1/projects").status_code == 200
    api.client.cookies.set("perfgate_token", api.read)
    try:
        with writes(engine) as sent:
            changes = api.get("/api/v1/changes", project=PROJECT, branch="main")
            series = api.get("/api/v1/series", project=PROJECT, key=KEY)
            page = api.client.get(f"/p/{PROJECT}")
    finally:
        api.client.cookies.clear()
    assert sent == []
    assert changes.status_code == 200 and series.status_code == 200 and page.status_code == 200
    # No read detected anything: the uploads stored the change point.
    (change,) = changes.json()["change_points"]
    assert change["key"] == KEY and change["run"] == series.json()["points"][8]["run"]
    assert [c["id"] for c in series.json()["change_points"]] == [change["id"]]


def test_changes_honour_the_metric(api: Api) -> None:
    _history(api)
    by_metric = {
        metric: [
            (c["key"], c["metric"])
            for c in api.get("/api/v1/changes", project=PROJECT, metric=metric).json()[
                "change_points"
            ]
        ]
        for metric in ("time", "peak_memory", "flops")
    }
    assert by_metric == {
        "time": [(KEY, "time")],
        "peak_memory": [(MEMORY_KEY, "peak_memory")],
        "flops": [],
    }


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00+05:00",
        "9999-12-31T23:00:00-05:00",
        "0000-01-01T00:00:00Z",
        "99999-01-01T00:00:00Z",
        "2026-01-01T00:00:00+99:00",
        "9" * 40,
    ],
)
def test_times_out_of_range_are_422_naming_the_parameter(api: Api, value: str) -> None:
    _history(api, runs=1)
    for path, name, params in [
        ("/api/v1/series", "since", {"project": PROJECT, "key": KEY}),
        ("/api/v1/series", "until", {"project": PROJECT, "key": KEY}),
        ("/api/v1/runs", "before", {"project": PROJECT}),
    ]:
        response = api.get(path, **params, **{name: value})
        assert response.status_code == 422, (path, name, response.text)
        error = response.json()["error"]
        assert error["code"] == "invalid_request" and name in error["message"]


def test_another_projects_ids_are_answered_as_missing_ones(api: Api) -> None:
    docs = _history(api)
    (change,) = api.get("/api/v1/changes", project=PROJECT).json()["change_points"]
    body = {"status": "dismissed"}

    def patch(change_id: int, token: str) -> Any:
        return api.client.patch(f"/api/v1/changes/{change_id}", json=body, headers=api.auth(token))

    foreign = patch(change["id"], api.other_upload)
    missing = patch(change["id"] + 1000, api.other_upload)
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json()["error"]["message"] == f"change point {change['id']} is not in the store"
    assert missing.json()["error"]["message"] == (
        f"change point {change['id'] + 1000} is not in the store"
    )
    assert OTHER not in foreign.text and PROJECT not in foreign.text
    # The owner still can, and a read token is refused for its scope whatever the id.
    assert patch(change["id"], api.upload).status_code == 200
    assert patch(change["id"] + 1000, api.read).status_code == 403
    run_id = docs[0]["run"]["id"]
    for path in (f"/api/v1/runs/{run_id}", f"/api/v1/runs/{run_id}/document"):
        response = api.get(path, token=api.other_upload)
        absent = api.get(path.replace(run_id, "0" * 8), token=api.other_upload)
        assert response.status_code == absent.status_code == 404
        assert response.json()["error"]["message"] == f"run {run_id!r} is not in the store"
        assert api.get(path).status_code == 200


def test_commit_prefixes_are_text_not_patterns(api: Api) -> None:
    _history(api, runs=3)

    def commits(prefix: str) -> list[str]:
        response = api.get("/api/v1/runs", project=PROJECT, commit=prefix)
        assert response.status_code == 200, response.text
        return [r["commit"] for r in response.json()["runs"]]

    assert commits("%") == []
    assert commits("_") == []
    assert commits("0_0") == []
    assert commits("/") == [] and commits("\\") == []
    assert commits("0001") == ["0001" + "ab" * 18]


@contextmanager
def point_reads(engine: Engine) -> Iterator[list[str]]:
    """Every statement inside the block that reads a series' points (`trends._points`)."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "measurements.median" in statement:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_a_series_is_answered_again_until_it_changes(served: tuple[Api, Engine]) -> None:
    """The second read of an unchanged series reads no points; a new run or a status change
    is in the very next answer (api/series_cache.py)."""
    api, engine = served
    docs = _history(api)
    asked = {"project": PROJECT, "key": KEY, "metric": "time", "branch": "main"}
    first = api.get("/api/v1/series", **asked)
    assert first.status_code == 200, first.text
    with point_reads(engine) as reads:
        again = api.get("/api/v1/series", **asked)
    assert reads == [] and again.content == first.content
    # Another time range is another answer.
    with point_reads(engine) as reads:
        window = api.get("/api/v1/series", **asked, until=(START + timedelta(days=3)).isoformat())
    assert len(reads) == 1 and len(window.json()["points"]) == 3

    (change,) = first.json()["change_points"]
    done = api.client.patch(
        f"/api/v1/changes/{change['id']}",
        json={"status": "acknowledged"},
        headers=api.auth(api.upload),
    )
    assert done.status_code == 200, done.text
    after_triage = api.get("/api/v1/series", **asked).json()
    assert [c["status"] for c in after_triage["change_points"]] == ["acknowledged"]

    later = document(
        seed=700,
        samples=12,
        commit="feed" + "ab" * 18,
        branch="main",
        started_at=(START + timedelta(days=40)).isoformat(),
    )
    assert api.post_run(later).status_code == 201
    after_upload = api.get("/api/v1/series", **asked).json()
    assert [p["run"] for p in after_upload["points"]] == [
        *(d["run"]["id"] for d in docs),
        later["run"]["id"],
    ]
    # An older run arriving late is in the answer too (the count of points changed).
    late = document(
        seed=701,
        samples=12,
        commit="beef" + "ab" * 18,
        branch="main",
        started_at=(START - timedelta(days=1)).isoformat(),
    )
    assert api.post_run(late).status_code == 201
    assert api.get("/api/v1/series", **asked).json()["points"][0]["run"] == late["run"]["id"]
