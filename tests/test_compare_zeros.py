"""Time samples of 0 (valid: a timer that did not tick) compare without exception, everywhere.

A median of 0 has no logarithm: zero against zero is unchanged, zero against a positive median
is decided by the rank test, and a zero benchmark takes no part in the noise model (its rounds'
speed factors, the suite's common factor). Checked through the library, `perfgate compare` on
files and on a store with history, `/api/v1/compare` and the dashboard's compare page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from api.apihelpers import LiveServer, make_tokens
from perfgate.api.app import create_app
from perfgate.cli import cli
from perfgate.config import Settings
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison, MetricResult
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

PROJECT = "acme/widgets"
T0 = datetime(2026, 5, 1, tzinfo=timezone.utc)
SAMPLES = 12


def _doc(
    seed: int,
    commit: str,
    *,
    zero: Sequence[int] = (),
    value: float = 0.0,
    rounds: list[int] | None = None,
    branch: str = "main",
    hours: int = 0,
) -> dict[str, Any]:
    """Six benchmarks; those in `zero` have every time sample equal to `value`."""
    doc = synthetic_document(
        benchmarks=6,
        samples=SAMPLES,
        seed=seed,
        project=PROJECT,
        commit=commit,
        branch=branch,
        started_at=T0 + timedelta(hours=hours),
    )
    for i, bench in enumerate(doc["benchmarks"]):
        time = bench["metrics"]["time"]
        if i in zero:
            time["samples"] = [value] * SAMPLES
        if rounds:
            time["rounds"] = rounds
    return doc


def _compare(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> Comparison:
    return compare_documents([parse_document(d) for d in base], [parse_document(d) for d in head])


def _time(comparison: Comparison, index: int) -> MetricResult:
    key = f"kernel[n={64 * (1 + index)},variant=0]"
    (found,) = [r for r in comparison.results if r.key == key and r.metric == "time"]
    return found


@pytest.mark.parametrize("rounds", [None, [4, 4, 4], [3, 3, 3, 3]])
def test_zero_against_zero_is_unchanged(rounds: list[int] | None) -> None:
    comparison = _compare(
        [_doc(1, "a" * 40, zero=[0], rounds=rounds)], [_doc(2, "b" * 40, zero=[0], rounds=rounds)]
    )
    result = _time(comparison, 0)
    assert (result.verdict, result.ratio, result.ci) == ("unchanged", None, None)
    assert "0 on both sides" in result.reason


@pytest.mark.parametrize("rounds", [None, [4, 4, 4]])
def test_zero_against_positive_is_decided_without_a_ratio(rounds: list[int] | None) -> None:
    zero_base = _compare(
        [_doc(1, "a" * 40, zero=[0], rounds=rounds)], [_doc(2, "b" * 40, rounds=rounds)]
    )
    result = _time(zero_base, 0)
    # No ratio: it would divide by 0 (JSON could not carry an infinite one either).
    assert (result.verdict, result.ratio, result.ci) == ("regression", None, None)
    assert "from a median of 0" in result.reason
    zero_head = _compare(
        [_doc(1, "a" * 40, rounds=rounds)], [_doc(2, "b" * 40, zero=[0], rounds=rounds)]
    )
    result = _time(zero_head, 0)
    assert (result.verdict, result.ratio, result.ci) == ("improvement", 0.0, None)
    # The other benchmarks did not change, and the zero one does not move their verdicts.
    for comparison in (zero_base, zero_head):
        assert {_time(comparison, i).verdict for i in range(1, 6)} <= {"unchanged", "inconclusive"}


def test_subnormal_against_zero_is_a_change_not_an_error() -> None:
    # 5e-324 is the smallest positive float: its logarithm is finite, 0's is not.
    comparison = _compare(
        [_doc(1, "a" * 40, zero=[0, 1], value=5e-324)], [_doc(2, "b" * 40, zero=[0, 1])]
    )
    assert {_time(comparison, i).verdict for i in (0, 1)} == {"improvement"}
    assert {_time(comparison, i).ratio for i in (0, 1)} == {0.0}


def test_zeros_that_move_between_benchmarks() -> None:
    # Once an OverflowError: the zero benchmarks' logarithms swamped the other benchmarks'
    # round factors and the noise model's cross-section, and the CI overflowed exp().
    for rounds in (None, [6, 6], [3, 3, 3, 3]):
        comparison = _compare(
            [_doc(1, "a" * 40, zero=[2, 3, 4], rounds=rounds)],
            [_doc(2, "b" * 40, zero=[0, 3, 5], rounds=rounds)],
        )
        verdicts = [_time(comparison, i).verdict for i in range(6)]
        assert verdicts[3] == "unchanged"  # zero on both sides
        assert verdicts[0] == verdicts[5] == "improvement"  # positive -> 0
        assert verdicts[2] == verdicts[4] == "regression"  # 0 -> positive
        assert verdicts[1] in ("unchanged", "inconclusive")


def _store(db_url: str) -> None:
    """Six runs of main (the third all zero, the fifth half zero), then a feature branch run."""
    docs = [
        _doc(10 + i, f"{i + 1:x}" * 40, rounds=[4, 4, 4], hours=i, zero=zero)
        for i, zero in enumerate([(), (), range(6), (), (0, 2, 4), ()])
    ]
    docs.append(_doc(30, "f" * 40, rounds=[4, 4, 4], hours=10, branch="feature", zero=(1, 2, 3, 4)))
    with open_store(db_url) as store:
        for doc in docs:
            store_document(store.sessions, parse_document(doc))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("base", ["3" * 12, "5" * 12, "main"])
def test_cli_compare_with_zero_runs_in_the_store(db_url: str, base: str) -> None:
    _store(db_url)
    result = invoke("compare", base, "f" * 12, "--db", db_url, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    verdicts = {r["key"]: r["verdict"] for r in document["results"] if r["metric"] == "time"}
    assert len(verdicts) == 6
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout  # valid JSON


def test_cli_compare_files_with_rounds(tmp_path: Path) -> None:
    for name, doc in (
        ("base.json", _doc(1, "a" * 40, zero=[2, 3, 4], rounds=[3, 3, 3, 3])),
        ("head.json", _doc(2, "b" * 40, zero=[0, 3, 5], rounds=[3, 3, 3, 3])),
    ):
        (tmp_path / name).write_text(json.dumps(doc))
    result = invoke(
        "compare",
        str(tmp_path / "base.json"),
        str(tmp_path / "head.json"),
        "--db",
        f"sqlite:///{tmp_path / 'none.db'}",
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output


@pytest.fixture
def server(db_url: str) -> Iterator[tuple[httpx.Client, str]]:
    _store(db_url)
    token = make_tokens(db_url)["read"]
    live = LiveServer(create_app(Settings(db_url=db_url, public_read=True))).start()
    with httpx.Client(base_url=live.url, timeout=60) as client:
        yield client, token
    live.stop()


def test_api_and_dashboard_compare_zero_runs(server: tuple[httpx.Client, str]) -> None:
    client, token = server
    for base in ("3" * 12, "5" * 12, "main"):
        answer = client.get(
            "/api/v1/compare",
            params={"project": PROJECT, "base": base, "head": "f" * 12},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 200, answer.text
        results = [r for r in answer.json()["results"] if r["metric"] == "time"]
        assert len(results) == 6
        page = client.get(f"/p/{PROJECT}/compare", params={"base": base, "head": "f" * 12})
        assert page.status_code == 200, page.text
        assert "0 ns" in page.text  # a zero median, shown as one


def _scaled(doc: dict[str, Any], scales: dict[int, float]) -> dict[str, Any]:
    for i, scale in scales.items():
        time = doc["benchmarks"][i]["metrics"]["time"]
        time["samples"] = [v * scale for v in time["samples"]]
    return doc


@pytest.mark.parametrize("rounds", [None, [4, 4, 4]])
def test_extreme_but_valid_samples_compare(rounds: list[int] | None) -> None:
    # Ratios past the largest float (1e-300 s against 1e300 s) once overflowed exp() in the
    # CI, the noise description and the thresholds; they saturate instead.
    base = [_scaled(_doc(1, "a" * 40, rounds=rounds), {0: 1e-296, 1: 1e296, 2: 1e-296})]
    head = [_scaled(_doc(2, "b" * 40, rounds=rounds), {0: 1e304, 1: 1e-304, 2: 1e-296})]
    comparison = _compare(base, head)
    assert (_time(comparison, 0).verdict, _time(comparison, 0).ratio) == ("regression", None)
    assert (_time(comparison, 1).verdict, _time(comparison, 1).ratio) == ("improvement", 0.0)
    assert _time(comparison, 2).verdict in ("unchanged", "inconclusive")


def _by_round(doc: dict[str, Any], index: int, scales: list[float]) -> dict[str, Any]:
    time = doc["benchmarks"][index]["metrics"]["time"]
    per_round = len(time["samples"]) // len(scales)
    time["samples"] = [v * scales[j // per_round] for j, v in enumerate(time["samples"])]
    time["rounds"] = [per_round] * len(scales)
    return doc


@pytest.mark.parametrize("moved", [[0], [0, 1, 2, 3]])
def test_rounds_apart_by_more_than_a_float_compare(moved: list[int]) -> None:
    # Rounds 1e592 apart make a process spread whose exp() overflowed in the noise description.
    scales = [1e-296, 1e296, 1e-296]
    base, head = _doc(1, "a" * 40, rounds=[4, 4, 4]), _doc(2, "b" * 40, rounds=[4, 4, 4])
    for i in moved:
        _by_round(base, i, scales)
        _by_round(head, i, scales[::-1])
    result = _time(_compare([base], [head]), 0)
    assert result.verdict == "inconclusive"
    assert result.noise is not None and "±inf%" in result.noise
