"""A memory regression names the ops that allocated it: from the `allocated_bytes` notes of both
sides through the comparison, its JSON and every report."""

from __future__ import annotations

import copy
import json
from html import escape as escape_html
from typing import Any

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from perfgate.allocation_note import (
    OUTSIDE_OPS,
    AllocationsByOp,
    allocations_of,
    format_allocation_note,
    parse_allocation_note,
)
from perfgate.errors import DocumentError
from perfgate.report.checks import regression_annotations
from perfgate.report.comparison_document import comparison_from_json, comparison_to_json
from perfgate.report.markdown import render_markdown
from perfgate.report.terminal import render_terminal
from perfgate.results import Op, parse_document
from perfgate.stats.attribution import attribute_allocations
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison, MetricResult, OpBytesDelta
from synthetic import synthetic_document

KEY = "layer_norm[hidden=768,tokens=512]"
# The demo's layer_norm on CPU: a 512x768 float32 input; layer_norm's output plus its mean and
# rstd (512 floats each); the planted copy allocates one more input.
INPUT = 512 * 768 * 4
NORM = INPUT + 2 * 512 * 4


# --- the note --------------------------------------------------------------------------------


def test_a_note_reads_back_as_the_bytes_it_was_written_from() -> None:
    by_op = {"aten::clone": INPUT, "aten::layer_norm": NORM, OUTSIDE_OPS: 16}
    note = format_allocation_note(by_op)
    assert note == (
        "allocated per call by op:\n"
        f"  {NORM} B aten::layer_norm\n"
        f"  {INPUT} B aten::clone\n"
        f"  16 B {OUTSIDE_OPS}"
    )
    assert parse_allocation_note(note) == AllocationsByOp(by_op=by_op, complete=True)


def test_a_note_that_lists_only_the_largest_ops_says_the_rest_is_unknown() -> None:
    by_op = {f"aten::op{i}": 1000 - i for i in range(10)}
    parsed = parse_allocation_note(format_allocation_note(by_op, shown=3))
    assert parsed == AllocationsByOp(
        by_op={"aten::op0": 1000, "aten::op1": 999, "aten::op2": 998}, complete=False
    )
    assert parsed.bytes_of("aten::op0") == 1000
    assert parsed.bytes_of("aten::op9") is None
    assert AllocationsByOp(by_op={"aten::mm": 8}).bytes_of("aten::clone") == 0


def test_an_op_name_with_a_line_break_stays_on_its_line() -> None:
    note = format_allocation_note({"my\nrange": 64})
    assert parse_allocation_note(note) == AllocationsByOp(by_op={"my range": 64})


@pytest.mark.parametrize(
    "note",
    [
        None,
        "",
        "informational: peak RSS growth",
        "allocated per call by op:",
        "allocated per call by op:\n  12 aten::mm",
        "allocated per call by op:\n  12 B aten::mm\n  13 B aten::mm",
        "allocated per call by op:\n  ... 2 more ops\n  12 B aten::mm",
        "allocated per call by op:\n  -12 B aten::mm",
    ],
)
def test_a_note_that_does_not_read_names_no_ops(note: str | None) -> None:
    assert parse_allocation_note(note) is None


def test_what_a_metric_says_about_its_ops() -> None:
    assert allocations_of(0, None) == AllocationsByOp(by_op={})
    # CUDA's counters and older documents: the bytes, but no ops.
    assert allocations_of(4096, None) is None
    assert allocations_of(64, "allocated per call by op:\n  64 B aten::mm") == AllocationsByOp(
        by_op={"aten::mm": 64}
    )


def test_ops_order_by_the_size_of_their_move_either_way_and_unknown_bytes_are_skipped() -> None:
    base = AllocationsByOp(by_op={"a": 100, "b": 50, "c": 10, "d": 7}, complete=False)
    head = AllocationsByOp(by_op={"a": 20, "b": 150, "c": 10, "e": 5})
    moved = attribute_allocations(base, head)
    # a -80, b +100; c did not move; d is unknown in head (b is listed, d is not: 0 there);
    # e is unknown in base (its list stops at 7 bytes): skipped rather than read as new.
    assert [(d.op, d.delta_bytes) for d in moved] == [("b", 100), ("a", -80), ("d", -7)]
    assert all(d.base_count is None and d.head_count is None for d in moved)


