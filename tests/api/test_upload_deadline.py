"""`upload --server` ends by one deadline for all its attempts, whatever the server does."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from apihelpers import document
from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.config import DEFAULT_SERVER_TIMEOUT_S, ENV_SERVER_TIMEOUT
from perfgate.errors import EXIT_EXTERNAL, EXIT_USAGE

# Long enough that a client without a deadline would still be waiting when the test gives up.
HOLD_S = 30.0


class MuteServer:
    """A real TCP server that accepts connections and never completes an answer.

    `trickle` sends the start of a response, one byte every 0.2 s, so that a socket timeout
    alone (reset by every byte) never fires; otherwise the connection just stays silent.
    """

    def __init__(self, *, trickle: bool) -> None:
        self.trickle = trickle
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]

    def __enter__(self) -> MuteServer:
        self.threads[0].start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=5)
        self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            thread = threading.Thread(target=self._hold, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _hold(self, conn: socket.socket) -> None:
        until = time.monotonic() + HOLD_S
        with conn:
            conn.settimeout(0.2)
            sent_status = False
            while not self.stop.is_set() and time.monotonic() < until:
                try:
                    if conn.recv(65536) == b"":
                        return  # the client gave up and closed
                except TimeoutError:
                    pass
                except OSError:
                    return
                if self.trickle:
                    try:
                        conn.sendall(b"x" if sent_status else b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    except OSError:
                        return
                    sent_status = True


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document()))
    return path


def upload(path: Path, server: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(
        cli,
        ["upload", str(path), "--server", server, "--token", "pg_x", *args],
        catch_exceptions=False,
    )


@pytest.mark.parametrize("trickle", [False, True], ids=["silent", "trickling"])
def test_upload_to_a_server_that_never_answers_ends_at_the_deadline(
    results_file: Path, trickle: bool
) -> None:
    with MuteServer(trickle=trickle) as server:
        started = time.monotonic()
        result = upload(results_file, server.url, "--server-timeout", "1.5")
        elapsed = time.monotonic() - started
        accepted = server.accepted
    assert result.exit_code == EXIT_EXTERNAL, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot upload to {server.url}: no answer within 1.5 s")
    assert "--server-timeout" in lines[0]
    # Before the deadline this waited 4 attempts x 120 s; the bound is the deadline plus the
    # time to start and stop a thread, far from HOLD_S.
    assert elapsed < 1.5 + 5, elapsed
    # The one attempt used the whole deadline: no retry started after it.
    assert accepted == 1


def test_the_deadline_comes_from_the_environment_too(results_file: Path) -> None:
    with MuteServer(trickle=False) as server:
        started = time.monotonic()
        result = upload(results_file, server.url, env={ENV_SERVER_TIMEOUT: "1"})
        elapsed = time.monotonic() - started
    assert result.exit_code == EXIT_EXTERNAL, result.output
    assert "no answer within 1 s" in result.stderr
    assert elapsed < 1 + 5, elapsed


def test_the_deadline_must_be_positive(results_file: Path) -> None:
    result = upload(results_file, "http://127.0.0.1:9", "--server-timeout", "0")
    assert result.exit_code == EXIT_USAGE
    assert "--server-timeout" in result.stderr


def test_the_default_deadline_is_documented() -> None:
    help_text = CliRunner().invoke(cli, ["upload", "--help"]).output
    assert f"default: {DEFAULT_SERVER_TIMEOUT_S}" in " ".join(help_text.split())
    assert ENV_SERVER_TIMEOUT in help_text
