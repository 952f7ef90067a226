"""The results document validator: what it accepts, what it rejects, and how it says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import DocumentError, DocumentTooLargeError
from perfgate.results import (
    load_document,
    make_key,
    parse_document,
    parse_document_bytes,
)

Mutation = Callable[[dict[str, Any]], None]


def _time(doc: dict[str, Any], i: int = 0) -> dict[str, Any]:
    metric: dict[str, Any] = doc["benchmarks"][i]["metrics"]["time"]
    return metric


def test_valid_document_round_trips(doc_data: dict[str, Any]) -> None:
    doc = parse_document(doc_data)
    again = parse_document(doc.to_json_dict())
    assert again.content_hash() == doc.content_hash()
    assert doc.benchmarks[0].metrics["time"].samples == _time(doc_data)["samples"]


def test_content_hash_ignores_formatting_but_not_content(doc_data: dict[str, Any]) -> None:
    first = parse_document_bytes(json.dumps(doc_data).encode())
    second = parse_document_bytes(json.dumps(doc_data, indent=4, sort_keys=True).encode())
    assert first.content_hash() == second.content_hash()
    _time(doc_data)["samples"][0] *= 1.5
    assert parse_document(doc_data).content_hash() != first.content_hash()


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [
        (
            lambda d: _time(d)["samples"].__setitem__(2, float("nan")),
            "benchmarks[0].metrics.time.samples[2]",
            "NaN is not a valid sample",
        ),
        (
            lambda d: _time(d)["samples"].__setitem__(1, float("inf")),
            "benchmarks[0].metrics.time.samples[1]",
            "infinity is not a valid sample",
        ),
        (
            lambda d: _time(d, 2)["samples"].__setitem__(0, -0.5),
            "benchmarks[2].metrics.time.samples[0]",
            "negative sample",
        ),
        (
            lambda d: _time(d)["samples"].__setitem__(0, "0.1"),
            "benchmarks[0].metrics.time.samples[0]",
            "must be a number",
        ),
        (
            lambda d: _time(d)["samples"].__setitem__(0, True),
            "benchmarks[0].metrics.time.samples[0]",
            "must be a number",
        ),
        (
            lambda d: _time(d).__setitem__("samples", []),
            "benchmarks[0].metrics.time.samples",
            "empty sample list",
        ),
        (
            lambda d: _time(d).__setitem__("rounds", [2, 2]),
            "benchmarks[0].metrics.time.rounds",
            "rounds add up to 4 samples but there are 5",
        ),
        (
            lambda d: _time(d).__setitem__("rounds", [5, 0]),
            "benchmarks[0].metrics.time.rounds",
            "at least one sample",
        ),
        (
            lambda d: d.__setitem__("schema", "perfgate/results@2"),
            "schema",
            "unknown schema version 'perfgate/results@2'",
        ),
        (
            lambda d: d.__setitem__("schema", "asv/results"),
            "schema",
            "is not a perfgate results document",
        ),
        (lambda d: d.pop("schema"), "schema", "missing field"),
        (lambda d: d["run"].pop("commit"), "run.commit", "missing field"),
        (lambda d: d.pop("environment"), "environment", "missing field"),
        (lambda d: d["environment"].pop("fingerprint"), "environment.fingerprint", "missing field"),
        (lambda d: d["benchmarks"][1].pop("key"), "benchmarks[1].key", "missing field"),
        (lambda d: _time(d).pop("unit"), "benchmarks[0].metrics.time.unit", "missing field"),
        (lambda d: d["run"].__setitem__("id", "run-1"), "run.id", "must be a UUID"),
        (lambda d: d["run"].__setitem__("commit", "not-hex"), "run.commit", "hex commit id"),
        (lambda d: d["run"].__setitem__("commit", "abc1234\n"), "run.commit", "hex commit id"),
        (
            lambda d: d["run"].__setitem__("started_at", "last tuesday"),
            "run.started_at",
            "ISO-8601",
        ),
        (lambda d: d["run"].__setitem__("pr", "12"), "run.pr", "integer"),
        (lambda d: d["run"].__setitem__("pr", 2**31), "run.pr", "less than or equal"),
        (
            lambda d: d["run"].__setitem__("branch", "main\x00"),
            "run.branch",
            "NUL characters",
        ),
        (
            lambda d: d["benchmarks"][1].__setitem__("tags", ["ok", "a\x00b"]),
            "benchmarks[1].tags[1]",
            "NUL characters",
        ),
        (
            lambda d: d["environment"].__setitem__("k\x00", 1),
            "environment.k\x00",
            "NUL characters",
        ),
        (
            lambda d: d["benchmarks"].append(json.loads(json.dumps(d["benchmarks"][0]))),
            "benchmarks[3].key",
            "duplicate key",
        ),
        (
            lambda d: d["benchmarks"][0].__setitem__("key", "kernel[n=1,variant=0]"),
            "benchmarks[0].key",
            "does not match name and params (expected 'kernel[n=64,variant=0]')",
        ),
        (
            lambda d: _time(d).__setitem__("direction", "down"),
            "benchmarks[0].metrics.time.direction",
            "'lower' or 'higher'",
        ),
        (
            lambda d: _time(d).__setitem__("value", 1.0),
            "benchmarks[0].metrics.time",
            "exactly one of 'samples' and 'value'",
        ),
        (
            lambda d: d["benchmarks"][0]["metrics"].__setitem__("Time!", _time(d)),
            "benchmarks[0].metrics.Time!",
            "bad name",
        ),
        (
            lambda d: d["benchmarks"][0]["params"].__setitem__("n", [1, 2]),
            "benchmarks[0].params.n",
            "a param must be",
        ),
        (
            lambda d: d["benchmarks"][0].__setitem__("metrics", {}),
            "benchmarks[0].metrics",
            "needs at least one metric",
        ),
        (
            lambda d: d["benchmarks"][0].__setitem__("colour", "blue"),
            "benchmarks[0].colour",
            "unknown field",
        ),
        (
            lambda d: d["benchmarks"][0]["profile"]["ops"].append(
                dict(d["benchmarks"][0]["profile"]["ops"][0])
            ),
            "benchmarks[0].profile.ops[5].op",
            "duplicate op",
        ),
    ],
)
def test_rejections_name_the_field(
    doc_data: dict[str, Any], mutate: Mutation, path: str, message: str
) -> None:
    mutate(doc_data)
    with pytest.raises(DocumentError) as caught:
        parse_document(doc_data, source="results.json")
    assert caught.value.path == path
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"results.json: {path}: ")
    assert "\n" not in str(caught.value)


def test_several_problems_are_counted(doc_data: dict[str, Any]) -> None:
    doc_data["run"].pop("id")
    doc_data["run"].pop("project")
    with pytest.raises(DocumentError, match=r"run\.id: missing field \(and 1 more problem\)"):
        parse_document(doc_data)


def test_error_benchmark_needs_no_metrics(doc_data: dict[str, Any]) -> None:
    doc_data["benchmarks"][0].update(metrics={}, error="RuntimeError: boom", profile=None)
    doc = parse_document(doc_data)
    assert doc.benchmarks[0].error == "RuntimeError: boom"


def test_timestamps_are_utc(doc_data: dict[str, Any]) -> None:
    doc_data["run"]["started_at"] = "2026-03-01T12:00:00+02:00"
    assert parse_document(doc_data).run.started_at.isoformat() == "2026-03-01T10:00:00+00:00"
    doc_data["run"]["started_at"] = "2026-03-01T12:00:00"
    assert parse_document(doc_data).run.started_at.isoformat() == "2026-03-01T12:00:00+00:00"


def test_rounds_split_samples(doc_data: dict[str, Any]) -> None:
    _time(doc_data)["rounds"] = [2, 3]
    metric = parse_document(doc_data).benchmarks[0].metrics["time"]
    samples = _time(doc_data)["samples"]
    assert metric.round_slices() == [samples[:2], samples[2:]]


@pytest.mark.parametrize(
    ("name", "params", "key"),
    [
        ("matmul", {}, "matmul"),
        ("matmul", {"n": 256, "dtype": "float32"}, "matmul[dtype=float32,n=256]"),
        ("f", {"flag": True, "x": None, "scale": 0.5}, "f[flag=True,scale=0.5,x=None]"),
        ("f", {"scale": 2.0}, "f[scale=2.0]"),
    ],
)
def test_make_key(name: str, params: dict[str, Any], key: str) -> None:
    assert make_key(name, params) == key


def test_truncated_json_is_one_line(tmp_path: Path, doc_data: dict[str, Any]) -> None:
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(doc_data)[:200])
    with pytest.raises(DocumentError, match=r"cut\.json: invalid JSON at line 1 column \d+"):
        load_document(path, max_bytes=1 << 20)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(DocumentError, match="not UTF-8"):
        load_document(path, max_bytes=1 << 20)


def test_size_limit_is_checked_before_reading(tmp_path: Path, doc_data: dict[str, Any]) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc_data))
    with pytest.raises(DocumentTooLargeError, match="over the document size limit"):
        load_document(path, max_bytes=100)
    assert load_document(path, max_bytes=path.stat().st_size).run.id == doc_data["run"]["id"]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="cannot read file"):
        load_document(tmp_path / "nope.json", max_bytes=100)


def test_not_an_object() -> None:
    with pytest.raises(DocumentError, match="must be a JSON object"):
        parse_document([1, 2, 3])
