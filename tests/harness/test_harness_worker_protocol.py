"""The worker protocol: the request file and the event lines, both ends, without a subprocess."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from perfgate.harness.progress import InstanceProgress
from perfgate.harness.worker import main
from perfgate.harness.worker_protocol import (
    EventWriter,
    WorkerRequest,
    WorkerRequestError,
    parse_event,
    replay,
)

REQUEST = WorkerRequest(
    files=("benchmarks/bench_a.py",),
    keys=("a[n=1]", "a[n=2]"),
    device="cpu",
    threads=2,
    round_index=3,
    profile=True,
    results="/tmp/results.jsonl",
    max_time=0.5,
    interleave=True,
    trace_dir="traces",
)


def test_a_request_survives_the_wire_and_carries_the_settings() -> None:
    text = REQUEST.to_json()
    assert json.loads(text)["keys"] == ["a[n=1]", "a[n=2]"]
    back = WorkerRequest.from_json(text, source="request.json")
    assert back == REQUEST
    settings = back.settings()
    assert settings.max_time == 0.5 and settings.interleave and settings.profile
    assert settings.trace_dir == Path("traces")
    assert settings.device_timing == "events" and not settings.cold_cache


def test_optional_fields_take_their_defaults() -> None:
    required = {
        "files": [],
        "keys": [],
        "device": "cpu",
        "threads": 1,
        "round_index": 1,
        "profile": False,
        "results": "r.jsonl",
    }
    request = WorkerRequest.from_json(json.dumps(required), source="r")
    assert request.pin_malloc and request.max_time is None and request.trace_dir is None
    assert (
        WorkerRequest.from_json(json.dumps({**required, "max_time": 1}), source="r").max_time == 1.0
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"threads": "2"}, "request.json: field 'threads' must be an integer, got str"),
        ({"threads": True}, "field 'threads' must be an integer, got bool"),
        ({"keys": ["a", 1]}, "field 'keys' must be a list of strings, got list"),
        ({"profile": 1}, "field 'profile' must be true or false, got int"),
        ({"max_time": "1"}, "field 'max_time' must be a number or null, got str"),
        ({"device": None}, "field 'device' must be a string, got NoneType"),
        ({"colour": "blue"}, "unknown field 'colour'"),
        ({"results": ...}, "missing field 'results'"),
    ],
)
def test_a_malformed_request_names_the_field(change: dict[str, object], message: str) -> None:
    data = json.loads(REQUEST.to_json())
    data.update(change)
    data = {k: v for k, v in data.items() if v is not ...}
    with pytest.raises(WorkerRequestError) as caught:
        WorkerRequest.from_json(json.dumps(data), source="request.json")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [("[]", "request.json: a worker request must be a JSON object"), ("{", "not JSON")],
)
def test_a_request_that_is_not_an_object_is_refused(text: str, message: str) -> None:
    with pytest.raises(WorkerRequestError, match=message):
        WorkerRequest.from_json(text, source="request.json")


def test_the_worker_refuses_a_bad_request_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"files": []}), encoding="utf-8")
    assert main([str(path)]) == 2
    assert capsys.readouterr().err == (
        f"perfgate worker: bad request: {path}: missing field 'keys'\n"
    )


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def run_started(self, *, instances: int, rounds: int) -> None:
        self.calls.append(("run_started", instances, rounds))

    def instance_started(self, key: str, *, round_index: int) -> None:
        self.calls.append(("started", key, round_index))

    def instance_progress(self, progress: InstanceProgress) -> None:
        self.calls.append(("progress", progress))

    def instance_finished(self, progress: InstanceProgress) -> None:
        self.calls.append(("finished", progress))

    def instance_error(self, key: str, message: str, *, round_index: int) -> None:
        self.calls.append(("error", key, message, round_index))

    def warning(self, message: str) -> None:
        self.calls.append(("warning", message))

    def run_finished(self) -> None:
        self.calls.append(("run_finished",))


def test_events_written_by_the_worker_replay_as_the_same_calls() -> None:
    progress = InstanceProgress("a", 2, samples=20, median=1e-3, ci_rel=None, elapsed=0.5)
    stream = io.StringIO()
    writer = EventWriter(stream)
    writer.run_started(instances=1, rounds=2)  # the parent announces the run, not the worker
    writer.instance_started("a", round_index=2)
    writer.instance_progress(progress)
    writer.instance_finished(progress)
    writer.instance_error("b", "RuntimeError: no", round_index=2)
    writer.warning("careful")
    writer.run_finished()
    lines = stream.getvalue().splitlines()
    # The wire format other perfgate versions of the parent read.
    assert json.loads(lines[0]) == {"event": "started", "key": "a", "round_index": 2}
    assert json.loads(lines[2])["event"] == "finished"
    recorder, started = Recorder(), set[str]()
    for line in ["not json", "[1]", '{"event": "started"}', *lines]:
        replay(line, recorder, started)
    assert started == {"a"}
    assert recorder.calls == [
        ("started", "a", 2),
        ("progress", progress),
        ("finished", progress),
        ("error", "b", "RuntimeError: no", 2),
        ("warning", "careful"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        '{"event": "started", "key": 1, "round_index": 1}',
        '{"event": "progress", "progress": {"key": "a"}}',
        '{"event": "warning"}',
        '{"event": "unheard-of"}',
    ],
)
def test_lines_that_are_not_well_formed_events_are_ignored(line: str) -> None:
    assert parse_event(line) is None