def test_calls_come_from_the_profiles_when_both_sides_have_one_and_either_lists_the_op() -> None:
    base = AllocationsByOp(by_op={"aten::mm": 64, OUTSIDE_OPS: 4})
    head = AllocationsByOp(by_op={"aten::mm": 128, "aten::clone": 64, "my_range": 8})
    ops = [Op(op="aten::mm", count=1), Op(op="aten::clone", count=2)]
    moved = attribute_allocations(base, head, base_ops=ops[:1], head_ops=ops)
    assert [(d.op, d.base_count, d.head_count) for d in moved] == [
        ("aten::clone", 0.0, 2.0),
        ("aten::mm", 1.0, 1.0),
        ("my_range", None, None),
        (OUTSIDE_OPS, None, None),
    ]


# --- the comparison --------------------------------------------------------------------------


def _note(by_op: dict[str, int]) -> str | None:
    return format_allocation_note(by_op)


def layer_norm_document(*, planted: bool, seed: int, with_notes: bool = True) -> dict[str, Any]:
    """One run of the demo's layer_norm: the base without the copy, the head with it."""
    document = synthetic_document(benchmarks=1, samples=30, seed=seed, commit=f"{seed:040x}")
    bench = document["benchmarks"][0]
    bench.update(name="layer_norm", params={"hidden": 768, "tokens": 512}, key=KEY)
    by_op = {"aten::layer_norm": NORM, **({"aten::clone": INPUT} if planted else {})}
    allocated = sum(by_op.values())
    bench["metrics"]["allocated_bytes"] = {
        "unit": "B",
        "direction": "lower",
        "value": allocated,
        "exact": True,
        "method": "cpu_profiler",
        **({"note": _note(by_op)} if with_notes else {}),
    }
    bench["metrics"]["peak_allocated_bytes"] = {
        "unit": "B",
        "direction": "lower",
        "value": allocated,
        "exact": True,
        "method": "cpu_profiler",
    }
    ops = [
        {"op": "aten::native_layer_norm", "count": 1, "self_cpu_us": 300.0 + seed},
        {"op": "aten::layer_norm", "count": 1, "self_cpu_us": 2.0},
    ]
    if planted:
        ops.append({"op": "aten::clone", "count": 1, "self_cpu_us": 40.0})
        ops.append({"op": "aten::copy_", "count": 1, "self_cpu_us": 38.0})
    bench["profile"] = {"ops": ops, "trace": None}
    return document


def _compare(**head: Any) -> Comparison:
    base = parse_document(layer_norm_document(planted=False, seed=1))
    planted = parse_document(layer_norm_document(planted=True, seed=2, **head))
    return compare_documents([base], [planted])


def _result(comparison: Comparison, metric: str) -> MetricResult:
    (found,) = [r for r in comparison.results if r.metric == metric]
    return found


CLONE = OpBytesDelta(
    op="aten::clone",
    base_bytes=0,
    head_bytes=INPUT,
    delta_bytes=INPUT,
    base_count=0.0,
    head_count=1.0,
)


@pytest.fixture(scope="module")
def planted() -> Comparison:
    return _compare()


@pytest.mark.parametrize("metric", ["allocated_bytes", "peak_allocated_bytes"])
def test_the_planted_copy_is_a_memory_regression_that_names_the_clone(
    planted: Comparison, metric: str
) -> None:
    result = _result(planted, metric)
    assert result.verdict == "regression"
    assert result.head is not None and result.base is not None
    assert result.head.median - result.base.median == INPUT
    assert result.allocation_attribution == [CLONE]
    # The noisy time table of native_layer_norm is not what explains bytes.
    assert result.attribution == []


