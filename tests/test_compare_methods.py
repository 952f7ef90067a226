"""A metric measured one way in base and another in head is not compared: its result says so,
rather than reading a change of method as a regression."""

from __future__ import annotations

from typing import Any

from extra_metrics import KEY, compare, document_with, result_of


def _compile_time(method: str, seconds: list[float]) -> dict[str, Any]:
    return {"unit": "s", "direction": "lower", "samples": seconds, "method": method}


def _kernels(method: str, count: int) -> dict[str, Any]:
    return {"unit": "kernel", "direction": "lower", "value": count, "exact": True, "method": method}


def test_a_metric_measured_another_way_is_not_compared():
    # Wall seconds in base, CPU seconds in head: head reads 40% lower for the method alone.
    base = document_with(
        1, "a" * 40, {"compile_time": _compile_time("cold_private_cache", [20.0] * 5)}
    )
    head = document_with(2, "b" * 40, {"compile_time": _compile_time("cold_user_cpu", [12.0] * 5)})
    result = result_of(compare(base, head), "compile_time")
    assert result.verdict == "inconclusive"
    assert result.reason == (
        "not comparable: measured as cold_private_cache in base, cold_user_cpu in head"
    )
    assert result.ratio is None and result.p_value is None


def test_the_same_method_on_both_sides_is_compared():
    base = document_with(1, "a" * 40, {"compile_time": _compile_time("cold_user_cpu", [10.0] * 5)})
    head = document_with(2, "b" * 40, {"compile_time": _compile_time("cold_user_cpu", [14.0] * 5)})
    result = result_of(compare(base, head), "compile_time")
    assert not result.reason.startswith("not comparable")
    assert result.ratio is not None and result.ratio > 1.3


def test_kernel_digests_that_differ_are_still_compared():
    # kernel_launches' method names the kernels that ran: other kernels are the change itself.
    base = document_with(1, "a" * 40, {"kernel_launches": _kernels("kernels:aaaaaaaaaaaa", 3)})
    head = document_with(2, "b" * 40, {"kernel_launches": _kernels("kernels:bbbbbbbbbbbb", 4)})
    assert result_of(compare(base, head), "kernel_launches").verdict == "regression"


def test_a_time_measured_by_another_timer_takes_throughput_with_it():
    base = document_with(1, "a" * 40, {})
    head = document_with(2, "b" * 40, {})
    for doc, method in ((base, "cuda_events"), (head, "cuda_events_queued")):
        (bench,) = [b for b in doc["benchmarks"] if b["key"] == KEY]
        time = bench["metrics"]["time"]
        time["method"] = method
        bench["metrics"]["throughput"] = {
            "unit": "item/s",
            "direction": "higher",
            "samples": [1 / t for t in time["samples"]],
        }
    comparison = compare(base, head)
    assert result_of(comparison, "time").reason.startswith(
        "not comparable: measured as cuda_events"
    )
    throughput = result_of(comparison, "throughput")
    assert throughput.verdict == "inconclusive"
    assert "not comparable" in throughput.reason
