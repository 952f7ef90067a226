"""The comparison@1 validator: what `perfgate comment` accepts, and how it names a bad field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from perfgate.cli import cli
from perfgate.errors import DocumentError
from perfgate.report.comparison_document import comparison_from_json, comparison_to_json
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from synthetic import synthetic_document


@pytest.fixture(scope="module")
def written() -> dict[str, Any]:
    base = synthetic_document(benchmarks=6, samples=30, seed=3, commit="a" * 40)
    head = synthetic_document(
        benchmarks=6, samples=30, seed=4, commit="b" * 40, branch="pr", slowdown={"bench_1": 2.0}
    )
    comparison = compare_documents([parse_document(base)], [parse_document(head)])
    data = json.loads(json.dumps(comparison_to_json(comparison)))
    assert any(r["attribution"] for r in data["results"]) or data["results"]
    return data


def _broken(data: dict[str, Any], path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    out = copy.deepcopy(data)
    target: Any = out
    for part in path[:-1]:
        target = target[part]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


_DELETE = object()


def test_what_perfgate_writes_reads_back_equal(written: dict[str, Any]) -> None:
    comparison = comparison_from_json(written)
    assert comparison_to_json(comparison) == written


def test_documents_without_the_optional_fields_still_read(written: dict[str, Any]) -> None:
    old = copy.deepcopy(written)
    for result in old["results"]:
        for optional in ("flag", "history", "levels", "baseline_runs", "noise"):
            result.pop(optional, None)
    old.pop("summary")
    comparison = comparison_from_json(old)
    assert [r.flag for r in comparison.results] == [None] * len(old["results"])


@pytest.mark.parametrize(
    ("path", "value", "where", "says"),
    [
        (("results", 2, "verdict"), "slower", "results[2].verdict", "must be 'regression'"),
        (("results", 0, "ratio"), "1.2", "results[0].ratio", "must be a number, got str"),
        (("results", 1, "ci"), [1.0], "results[1].ci[1]", "missing"),
        (("results", 0, "base", "n"), -1, "results[0].base.n", "whole number"),
        (("results", 0, "flag"), "maybe", "results[0].flag", "possible_regression"),
        (("results", 3, "key"), _DELETE, "results[3].key", "missing"),
        (("settings", "threshold"), None, "settings.threshold", ""),
        (("head", "runs"), "abc", "head.runs", ""),
        (("results", 0, "surprise"), 1, "results[0].surprise", ""),
    ],
)
def test_a_bad_field_is_named(
    written: dict[str, Any], path: tuple[str | int, ...], value: object, where: str, says: str
) -> None:
    with pytest.raises(DocumentError) as caught:
        comparison_from_json(_broken(written, path, value), source="c.json")
    message = str(caught.value)
    assert message.startswith(f"c.json: {where}:"), message
    assert says in message
    assert "\n" not in message


def test_non_finite_numbers_are_refused(written: dict[str, Any]) -> None:
    bad = _broken(written, ("results", 0, "ratio"), float("inf"))
    with pytest.raises(DocumentError, match=r"results\[0\]\.ratio: must be a finite number"):
        comparison_from_json(bad)


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ("perfgate/comparison@2", "unknown schema version 'perfgate/comparison@2'"),
        ("perfgate/results@1", "not a perfgate/comparison@1 document"),
        (None, "not a perfgate/comparison@1 document"),
    ],
)
def test_the_schema_word_is_checked_first(
    written: dict[str, Any], schema: str | None, says: str
) -> None:
    with pytest.raises(DocumentError, match=says):
        comparison_from_json(_broken(written, ("schema",), schema))


def test_perfgate_comment_refuses_a_bad_document_in_one_line(
    written: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps(_broken(written, ("results", 4, "verdict"), 7)))
    result = CliRunner().invoke(
        cli, ["comment", str(path), "--repo", "o/r", "--pr", "1", "--token", "t"]
    )
    assert result.exit_code == 2, result.output
    assert f"{path}: results[4].verdict: must be" in result.output
    assert "Traceback" not in result.output