def test_the_per_op_moves_add_up_to_the_metric_when_both_notes_are_complete(
    planted: Comparison,
) -> None:
    result = _result(planted, "allocated_bytes")
    assert result.head is not None and result.base is not None
    moved = sum(d.delta_bytes for d in result.allocation_attribution)
    assert moved == result.head.median - result.base.median


def test_a_memory_improvement_names_the_ops_too() -> None:
    base = parse_document(layer_norm_document(planted=True, seed=1))
    head = parse_document(layer_norm_document(planted=False, seed=2))
    result = _result(compare_documents([base], [head]), "allocated_bytes")
    assert result.verdict == "improvement"
    assert [
        (d.op, d.delta_bytes, d.base_count, d.head_count) for d in result.allocation_attribution
    ] == [("aten::clone", -INPUT, 1.0, 0.0)]


def test_documents_without_per_op_bytes_still_compare_without_allocating_ops() -> None:
    comparison = _compare(with_notes=False)
    result = _result(comparison, "allocated_bytes")
    assert result.verdict == "regression"
    assert result.allocation_attribution == []
    # As before per-op bytes existed: the profiles' time table is what there is to show.
    assert [d.op for d in result.attribution] == [
        "aten::clone",
        "aten::copy_",
        "aten::native_layer_norm",
    ]
    data = comparison_to_json(comparison)
    assert all("allocation_attribution" not in r for r in data["results"])


def test_documents_from_before_the_allocation_metrics_compare_as_before() -> None:
    old = [layer_norm_document(planted=flag, seed=seed) for flag, seed in ((False, 1), (True, 2))]
    for document in old:
        for metric in ("allocated_bytes", "peak_allocated_bytes"):
            document["benchmarks"][0]["metrics"].pop(metric)
    comparison = compare_documents([parse_document(old[0])], [parse_document(old[1])])
    assert all(not r.allocation_attribution for r in comparison.results)
    assert {r.metric for r in comparison.results} == {"time", "flops", "peak_memory"}


def test_without_profiles_the_ops_are_named_without_calls() -> None:
    base = layer_norm_document(planted=False, seed=1)
    base["benchmarks"][0]["profile"] = None
    comparison = compare_documents(
        [parse_document(base)], [parse_document(layer_norm_document(planted=True, seed=2))]
    )
    (clone,) = _result(comparison, "allocated_bytes").allocation_attribution
    assert (clone.op, clone.delta_bytes, clone.base_count, clone.head_count) == (
        "aten::clone",
        INPUT,
        None,
        None,
    )


# --- the reports -----------------------------------------------------------------------------


def test_the_pr_comment_names_the_clone_next_to_the_memory_verdict(planted: Comparison) -> None:
    text = render_markdown(planted)
    lines = text.splitlines()
    (bullet,) = [line for line in lines if line.startswith("- allocated_bytes:")]
    assert bullet == (
        f"- allocated_bytes: changed from {NORM:,} to {NORM + INPUT:,}; "
        "allocated by `aten::clone` +1.5 MiB (0 → 1 calls)"
    )
    table = lines.index("Ops whose allocations moved (bytes allocated per call):")
    assert lines[table + 2 : table + 5] == [
        "| op | base B/call | head B/call | Δ | calls |",
        "|---|---:|---:|---:|---:|",
        f"| `aten::clone` | 0 | {INPUT:,} | +1.5 MiB | 0 → 1 |",
    ]
    # One table for both memory metrics.
    assert text.count("Ops whose allocations moved") == 1


