"""kernel_launches from recorded profiler events: annotations, lost events, kernel names."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fake_cuda import RecordedProfile  # noqa: E402

from perfgate.harness.counters import count_device_ops, count_kernel_launches  # noqa: E402
from perfgate.harness.profile_events import HARNESS_MARK  # noqa: E402
from perfgate.harness.rounds import merge_rounds  # noqa: E402
from perfgate.results import Benchmark  # noqa: E402


def _annotated_two_kernels(calls: int, *, gemm: str = "sm90_gemm") -> RecordedProfile:
    """`with record_function("block"): a @ a; a.relu_()`, `calls` times, then the harness sync."""
    rec = RecordedProfile()
    for i in range(calls):
        t = 100.0 * i
        block = rec.op("block", t, t + 50, annotation=True)
        rec.kernel("block", t + 10, t + 90, linked=block, annotation=True)
        mm = rec.op("aten::mm", t + 1, t + 20)
        rec.runtime("cudaLaunchKernel", t + 2, t + 5, linked=mm)
        rec.kernel(gemm, t + 10, t + 60, linked=mm)
        relu = rec.op("aten::relu_", t + 21, t + 40)
        rec.runtime("cudaLaunchKernel", t + 22, t + 25, linked=relu)
        rec.kernel("vectorized_elementwise_kernel", t + 60, t + 90, linked=relu)
    end = 100.0 * calls
    mark = rec.op(HARNESS_MARK, end, end + 30, annotation=True)
    rec.runtime("cudaDeviceSynchronize", end + 1, end + 29, linked=mark)
    return rec


def _recorder(*profiles):
    sessions = []

    def record(fn, synchronize, calls):
        sessions.append(calls)
        return profiles[len(sessions) - 1].events()

    return record, sessions


def test_a_record_function_range_is_not_a_kernel():
    record, sessions = _recorder(_annotated_two_kernels(1), _annotated_two_kernels(3))
    counted = count_kernel_launches(lambda: None, lambda: None, record=record)
    assert counted.per_call == 2  # not 3: the range's device mirror is no kernel
    assert counted.consistent
    # One warm-up session first (CUPTI attaches late), then the counted calls.
    assert sessions == [1, 3]
    assert counted.names == {"sm90_gemm": 3, "vectorized_elementwise_kernel": 3}
    assert "1 x sm90_gemm" in counted.note()


def test_zero_kernels_with_host_launches_is_refused():
    lost = RecordedProfile()
    for i in range(3):
        mm = lost.op("aten::mm", 100.0 * i, 100.0 * i + 20)
        lost.runtime("cudaLaunchKernel", 100.0 * i + 2, 100.0 * i + 5, linked=mm)
    record, _ = _recorder(RecordedProfile(), lost)
    counted = count_kernel_launches(lambda: None, lambda: None, record=record)
    assert counted.per_call is None
    assert "3 kernel launch calls" in counted.reason


def test_zero_kernels_with_device_ops_is_refused_and_a_true_zero_is_kept():
    record, _ = _recorder(RecordedProfile(), RecordedProfile())
    refused = count_kernel_launches(
        lambda: None, lambda: None, record=record, device_ops=lambda f: 2
    )
    assert refused.per_call is None and "2 device ops" in refused.reason
    record, _ = _recorder(RecordedProfile(), RecordedProfile())
    zero = count_kernel_launches(lambda: None, lambda: None, record=record, device_ops=lambda f: 0)
    assert zero.per_call == 0 and zero.reason is None


def test_device_ops_counts_ops_on_that_device_but_not_views():
    x = torch.ones(4)
    assert count_device_ops(lambda: (x + 1).view(2, 2).relu(), device_type="cpu") == 2
    assert count_device_ops(lambda: x + 1, device_type="cuda") == 0


def test_rounds_that_chose_other_kernels_are_named():
    record, _ = _recorder(_annotated_two_kernels(1), _annotated_two_kernels(3))
    first = count_kernel_launches(lambda: None, lambda: None, record=record)
    record, _ = _recorder(_annotated_two_kernels(1), _annotated_two_kernels(3, gemm="sm80_gemm"))
    second = count_kernel_launches(lambda: None, lambda: None, record=record)
    assert first.per_call == second.per_call and first.digest() != second.digest()

    def entry(counted):
        metric = {
            "unit": "kernel",
            "direction": "lower",
            "value": counted.per_call,
            "exact": True,
            "note": counted.note(),
            "method": counted.digest(),
        }
        entry = {"key": "mm", "name": "mm", "metrics": {"kernel_launches": metric}}
        return {"mm": Benchmark.model_validate(entry)}

    merged, warnings = merge_rounds([entry(first), entry(second)], ["mm"])
    assert merged["mm"].metrics["kernel_launches"].method == first.digest()
    assert len(warnings) == 1
    assert "round 2" in warnings[0] and "sm80_gemm" in warnings[0] and "sm90_gemm" in warnings[0]
