"""Reads over a real socket: projects, runs, benchmarks, series, compare, changes and triage."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from apihelpers import OTHER, PROJECT, Api, document
from click.testing import CliRunner

from perfgate.cli import cli
from perfgate.cli.trend import series_json
from perfgate.store.connect import open_store
from perfgate.store.trends import load_series
from synthetic import synthetic_document

KEY = "kernel[n=128,variant=0]"
START = datetime(2026, 6, 1, tzinfo=timezone.utc)
SHIFT_AT = 8


def _history(
    api: Api, runs: int = 16, branch: str = "main", first: int = 0
) -> list[dict[str, Any]]:
    """`runs` runs on `branch`, KEY 30% slower from run SHIFT_AT on; uploaded over HTTP."""
    docs = []
    for i in range(first, first + runs):
        doc = synthetic_document(
            benchmarks=3,
            samples=20,
            seed=200 + i,
            project=PROJECT,
            branch=branch,
            slowdown={KEY: 1.3} if i >= SHIFT_AT else None,
            started_at=START + timedelta(days=i),
        )
        assert api.post_run(doc).status_code == 201
        docs.append(doc)
    return docs


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_projects_show_what_the_token_may_read(api: Api) -> None:
    _history(api, runs=2)
    projects = api.get("/api/v1/projects").json()["projects"]
    assert [p["name"] for p in projects] == [PROJECT]
    assert projects[0]["runs"] == 2
    assert _time(projects[0]["latest_run_at"]) == START + timedelta(days=1)
    other = api.get("/api/v1/projects", token=api.other_upload).json()["projects"]
    assert [p["name"] for p in other] == [OTHER]


def test_runs_newest_first_with_filters(api: Api) -> None:
    docs = _history(api, runs=5)
    api.post_run(document(seed=9, branch="feature", commit="abcdef1234" + "0" * 30))
    runs = api.get("/api/v1/runs", project=PROJECT).json()["runs"]
    assert len(runs) == 6
    times = [_time(r["started_at"]) for r in runs]
    assert times == sorted(times, reverse=True)
    main = api.get("/api/v1/runs", project=PROJECT, branch="main", limit=2).json()["runs"]
    assert [r["id"] for r in main] == [docs[4]["run"]["id"], docs[3]["run"]["id"]]
    older = api.get(
        "/api/v1/runs", project=PROJECT, branch="main", before=main[-1]["started_at"]
    ).json()["runs"]
    assert [r["id"] for r in older] == [d["run"]["id"] for d in reversed(docs[:3])]
    by_commit = api.get("/api/v1/runs", project=PROJECT, commit="abcdef12").json()["runs"]
    assert [r["branch"] for r in by_commit] == ["feature"]
    one = api.get(f"/api/v1/runs/{docs[0]['run']['id']}").json()
    assert one["commit"] == docs[0]["run"]["commit"]
    assert one["fingerprint"] == "synthetic-cpu"
    missing = api.get("/api/v1/runs", project="no/such")
    assert missing.status_code == 403  # not the token's project: nothing about it is told


def test_benchmarks(api: Api) -> None:
    _history(api, runs=1)
    data = api.get("/api/v1/benchmarks", project=PROJECT).json()
    assert data["project"] == PROJECT
    keys = [b["key"] for b in data["benchmarks"]]
    assert keys == sorted(keys) and KEY in keys
    bench = next(b for b in data["benchmarks"] if b["key"] == KEY)
    assert bench == {"key": KEY, "name": "kernel", "params": {"n": 128, "variant": 0}}


def test_series_matches_the_cli_and_marks_the_shift(api: Api) -> None:
    _history(api)
    response = api.get("/api/v1/series", project=PROJECT, key=KEY, metric="time", branch="main")
    assert response.status_code == 200, response.text
    data = response.json()
    with open_store(api.db_url) as store, store.sessions() as session:
        expected = series_json(
            load_series(session, project=PROJECT, key=KEY, metric="time", branch="main")
        )
    assert [p["run"] for p in data["points"]] == [p["run"] for p in expected["points"]]
    for got, want in zip(data["points"], expected["points"], strict=True):
        assert _time(got["time"]) == _time(want["time"])
        assert (got["median"], got["ci"], got["n"]) == (want["median"], want["ci"], want["n"])
    (change,) = data["change_points"]
    assert change["run"] == data["points"][SHIFT_AT]["run"]
    assert change["ratio"] == pytest.approx(1.3, rel=0.05)
    assert change["status"] == "open" and isinstance(change["id"], int)
    window = api.get(
        "/api/v1/series",
        project=PROJECT,
        key=KEY,
        since=(START + timedelta(days=3)).isoformat(),
        until=(START + timedelta(days=6)).isoformat(),
    ).json()
    assert len(window["points"]) == 3
    assert window["change_points"] == []
    missing = api.get("/api/v1/series", project=PROJECT, key="nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_compare_is_the_clis_json(api: Api) -> None:
    docs = _history(api, runs=7)
    head = synthetic_document(
        benchmarks=3,
        samples=20,
        seed=300,
        project=PROJECT,
        branch="feature",
        commit="feed" + "0" * 36,
        slowdown={KEY: 1.5},
        started_at=START + timedelta(days=10),
    )
    assert api.post_run(head).status_code == 201
    base_commit = docs[-1]["run"]["commit"]
    response = api.get("/api/v1/compare", project=PROJECT, base=base_commit, head="feed")
    assert response.status_code == 200, response.text
    cli_run = CliRunner().invoke(
        cli,
        [
            "compare",
            base_commit,
            "feed",
            "--format",
            "json",
            "--db",
            api.db_url,
            "--project",
            PROJECT,
        ],
        catch_exceptions=False,
    )
    assert cli_run.exit_code == 0, cli_run.output
    assert response.json() == json.loads(cli_run.stdout)
    data = response.json()
    assert data["schema"] == "perfgate/comparison@1"
    assert any("noise model" in w for w in data["warnings"])
    verdicts = {(r["key"], r["metric"]): r["verdict"] for r in data["results"]}
    assert verdicts[(KEY, "time")] == "regression"
    by_branch = api.get("/api/v1/compare", project=PROJECT, base="main", head="feature")
    assert by_branch.status_code == 200
    unknown = api.get("/api/v1/compare", project=PROJECT, base="main", head="no-such-ref")
    assert unknown.status_code == 404


def test_changes_list_and_triage(api: Api) -> None:
    _history(api)
    listed = api.get("/api/v1/changes", project=PROJECT, branch="main")
    assert listed.status_code == 200, listed.text
    (change,) = [c for c in listed.json()["change_points"] if c["key"] == KEY]
    assert change["status"] == "open"
    url = f"/api/v1/changes/{change['id']}"
    read_only = api.client.patch(url, json={"status": "acknowledged"}, headers=api.auth(api.read))
    assert read_only.status_code == 403
    other = api.client.patch(
        url, json={"status": "acknowledged"}, headers=api.auth(api.other_upload)
    )
    assert other.status_code == 404
    done = api.client.patch(url, json={"status": "acknowledged"}, headers=api.auth(api.upload))
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "acknowledged" and done.json()["id"] == change["id"]
    # A later upload re-detects, and keeps the person's verdict.
    _history(api, runs=1, first=16)
    acknowledged = api.get("/api/v1/changes", project=PROJECT, status="acknowledged").json()
    assert [c["id"] for c in acknowledged["change_points"]] == [change["id"]]
    assert all(
        c["id"] != change["id"]
        for c in api.get("/api/v1/changes", project=PROJECT, status="open").json()["change_points"]
    )
    dismissed = api.client.patch(url, json={"status": "dismissed"}, headers=api.auth(api.upload))
    assert dismissed.json()["status"] == "dismissed"
    missing = api.client.patch(
        "/api/v1/changes/999999", json={"status": "dismissed"}, headers=api.auth(api.upload)
    )
    assert missing.status_code == 404


def test_public_read_server(db_url: str, start_api: Callable[..., Api]) -> None:
    api = start_api(db_url, public_read=True)
    _history(api, runs=2)
    anonymous = api.client.get("/api/v1/projects")
    assert anonymous.status_code == 200
    assert {p["name"] for p in anonymous.json()["projects"]} == {PROJECT, OTHER}
    assert api.client.get("/api/v1/runs", params={"project": PROJECT}).status_code == 200
    assert api.client.get("/api/v1/runs", params={"project": "no/such"}).status_code == 404
    # Reading is open; a bad token is still refused, and writing still needs an upload token.
    bad = api.client.get("/api/v1/projects", headers=api.auth("pg_wrong"))
    assert bad.status_code == 401
    assert api.client.post("/api/v1/runs", json=document()).status_code == 401
    assert api.post_run(document(), token=api.read).status_code == 403


def test_dashboard_cookie_reads_but_cannot_write_cross_site(api: Api) -> None:
    cookies = {"perfgate_token": api.upload}
    api.client.cookies.update(cookies)
    try:
        assert api.client.get("/api/v1/runs", params={"project": PROJECT}).status_code == 200
        cross = api.client.post(
            "/api/v1/runs", json=document(), headers={"Origin": "https://evil.example"}
        )
        assert cross.status_code == 403
        same = api.client.post("/api/v1/runs", json=document(), headers={"Origin": api.url})
        assert same.status_code == 201, same.text
    finally:
        api.client.cookies.clear()
