"""The PR comment against golden files: a realistic comparison, a quiet one, a huge suite."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ghhelpers import BASE_SHA, HEAD_SHA

from perfgate.report.checks import (
    check_conclusion,
    regression_annotations,
    status_description,
)
from perfgate.report.comparison_document import comparison_from_json, comparison_to_json
from perfgate.report.markdown import Links, render_markdown
from perfgate.report.trend import mermaid_chart, sparkline
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison
from perfgate.stats.noise import PastRun
from synthetic import synthetic_document

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
LINKS = Links(
    run_url="https://github.com/acme/models/actions/runs/123456",
    dashboard_url="https://perf.example/compare?project=acme%2Fmodels&base=aaaa&head=bbbb",
)
SLOW = "kernel[n=128,variant=0]"
SLOWER = "kernel[n=320,variant=1]"
FASTER = "kernel[n=256,variant=0]"
MORE_FLOPS = "kernel[n=64,variant=1]"


def _medians(document: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {
        (b["key"], "time"): float(np.median(b["metrics"]["time"]["samples"]))
        for b in document["benchmarks"]
    }


START = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _history(benchmarks: int = 16) -> list[PastRun]:
    """Eight earlier main runs, oldest first (what the store's history gives)."""
    return [
        PastRun(
            commit=f"{i + 1:040x}",
            medians=_medians(
                synthetic_document(
                    benchmarks=benchmarks,
                    samples=30,
                    seed=10 + i,
                    started_at=START + timedelta(days=i),
                )
            ),
        )
        for i in range(8)
    ]


def realistic() -> Comparison:
    """Eight earlier main runs, a merge-base, and a head that moved in every way that matters."""
    start = START
    history = _history()
    base = synthetic_document(
        benchmarks=16, samples=30, seed=1, commit=BASE_SHA, started_at=start + timedelta(days=9)
    )
    head = synthetic_document(
        benchmarks=16,
        samples=30,
        seed=2,
        commit=HEAD_SHA,
        branch="feature",
        started_at=start + timedelta(days=10),
        slowdown={SLOW: 1.6, SLOWER: 1.25, FASTER: 0.7},
    )
    head["environment"] = {**head["environment"], "fingerprint": "other", "torch": "2.14.0"}
    for bench in head["benchmarks"]:
        if bench["key"] == SLOW:
            for op in bench["profile"]["ops"]:
                if op["op"] == "aten::copy_":  # the needless copy behind the slowdown
                    op.update(count=op["count"] + 2, self_cpu_us=op["self_cpu_us"] + 110.0)
            bench["profile"]["ops"].append(
                {
                    "op": "aten::contiguous",
                    "count": 2,
                    "self_cpu_us": 9.5,
                    "self_device_us": 0.0,
                    "flops": 0.0,
                }
            )
        if bench["key"] == MORE_FLOPS:
            bench["metrics"]["flops"]["value"] *= 2
    return compare_documents(
        [parse_document(base)],
        [parse_document(head)],
        history=history,
        base_label="merge-base",
        warnings=[
            "noise model: 8 earlier runs of main set each benchmark's threshold to at least its "
            "run-to-run spread"
        ],
    )


def _golden(name: str, rendered: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PERFGATE_UPDATE_GOLDEN"):
        path.write_text(rendered)
    assert rendered == path.read_text(), "regenerate with PERFGATE_UPDATE_GOLDEN=1 if intended"


@pytest.fixture(scope="module")
def rich() -> Comparison:
    return realistic()


def test_realistic_comment(rich: Comparison) -> None:
    summary = rich.summary()
    assert summary["regression"] >= 3 and summary["improvement"] >= 1
    rendered = render_markdown(rich, links=LINKS)
    first = rendered.splitlines()[0]
    # Benchmarks counted (16 of them, 48 results), the worst change named.
    assert first.startswith(
        f"### ⚠️ 3 regressions (worst `{MORE_FLOPS}` flops +100.0%), 1 improvement, 12 unchanged"
    )
    assert first.endswith("· base `aaaaaaa` (merge-base) → head `bbbbbbb`")
    assert "16 benchmarks compared, 48 results (flops, peak_memory, time)." in rendered
    assert "```mermaid\nxychart-beta" in rendered and "→" in rendered
    assert "environment changed between base and head" in rendered
    assert "[CI run](https://github.com/acme/models/actions/runs/123456)" in rendered
    # Each changed row links its trend page on the dashboard, drawn as its sparkline.
    trend = "https://perf.example/p/acme/models/trend?key=kernel%5Bn%3D128%2Cvariant%3D0%5D"
    assert f"[▁▁▁▁▁▁▁▁▁→█]({trend}&metric=time&branch=main)" in rendered
    # The unchanged results are counted, not listed.
    assert "| ⚪ unchanged" not in rendered
    _golden("comment_realistic.md", rendered)


def test_realistic_comment_survives_the_json_round_trip(rich: Comparison) -> None:
    again = comparison_from_json(json.loads(json.dumps(comparison_to_json(rich))))
    assert again == rich
    assert any(r.history for r in again.results)
    assert render_markdown(again, links=LINKS) == render_markdown(rich, links=LINKS)


def test_quiet_comment() -> None:
    base = synthetic_document(benchmarks=6, samples=30, seed=1, commit=BASE_SHA)
    head = synthetic_document(benchmarks=6, samples=30, seed=2, commit=HEAD_SHA, branch="feature")
    quiet = compare_documents(
        [parse_document(base)], [parse_document(head)], history=_history(6), base_label="merge-base"
    )
    rendered = render_markdown(
        quiet, links=Links(run_url="https://github.com/acme/models/actions/runs/1")
    )
    assert rendered.startswith("### ✅ 6 unchanged · ")
    assert (
        "6 benchmarks compared, 18 results (flops, peak_memory, time): no benchmark got "
        "measurably slower or faster." in rendered
    )
    assert "|" not in rendered  # no table at all
    assert status_description(quiet) == "6 unchanged"
    assert check_conclusion(quiet) == "success"
    _golden("comment_no_change.md", rendered)


def test_huge_suite_with_five_regressions() -> None:
    """500 benchmarks, 5 of them 3x slower: the regressions first, the rest summarised."""
    base = synthetic_document(benchmarks=500, samples=20, seed=1, commit=BASE_SHA)
    slow = [b["key"] for b in base["benchmarks"]][::100]
    head = synthetic_document(
        benchmarks=500, samples=20, seed=2, commit=HEAD_SHA, slowdown=dict.fromkeys(slow, 3.0)
    )
    huge = compare_documents([parse_document(base)], [parse_document(head)])
    assert huge.summary()["regression"] == 5
    rendered = render_markdown(huge, links=LINKS)
    assert len(rendered.encode()) < 20_000
    lines = rendered.splitlines()
    assert lines[0].startswith("### ⚠️ 5 regressions (worst `")
    rows = [line for line in lines if line.startswith("| `")]
    # The changes table comes first and holds exactly the five regressions.
    assert {row.split(" | ")[0][3:-1] for row in rows[:5]} == set(slow)
    assert all(row.endswith("| 🔴 regression |") for row in rows[:5])
    # The other results: a few, with why; the unchanged ones only counted.
    assert "Other results: 151 inconclusive (20 shown); 1,344 unchanged" in rendered
    assert len(rows) == 5 + 20
    assert "| ⚪ unchanged" not in rendered
    _golden("comment_huge.md", rendered)


def test_many_regressions_fold_in_order() -> None:
    base = synthetic_document(benchmarks=300, samples=20, seed=1, commit=BASE_SHA)
    # 40% slower by 2x: individual regressions, not a suite-wide shift.
    slow = {b["key"]: 2.0 for i, b in enumerate(base["benchmarks"]) if i % 5 < 2}
    head = synthetic_document(benchmarks=300, samples=20, seed=2, commit=HEAD_SHA, slowdown=slow)
    for bench in head["benchmarks"]:
        bench["profile"]["ops"].append(
            {
                "op": "aten::clone",
                "count": 1,
                "self_cpu_us": 50.0,
                "self_device_us": 0.0,
                "flops": 0.0,
            }
        )
    many = compare_documents([parse_document(base)], [parse_document(head)])
    rendered = render_markdown(many, limit=5_000)
    assert len(rendered) <= 5_000
    assert "more changes left out here" in rendered
    assert "more regressed benchmarks left out to save space" in rendered
    assert re.search(r"Other results: 180 inconclusive \(\d+ shown\)", rendered)
    notes = regression_annotations(many)
    regressions = many.summary()["regression"]
    assert regressions > 9
    assert len(notes) == 8
    assert notes[-1].message.startswith(f"{regressions - 7} more regressions")
    assert len(status_description(many)) <= 140


def test_sparkline_and_chart_shapes() -> None:
    assert sparkline([1.0, 1.0, 1.0, 2.0]) == "▁▁▁→█"
    assert sparkline([1.0, 2.0, 3.0, 4.0]) == "▁▃▆→█"
    assert sparkline([5.0, 5.0, 5.0]) == "▄▄→▄"
    rich_result = next(r for r in realistic().results if r.key == SLOW and r.metric == "time")
    chart = mermaid_chart(rich_result)
    assert chart is not None
    lines = chart.splitlines()
    assert lines[:2] == ["```mermaid", "xychart-beta"]
    assert lines[3] == '    x-axis ["-8", "-7", "-6", "-5", "-4", "-3", "-2", "-1", "base", "head"]'
    assert lines[4].startswith('    y-axis "µs" ')
    assert lines[5].startswith("    line [") and lines[5].count(",") == 9