def test_the_terminal_names_the_clone_in_the_memory_rows(planted: Comparison) -> None:
    console = Console(record=True, width=400, color_system=None)
    render_terminal(planted, console)
    lines = console.export_text().splitlines()
    for metric in ("allocated_bytes", "peak_allocated_bytes"):
        (row,) = [line for line in lines if line.startswith(f"{KEY} │ {metric} ")]
        assert "regression" in row
        assert "allocated by aten::clone +1.5 MiB (0 → 1 calls)" in row
    behind = lines.index(
        f"ops behind {KEY} allocated_bytes, peak_allocated_bytes (bytes allocated per call)"
    )
    assert lines[behind + 1].split() == [
        "aten::clone",
        "0",
        "→",
        f"{INPUT:,}",
        "B",
        "(+1.5",
        "MiB),",
        "0",
        "→",
        "1",
        "calls",
    ]


def test_the_actions_annotation_names_the_clone(planted: Comparison) -> None:
    notes = {n.title: n.message for n in regression_annotations(planted)}
    message = notes[f"perfgate: {KEY} allocated_bytes regressed"]
    assert message.endswith(
        f"changed from {NORM:,} to {NORM + INPUT:,}; allocated by aten::clone +1.5 MiB "
        "(0 → 1 calls)"
    )


# --- comparison@1 ----------------------------------------------------------------------------


def test_the_allocating_ops_survive_the_comparison_document(planted: Comparison) -> None:
    written = json.loads(json.dumps(comparison_to_json(planted)))
    memory = next(r for r in written["results"] if r["metric"] == "allocated_bytes")
    assert memory["allocation_attribution"] == [
        {
            "op": "aten::clone",
            "base_bytes": 0,
            "head_bytes": INPUT,
            "delta_bytes": INPUT,
            "base_count": 0.0,
            "head_count": 1.0,
        }
    ]
    read = comparison_from_json(written)
    assert _result(read, "allocated_bytes").allocation_attribution == [CLONE]
    assert comparison_to_json(read) == written
    assert render_markdown(read) == render_markdown(planted)


def test_a_comparison_document_without_allocating_ops_still_reads(planted: Comparison) -> None:
    old = copy.deepcopy(comparison_to_json(planted))
    for result in old["results"]:
        result.pop("allocation_attribution", None)
    read = comparison_from_json(old)
    assert all(not r.allocation_attribution for r in read.results)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("delta_bytes", 1.5, "must be a whole number"),
        ("base_bytes", -1, "whole number >= 0"),
        ("op", None, "valid string"),
    ],
)
def test_a_bad_allocating_op_is_named(
    planted: Comparison, field: str, value: object, says: str
) -> None:
    data = comparison_to_json(planted)
    index = next(i for i, r in enumerate(data["results"]) if "allocation_attribution" in r)
    data["results"][index]["allocation_attribution"][0][field] = value
    with pytest.raises(DocumentError) as caught:
        comparison_from_json(data, source="c.json")
    message = str(caught.value)
    assert message.startswith(f"c.json: results[{index}].allocation_attribution[0].{field}:")
    assert says in message


def test_a_hostile_allocating_op_renders_inert() -> None:
    hostile = "aten::``x`` </details><img src=x onerror=alert(1)> @octocat |"
    base = layer_norm_document(planted=False, seed=1)
    head = layer_norm_document(planted=True, seed=2)
    head["benchmarks"][0]["metrics"]["allocated_bytes"]["note"] = _note(
        {"aten::layer_norm": NORM, hostile: INPUT}
    )
    comparison = compare_documents([parse_document(base)], [parse_document(head)])
    assert _result(comparison, "allocated_bytes").allocation_attribution[0].op == hostile
    html = (
        MarkdownIt("commonmark", {"html": True}).enable("table").render(render_markdown(comparison))
    )
    assert "<img" not in html
    assert html.count("</details>") == 1  # the folded other results' own
    # Two bullets and the table (outside a table the escaped `|` shows as `\\|`: still inert).
    assert html.count(f"<code>{escape_html(hostile.removesuffix('|'))}") == 3
    assert "(0 calls)" not in html  # no profile lists the op: its calls are unknown
    console = Console(record=True, width=400, color_system=None)
    render_terminal(comparison, console)
    assert f"allocated by {hostile} +1.5 MiB" in console.export_text()
