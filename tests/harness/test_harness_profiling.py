"""The profile pass: real rows on CPU, aggregation rules, the device-time name fallback, traces."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from fake_cuda import RecordedProfile  # noqa: E402

from perfgate.harness.profile_events import HARNESS_MARK  # noqa: E402
from perfgate.harness.profiling import (  # noqa: E402
    active_calls,
    aggregate,
    profile_callable,
    self_device_time_us,
    trace_file_name,
)


def test_profile_of_a_matmul_has_aten_mm_per_call(tmp_path):
    a = torch.randn(64, 64)
    trace = tmp_path / "t" / "mm.json"
    result = profile_callable(
        lambda: a @ a, on_device=False, synchronize=lambda: None, active=3, trace_path=trace
    )
    rows = {row["op"]: row for row in result.ops}
    assert "aten::mm" in rows
    assert rows["aten::mm"]["count"] == 1  # 3 calls profiled, divided back to one
    assert rows["aten::mm"]["flops"] == 2 * 64**3
    assert rows["aten::mm"]["self_cpu_us"] > 0
    assert not any(op.startswith("ProfilerStep") for op in rows)
    assert result.trace == str(trace)
    assert "traceEvents" in json.loads(trace.read_text())


def test_device_time_reads_the_new_name():
    assert self_device_time_us(SimpleNamespace(self_device_time_total=12.5)) == 12.5


def test_device_time_falls_back_to_the_pre_2_4_name():
    old_style = SimpleNamespace(self_cuda_time_total=7.0)
    assert self_device_time_us(old_style) == 7.0
    assert self_device_time_us(SimpleNamespace()) == 0.0


def _ops(times, *, calls=2, device=None):
    """`calls` profiled calls of host ops `name -> self cpu µs` (and linked kernels' µs)."""
    rec = RecordedProfile()
    t = 0.0
    for _ in range(calls):
        for name, cpu in times.items():
            op = rec.op(name, t, t + cpu)
            if device and name in device:
                rec.kernel(f"{name}_kernel", t, t + device[name], linked=op)
            t += cpu + 1
    return rec.events()


def test_aggregate_keeps_top_20_and_every_op_over_one_percent():
    events = _ops({f"op{i:02d}": 1000.0 - i for i in range(25)})
    out = aggregate(events, calls=2, on_device=False)
    # 25 ops of ~4% each: all above 1%, so all kept even past the top 20.
    assert len(out) == 25
    assert out[0] == {
        "op": "op00",
        "count": 1.0,
        "self_cpu_us": 1000.0,
        "self_device_us": 0.0,
        "flops": 0.0,
    }
    tiny = _ops({"big": 1e6, **{f"t{i:02d}": 1.0 for i in range(30)}}, calls=1)
    kept = aggregate(tiny, calls=1, on_device=False)
    assert len(kept) == 20
    assert kept[0]["op"] == "big"


def test_aggregate_sorts_by_device_time_on_gpu_without_counting_kernels_twice():
    events = _ops(
        {"cpu_heavy": 100.0, "gpu_heavy": 1.0}, calls=1, device={"cpu_heavy": 1, "gpu_heavy": 90}
    )
    out = aggregate(events, calls=1, on_device=True)
    assert [r["op"] for r in out] == ["gpu_heavy", "cpu_heavy"]
    assert out[0]["self_device_us"] == 90  # the linked kernel is in its op's row, not its own


def test_a_kernel_no_op_launched_keeps_its_time_and_the_harness_sync_is_hidden():
    # A Triton kernel launched straight from Python (300 µs, linked to no op) next to an
    # aten::mm (100 µs); the code's own synchronize stays, the harness's goes.
    rec = RecordedProfile()
    mm = rec.op("aten::mm", 0, 10)
    rec.runtime("cudaLaunchKernel", 1, 4, linked=mm)
    rec.kernel("sm90_gemm", 5, 105, linked=mm)
    rec.runtime("cuLaunchKernel", 11, 14)
    rec.kernel("triton_poi_fused_add_0", 105, 405)
    rec.runtime("cudaDeviceSynchronize", 20, 410)
    step = rec.op("ProfilerStep#2", 0, 500)
    mark = rec.op(HARNESS_MARK, 420, 440, annotation=True)
    rec.runtime("cudaDeviceSynchronize", 421, 439, linked=mark)
    rows = {r["op"]: r for r in aggregate(rec.events(), calls=1, on_device=True)}
    assert step.name not in rows and HARNESS_MARK not in rows
    assert rows["triton_poi_fused_add_0"]["self_device_us"] == 300
    assert rows["aten::mm"]["self_device_us"] == 100
    assert "sm90_gemm" not in rows
    assert sum(r["self_device_us"] for r in rows.values()) == 400
    assert rows["cudaDeviceSynchronize"]["count"] == 1  # the code's own, not the harness's
    assert rows["cudaDeviceSynchronize"]["self_cpu_us"] == 390


def test_trace_file_names_are_safe_and_distinct():
    a = trace_file_name("matmul[dtype=float32,n=256]")
    b = trace_file_name("matmul[dtype=float32;n=256]")
    assert a != b
    assert a.startswith("matmul_dtype=float32_n=256-") and a.endswith(".json")
    assert "/" not in trace_file_name("../../etc/passwd")


def test_active_calls_shrink_for_slow_calls():
    assert active_calls(1e-6) == 5
    assert active_calls(0.1) == 2
    assert active_calls(10.0) == 1
