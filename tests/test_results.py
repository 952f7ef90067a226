"""The results document validator: what it accepts, what it rejects, and how it says so."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import DocumentError, DocumentTooLargeError
from perfgate.results import (
    ResultsDocument,
    load_document,
    make_key,
    parse_document,
    parse_document_bytes,
)
from synthetic import synthetic_document

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


def _one_dump_hash(doc: ResultsDocument) -> str:
    """The content hash as the store has always defined it: one canonical dump, hashed."""
    text = json.dumps(doc.to_json_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("benchmarks", [0, 1, 3, 1024, 1025, 2500])
def test_content_hash_is_the_hash_of_one_canonical_dump(benchmarks: int) -> None:
    """The hash is fed in pieces (a slice of benchmarks at a time); the pieces must join to the
    text of one dump, or every stored run's hash would change. Slice edges, no benchmarks,
    non-ASCII text, free-form run and environment fields and mixed params are covered."""
    data = synthetic_document(
        benchmarks=benchmarks, samples=3, seed=benchmarks, ops_per_benchmark=1
    )
    data["run"]["ci"] = {"zeta": [1, 2.5, None], "alpha": {"ü": "ß\u2603", "b": True}}
    data["environment"]["notes"] = 'émoji \U0001f680 and \\ "quotes"'
    for i, bench in enumerate(data["benchmarks"]):
        bench["tags"] = ["größe", f"t{i % 7}"]
        bench["params"] = {"n": i, "dtype": "bf16" if i % 2 else "fp32", "on": i % 3 == 0}
        bench["key"] = make_key(bench["name"], bench["params"])
    doc = parse_document(data)
    assert "".join(doc.canonical_pieces()) == json.dumps(
        doc.to_json_dict(), sort_keys=True, separators=(",", ":")
    )
    assert doc.content_hash() == _one_dump_hash(doc)


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


# --- JSON-level limits: inputs that once passed validation and then broke the store -------------


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _text(doc: dict[str, Any], old: str = "", new: str = "") -> bytes:
    """The document as JSON text, with one textual edit (what json.dumps cannot write)."""
    text = json.dumps(doc)
    if old:
        assert old in text
        text = text.replace(old, new, 1)
    return text.encode()


def _flops(doc: dict[str, Any]) -> dict[str, Any]:
    metric: dict[str, Any] = doc["benchmarks"][0]["metrics"]["flops"]
    return metric


def _first_op(doc: dict[str, Any]) -> dict[str, Any]:
    op: dict[str, Any] = doc["benchmarks"][0]["profile"]["ops"][0]
    return op


def _rename(doc: dict[str, Any], name: str) -> None:
    bench = doc["benchmarks"][0]
    bench["key"] = bench["key"].replace(bench["name"], name, 1)
    bench["name"] = name


TextEdit = Callable[[dict[str, Any]], bytes]


def _edit(mutate: Mutation) -> TextEdit:
    def apply(doc: dict[str, Any]) -> bytes:
        mutate(doc)
        return _text(doc)

    return apply


@pytest.mark.parametrize(
    ("edit", "path", "message"),
    [
        pytest.param(
            _edit(lambda d: _time(d)["samples"].__setitem__(3, 10**401)),
            "benchmarks[0].metrics.time.samples[3]",
            "integer out of range",
            id="sample-401-digits",
        ),
        pytest.param(
            _edit(lambda d: _flops(d).__setitem__("value", -(10**500))),
            "benchmarks[0].metrics.flops.value",
            "integer out of range",
            id="value-500-digits",
        ),
        pytest.param(
            _edit(lambda d: _first_op(d).__setitem__("count", 10**401)),
            "benchmarks[0].profile.ops[0].count",
            "integer out of range",
            id="op-count-401-digits",
        ),
        pytest.param(
            lambda d: _text(d, '"value": 524288', '"value": ' + "7" * 5000),
            "benchmarks[0].metrics.flops.value",
            "integer out of range (5000 digits)",
            id="value-5000-digits",
        ),
        pytest.param(
            lambda d: _text(d, '"ci": {', '"ci": {"build": [1, -' + "9" * 4301 + "], "),
            "run.ci.build[1]",
            "integer out of range (4301 digits)",
            id="ci-4301-digits",
        ),
        pytest.param(
            _edit(lambda d: d["run"]["ci"].__setitem__("n", 2**1024)),
            "run.ci.n",
            "integer out of range",
            id="ci-past-float",
        ),
        pytest.param(
            _edit(lambda d: d["run"].__setitem__("started_at", "9999-12-31T23:00-05:00")),
            "run.started_at",
            "out of range in UTC",
            id="timestamp-after-9999",
        ),
        pytest.param(
            _edit(lambda d: d["run"].__setitem__("finished_at", "0001-01-01T00:30+01:00")),
            "run.finished_at",
            "out of range in UTC",
            id="timestamp-before-1",
        ),
        pytest.param(
            _edit(lambda d: d["run"]["ci"].__setitem__("deep", _nested(900))),
            "run.ci.deep" + "[0]" * 31,
            "nested more than 32 levels deep",
            id="ci-900-levels",
        ),
        pytest.param(
            _edit(lambda d: d["environment"].__setitem__("gpu", {"a": _nested(32)})),
            "environment.gpu.a" + "[0]" * 30,
            "nested more than 32 levels deep",
            id="environment-33-levels",
        ),
        pytest.param(
            _edit(lambda d: _rename(d, "ker\ud800nel")),
            "benchmarks[0].name",
            "lone surrogate",
            id="surrogate-name",
        ),
        pytest.param(
            _edit(lambda d: d["environment"].__setitem__("host", "\udfff")),
            "environment.host",
            "lone surrogate",
            id="surrogate-environment-value",
        ),
        pytest.param(
            _edit(lambda d: d["run"]["ci"].__setitem__("job\ud800", "x")),
            "run.ci.job\\ud800",
            "lone surrogate",
            id="surrogate-ci-key",
        ),
        pytest.param(
            _edit(lambda d: d["run"]["ci"].__setitem__("steps", ["ok", {"name": "\ud83d"}])),
            "run.ci.steps[1].name",
            "lone surrogate",
            id="surrogate-ci-nested-value",
        ),
        pytest.param(
            _edit(lambda d: d["run"]["ci"].__setitem__("ratio", float("nan"))),
            "run.ci.ratio",
            "NaN is not valid JSON",
            id="nan-ci",
        ),
        pytest.param(
            _edit(lambda d: d["environment"].__setitem__("clocks", [1.0, float("-inf")])),
            "environment.clocks[1]",
            "-Infinity is not valid JSON",
            id="infinity-environment",
        ),
        pytest.param(
            lambda d: _text(d, '"ci": {', '"ci": {"attempt": 1, "attempt": 2, '),
            "run.ci",
            "duplicate key 'attempt'",
            id="duplicate-ci-key",
        ),
        pytest.param(
            lambda d: _text(d, '"unit": "s"', '"unit": "s", "unit": "ms"'),
            "benchmarks[0].metrics.time",
            "duplicate key 'unit'",
            id="duplicate-metric-field",
        ),
        pytest.param(
            lambda d: _text(d, '"schema": ', '"run": {}, "schema": '),
            "(document)",
            "duplicate key 'run'",
            id="duplicate-top-level",
        ),
    ],
)
def test_json_level_limits_name_the_field(
    doc_data: dict[str, Any], edit: TextEdit, path: str, message: str
) -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document_bytes(edit(doc_data), source="results.json")
    assert caught.value.path == path
    assert message in caught.value.detail
    assert str(caught.value).startswith(f"results.json: {path}: ")
    assert "\n" not in str(caught.value)
    # The message must be printable and encodable: it goes to stderr and into a JSON answer.
    str(caught.value).encode("utf-8")


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda d: d["run"]["ci"].__setitem__("deep", _nested(31)), id="ci-32-levels"),
        pytest.param(lambda d: d["run"]["ci"].__setitem__("big", 10**308), id="ci-309-digits"),
        pytest.param(lambda d: _time(d)["samples"].__setitem__(0, 10**300), id="sample-1e300"),
        pytest.param(lambda d: _rename(d, "ker\U0001f600nel"), id="astral-name"),
        pytest.param(
            lambda d: d["run"].__setitem__("started_at", "9999-12-31T23:00+00:00"), id="year-9999"
        ),
        pytest.param(
            lambda d: d["run"].__setitem__("started_at", "0001-01-01T00:30-00:30"), id="year-1"
        ),
    ],
)
def test_json_level_limits_accept_their_edges(doc_data: dict[str, Any], mutate: Mutation) -> None:
    mutate(doc_data)
    doc = parse_document_bytes(_text(doc_data))
    assert parse_document(doc.to_json_dict()).content_hash() == doc.content_hash()


def test_surrogate_pairs_are_one_character(doc_data: dict[str, Any]) -> None:
    # "\ud83d\ude00" in JSON text is one character (U+1F600), not two lone surrogates.
    _rename(doc_data, "smile")
    raw = _text(doc_data).replace(b'"smile', b'"\\ud83d\\ude00', 2)
    assert parse_document_bytes(raw).benchmarks[0].name == "\U0001f600"


def test_free_form_limits_also_apply_to_decoded_data(doc_data: dict[str, Any]) -> None:
    # parse_document (the runner's and the store's way in) refuses what parse_document_bytes does.
    doc_data["run"]["ci"]["n"] = float("inf")
    with pytest.raises(DocumentError, match=r"^run\.ci\.n: Infinity is not valid JSON"):
        parse_document(doc_data)
    doc_data["run"]["ci"]["n"] = 10**5000
    with pytest.raises(DocumentError, match=r"^run\.ci\.n: integer out of range"):
        parse_document(doc_data)


# --- the fast path of parse_document_bytes (document_json.decode_checked) ------------------------


def _raw_with(doc_data: dict[str, Any], marker: str, literal: str) -> str:
    """The document as JSON text with the string value `marker` replaced by raw JSON `literal`."""
    return json.dumps(doc_data).replace(json.dumps(marker), literal, 1)


_PLANTED = [
    # (where the marker goes, the raw JSON put there): each breaks a JSON-level rule
    ("name", '"k\\ud800"'),  # a lone surrogate in a benchmark's name
    ("tag", '"a\\u0000b"'),  # NUL in a tag
    ("sample", "2" + "0" * 308),  # 2e308: past the largest float
    ("sample", "1" + "0" * 500),  # past what Python turns into an int
    ("param", "-" + "9" * 320),
    ("ci", '{"a": 1, "a": 2}'),  # a duplicate key in a free-form field
    ("bench", '{"name": "k", "name": "k"}'),  # and in a benchmark
    ("ci", "NaN"),
    ("ci", "1e999"),  # parses as infinity
    ("env", "-Infinity"),
    ("ci", "[" * 40 + "]" * 40),  # nested too deep
    ("env", '{"\\ud83d\\ude00": "paired surrogates are fine", "x": "\\\\u0000 is text"}'),
]


@pytest.mark.parametrize(("where", "literal"), _PLANTED)
def test_bytes_are_judged_as_the_full_check_judges_them(
    doc_data: dict[str, Any], where: str, literal: str
) -> None:
    """Reading bytes skips walking the benchmarks when the decoder saw nothing suspicious; the
    answer must be the full check's, error and path, whatever is planted where."""
    marker = "PLANTED-VALUE"
    bench = doc_data["benchmarks"][1]
    if where == "name":
        bench["name"] = marker
    elif where == "tag":
        bench["tags"] = ["x", marker]
    elif where == "sample":
        _time(doc_data, 1)["samples"][3] = marker
    elif where == "param":
        bench["params"]["n"] = marker
    elif where == "bench":
        doc_data["benchmarks"][2] = marker
    elif where == "ci":
        doc_data["run"]["ci"] = {"job": {"inner": marker}}
    else:
        doc_data["environment"]["extra"] = marker
    text = _raw_with(doc_data, marker, literal)
    from perfgate import document_json

    def outcome(parse: Callable[[], Any]) -> tuple[str, str] | str:
        try:
            return parse().content_hash()  # type: ignore[no-any-return]
        except DocumentError as exc:
            return (exc.path or "", str(exc))

    full = outcome(lambda: parse_document(document_json.decode(text)))
    fast = outcome(lambda: parse_document_bytes(text.encode()))
    assert fast == full
    if "paired" not in literal:
        assert isinstance(full, tuple), "the planted value should be refused"


