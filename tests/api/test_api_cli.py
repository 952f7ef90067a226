"""The service's commands: token create/list/revoke, upload and run --server, serve (workers)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from apihelpers import PROJECT, Api, document
from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.store.connect import open_store
from perfgate.store.row_writes import count_rows
from perfgate.store.tokens import authenticate, hash_token


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_token_create_list_revoke(db_url: str) -> None:
    created = invoke("token", "create", "--project", PROJECT, "--scope", "read", "--db", db_url)
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    assert token.startswith("pg_") and len(token) > 40
    assert "shown only now" in created.stderr
    with open_store(db_url) as store, store.sessions() as session:
        grant = authenticate(session, token=token)
        assert grant is not None and grant.scope == "read" and grant.project == PROJECT
        # Only the hash is stored.
        from sqlalchemy import text

        stored = [row[0] for row in session.execute(text("SELECT token_hash FROM tokens"))]
    assert stored == [hash_token(token)] and token not in stored
    second = invoke("token", "create", "--project", PROJECT, "--db", db_url).stdout.strip()
    assert second != token
    listed = invoke("token", "list", "--format", "json", "--db", db_url)
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)["tokens"]
    assert [(r["id"], r["scope"], r["revoked_at"]) for r in rows] == [
        (1, "read", None),
        (2, "upload", None),
    ]
    assert token not in listed.stdout and second not in listed.stdout
    table = invoke("token", "list", "--db", db_url)
    assert "active" in table.stdout and token not in table.stdout
    revoked = invoke("token", "revoke", "1", "--db", db_url)
    assert revoked.exit_code == 0, revoked.output
    with open_store(db_url) as store, store.sessions() as session:
        assert authenticate(session, token=token) is None
    missing = invoke("token", "revoke", "99", "--db", db_url)
    assert missing.exit_code == 2
    assert "token 99 does not exist" in missing.stderr


def test_upload_to_server_exit_codes(api: Api, tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document()))
    ok = invoke("upload", str(path), "--server", api.url, "--token", api.upload)
    assert ok.exit_code == 0, ok.output
    assert "stored run" in ok.stdout
    again = invoke("upload", str(path), "--server", api.url, "--token", api.upload)
    assert again.exit_code == 0 and "already" in again.stdout
    refused = invoke("upload", str(path), "--server", api.url, "--token", api.read)
    assert refused.exit_code == 2
    assert "403 forbidden" in refused.stderr and "scope" in refused.stderr
    no_token = invoke("upload", str(path), "--server", api.url)
    assert no_token.exit_code == 2 and "--token" in no_token.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    unreachable = invoke("upload", str(path), "--server", dead, "--token", api.upload)
    assert unreachable.exit_code == 3
    assert "after 4 attempts" in unreachable.stderr
    with open_store(api.db_url) as store, store.sessions() as session:
        assert count_rows(session)["runs"] == 1


def test_run_server_needs_a_token_before_running(tmp_path: Path) -> None:
    result = invoke("run", str(tmp_path), "--server", "http://127.0.0.1:9", "--no-profile")
    assert result.exit_code == 2
    assert "--token" in result.stderr


def test_serve_refuses_an_unreachable_database() -> None:
    result = invoke("serve", "--db", "postgresql+psycopg://postgres@127.0.0.1:9/none")
    assert result.exit_code == 3
    assert "cannot connect" in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(db_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`perfgate serve --workers 2` in a subprocess on the test database."""
    token = invoke("token", "create", "--project", PROJECT, "--db", db_url).stdout.strip()
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perfgate",
            "serve",
            "--port",
            str(port),
            "--workers",
            "2",
            "--db",
            db_url,
            "--public-read",
            "--max-size",
            "1MiB",
            "--log-level",
            "warning",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "perfgate serve did not become ready"
            time.sleep(0.2)
        yield url, token
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()


@pytest.mark.slow
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_serve_with_workers_takes_its_options_to_every_worker(served: tuple[str, str]) -> None:
    url, token = served
    with httpx.Client(base_url=url, timeout=30) as client:
        statuses = {
            client.post(
                "/api/v1/runs",
                json=document(seed=i),
                headers={"Authorization": f"Bearer {token}", "Connection": "close"},
            ).status_code
            for i in range(6)
        }
        assert statuses == {201}
        # --public-read and --max-size reached the workers through the environment.
        projects = client.get("/api/v1/projects", headers={"Connection": "close"})
        assert projects.status_code == 200
        big = client.post(
            "/api/v1/runs",
            content=b"x" * (2 * 1024 * 1024),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        assert big.status_code == 413


@pytest.mark.slow
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_run_uploads_to_the_server(api: Api, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "bench_tiny.py").write_text(
        "import torch, perfgate\n\n"
        "@perfgate.benchmark(params={'n': [8]})\n"
        "def add(n):\n"
        "    a = torch.ones(n)\n"
        "    return lambda: a + a\n"
    )
    out = tmp_path / "results.json"
    result = invoke(
        "run", str(suite), "--no-profile", "--max-time", "0.2", "--out", str(out),
        "--project", PROJECT, "--commit", "ab" * 20, "--branch", "main",
        "--server", api.url, "--token", api.upload,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "stored run" in result.stdout
    run_id = json.loads(out.read_text())["run"]["id"]
    stored = api.get(f"/api/v1/runs/{run_id}")
    assert stored.status_code == 200 and stored.json()["commit"] == "ab" * 20
