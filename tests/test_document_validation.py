"""The checks every perfgate document starts with (`results.validate_document`), and one
benchmark entry checked on its own (`results.parse_benchmark`)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from perfgate.errors import DocumentError
from perfgate.results import parse_benchmark, validate_document


class Thing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: str = Field(alias="schema")
    size: int


def _validate(data: object) -> Thing:
    return validate_document(
        data,
        model=Thing,
        schema="perfgate/thing@2",
        what="thing",
        other=lambda found: f"other: {found!r}",
        source="t.json",
    )


def test_a_document_with_its_schema_becomes_the_model() -> None:
    assert _validate({"schema": "perfgate/thing@2", "size": 3}).size == 3


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ([], "", "a thing document must be a JSON object"),
        (
            {"schema": "perfgate/thing@3"},
            "schema",
            "unknown schema version 'perfgate/thing@3': this perfgate reads perfgate/thing@2; "
            "upgrade perfgate to read newer documents",
        ),
        # Only the same family is "a newer version": another document's name is not.
        ({"schema": "perfgate/thingy@3"}, "schema", "other: 'perfgate/thingy@3'"),
        ({"size": 1}, "schema", "other: None"),
        ({"schema": "perfgate/thing@2", "size": float("nan")}, "size", "must be a finite number"),
        ({"schema": "perfgate/thing@2", "size": "x"}, "size", "must be a valid integer"),
    ],
)
def test_the_first_failure_is_one_document_error(data: object, path: str, message: str) -> None:
    with pytest.raises(DocumentError) as caught:
        _validate(data)
    assert caught.value.source == "t.json"
    assert caught.value.path == path
    assert caught.value.detail.startswith(message), caught.value.detail


def test_a_benchmark_entry_names_its_field_below_the_given_path() -> None:
    entry = {
        "name": "b",
        "key": "b",
        "metrics": {"time": {"unit": "s", "direction": "lower", "samples": [1.0, -2.0]}},
    }
    with pytest.raises(DocumentError) as caught:
        parse_benchmark(entry, source="worker results", path="b")
    assert str(caught.value) == (
        "worker results: b.metrics.time.samples[1]: negative sample -2.0 is not valid"
    )
    assert parse_benchmark({**entry, "metrics": {}}, path="b").key == "b"