def test_samples_are_judged_one_by_one_when_the_list_is_not_plain(
    doc_data: dict[str, Any],
) -> None:
    """The whole-list check of samples names the same sample as a check of each would."""
    for bad, message in ((True, "sample must be a number, got bool"), ("1", "got str")):
        samples = _time(doc_data, 1)["samples"]
        samples[4] = bad
        with pytest.raises(DocumentError) as caught:
            parse_document(doc_data)
        assert caught.value.path == "benchmarks[1].metrics.time.samples[4]"
        assert message in str(caught.value)
        samples[4] = 1.0
    # Finite samples whose sum overflows a float are still valid.
    _time(doc_data, 1)["samples"][:2] = [1.5e308, 1.5e308]
    assert parse_document(doc_data).benchmarks[1].metrics["time"].samples[:2] == [1.5e308] * 2


class _Float(float):
    pass


@pytest.mark.parametrize(
    "value",
    [
        *(0.0, -0.0, 5e-324, 1.5, 1.7976931348623157e308, float("inf"), float("-inf")),
        *(float("nan"), -1e-300, -2.5, _Float(1.0), _Float(-1.0), 0, 7, -3, 10**300, 10**400),
        *(True, False, None, "1.5", [1.0]),
    ],
    ids=repr,
)
def test_value_check_takes_no_shortcut_of_its_own(value: object) -> None:
    """`_value` answers the common cases itself; its answer (number, error or exception) must be
    the one of the general check `_number`, which names every problem."""
    from pydantic_core import PydanticCustomError

    from perfgate import results

    def outcome(check: Callable[[], float]) -> tuple[str, object]:
        try:
            number = check()
        except PydanticCustomError as exc:
            return "refused", (exc.type, str(exc))
        except OverflowError as exc:
            return "overflow", str(exc)
        return type(number).__name__, repr(number)

    assert outcome(lambda: results._value(value)) == outcome(
        lambda: results._number(value, "value")
    )


def _objects(value: object, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every non-empty JSON object within `value`, with its path."""
    if isinstance(value, dict):
        if value:
            yield path, value
        for key, item in value.items():
            yield from _objects(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _objects(item, f"{path}[{i}]")


def test_duplicate_keys_are_refused_in_every_object(doc_data: dict[str, Any]) -> None:
    """The decoder's hook sees every object: a key written twice is refused wherever it is, by
    the bytes' path as by the full check of decoded data, naming the object."""
    from perfgate import document_json

    doc_data["run"]["ci"] = {"job": {"steps": [{"name": "a"}]}}
    doc_data["environment"]["gpu"] = {"name": "x"}
    marker = "DUPLICATE-MARKER"
    paths = [path for path, _ in _objects(doc_data)]
    assert len(paths) > 30
    for path in paths:
        data = copy.deepcopy(doc_data)
        target = dict(_objects(data))[path]
        first = next(iter(target))
        again = f"{json.dumps(first)}: {json.dumps(target[first])}"
        target[marker] = 0
        text = json.dumps(data).replace(f'"{marker}": 0', again)
        refusals = []
        for parse in (
            lambda text: parse_document_bytes(text.encode()),
            lambda text: parse_document(document_json.decode(text)),
        ):
            with pytest.raises(DocumentError) as caught:
                parse(text)
            refusals.append((caught.value.path, str(caught.value)))
        assert refusals[0] == refusals[1]
        assert refusals[0][0] == (path or "(document)")
        assert f"duplicate key {first!r}" in refusals[0][1]
